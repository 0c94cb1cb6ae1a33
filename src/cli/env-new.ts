/** `edgeroll env new`: scaffolds an environment and registers it, never overwriting a file. */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { type StarterKind, starterFiles } from "./env-templates";
import { pythonPaths, pythonStarterFiles } from "./env-templates-python";
import { CliError, PROJECT_ROOT, paths } from "./project";

const NAME = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;
const IMPORTS_MARKER = "// edgeroll:env-imports";
const ENTRIES_MARKER = "  // edgeroll:env-entries";

function className(name: string): string {
  return name
    .split("-")
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join("");
}

function markerLine(lines: readonly string[], marker: string): number {
  const at = lines.indexOf(marker);
  if (at === -1) throw new CliError(`${paths.registry} lost its "${marker.trim()}" marker line`);
  return at;
}

/**
 * The names the registry's table holds, read from its source rather than imported: writing a
 * starter needs no environment code, and works while another environment does not compile.
 */
export function registeredNames(registry: string): string[] {
  const lines = registry.split("\n");
  const table = lines.findIndex((l) => l.startsWith("const BUILT_IN"));
  const end = markerLine(lines, ENTRIES_MARKER);
  return lines
    .slice(table + 1, end)
    .flatMap((l) => /^\s+"?([a-z][a-z0-9-]*)"?: \(\) =>/.exec(l)?.[1] ?? []);
}

function isRegistered(name: string, root: string): boolean {
  return registeredNames(readFileSync(join(root, paths.registry), "utf8")).includes(name);
}

const importPath = (line: string) => /from "([^"]+)";$/.exec(line)?.[1] ?? "";

/**
 * The registry with the new environment's import and entry added, and nothing else moved:
 * the import goes where the formatter's sort (by module path) puts it, the entry last in the
 * table, just above the entries marker, so no comment ends up above another entry.
 */
export function registerEnvironment(registry: string, name: string, cls: string): string {
  const lines = registry.split("\n");
  const line = `import { ${cls} } from "./${name}";`;
  const importsEnd = markerLine(lines, IMPORTS_MARKER);
  const localImports = lines
    .slice(0, importsEnd)
    .flatMap((l, i) => (l.startsWith("import ") && importPath(l).startsWith("./") ? [i] : []));
  const before = localImports.find((i) => importPath(lines[i] as string) > `./${name}`);
  const after = localImports.at(-1);
  lines.splice(before ?? (after === undefined ? importsEnd : after + 1), 0, line);
  // The formatter unquotes keys that are identifiers; write what it would.
  const key = /^[a-z][a-z0-9]*$/.test(name) ? name : `"${name}"`;
  lines.splice(markerLine(lines, ENTRIES_MARKER), 0, `  ${key}: () => new ${cls}(),`);
  return lines.join("\n");
}

export function envNew(name: string, kind: StarterKind, root = PROJECT_ROOT): void {
  if (!NAME.test(name)) {
    throw new CliError(`"${name}" is not a valid environment name: use kebab-case, e.g. my-env`);
  }
  if (isRegistered(name, root))
    throw new CliError(`an environment named "${name}" is already registered`);
  const names = { name, className: className(name) };
  const contents = starterFiles(kind, names);
  const targets = {
    environment: paths.environment(name),
    dataset: paths.dataset(name),
    test: paths.test(name),
  };
  const existing = Object.values(targets).filter((file) => existsSync(join(root, file)));
  if (existing.length > 0) throw new CliError(`refusing to overwrite ${existing.join(", ")}`);

  const registryPath = join(root, paths.registry);
  const registry = registerEnvironment(readFileSync(registryPath, "utf8"), name, names.className);
  for (const [key, file] of Object.entries(targets)) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    // "wx": fail rather than overwrite, even if the file appeared since the check above.
    writeFileSync(join(root, file), contents[key as keyof typeof contents], { flag: "wx" });
  }
  writeFileSync(registryPath, registry);

  console.log(`Created the ${kind} environment "${name}":`);
  for (const file of Object.values(targets)) console.log(`  ${file}`);
  console.log(`  ${paths.registry} (registered as "${name}")`);
  console.log(`Next: npx edgeroll env check ${name}`);
}

/**
 * `env new <name> --python`: a Python environment served over HTTP (docs/remote-env-protocol.md)
 * rather than compiled into the Worker, so nothing is registered: REMOTE_ENVS names it.
 */
export function envNewPython(name: string, root = PROJECT_ROOT): void {
  if (!NAME.test(name)) {
    throw new CliError(`"${name}" is not a valid environment name: use kebab-case, e.g. my-env`);
  }
  if (isRegistered(name, root)) throw new CliError(`"${name}" is a built-in environment's name`);
  const module = name.replaceAll("-", "_");
  const contents = pythonStarterFiles({ name, module, className: className(name) });
  const targets = {
    environment: pythonPaths.environment(module),
    dataset: paths.dataset(name),
    test: pythonPaths.test(module),
  };
  const existing = Object.values(targets).filter((file) => existsSync(join(root, file)));
  if (existing.length > 0) throw new CliError(`refusing to overwrite ${existing.join(", ")}`);
  for (const [key, file] of Object.entries(targets)) {
    mkdirSync(dirname(join(root, file)), { recursive: true });
    writeFileSync(join(root, file), contents[key as keyof typeof contents], { flag: "wx" });
  }
  console.log(`Created the Python environment "${name}":`);
  for (const file of Object.values(targets)) console.log(`  ${file}`);
  console.log(
    `Serve it:  PYTHONPATH=python python3 -m edgeroll_env serve ${targets.environment} --port 9100`,
  );
  console.log(`Check it:  npx edgeroll env check ${name} --url http://127.0.0.1:9100`);
  console.log(
    `Register:  REMOTE_ENVS = { "${name}" = "http://127.0.0.1:9100" }   (wrangler.toml [vars])`,
  );
  console.log(`Test it:   python3 -m unittest ${targets.test}`);
}
