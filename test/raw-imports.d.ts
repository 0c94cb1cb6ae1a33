// Vite's `?raw` suffix imports a file's text; tests use it to read datasets in any runtime.
declare module "*?raw" {
  const text: string;
  export default text;
}
