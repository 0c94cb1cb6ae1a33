/** `edgeroll env new`: scaffolds an environment and registers it, never overwriting a file. */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { isRegisteredEnvironment } from "../environments/registry";
import { type StarterKind, starterFiles } from "./env-templates";
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

/**
 * Inserts `line` into the run of lines that ends at `marker`, keeping the run sorted (the
 * formatter sorts imports, and a sorted table reads better).
 */
function insertSorted(
  lines: string[],
  marker: string,
  isMember: (l: string) => boolean,
  line: string,
) {
  const markerAt = lines.indexOf(marker);
  if (markerAt === -1)
    throw new CliError(`${paths.registry} lost its "${marker.trim()}" marker line`);
  // The formatter may leave blank lines between the run and its marker.
  let end = markerAt;
  while (end > 0 && (lines[end - 1] as string).trim() === "") end--;
  let start = end;
  while (start > 0 && isMember(lines[start - 1] as string)) start--;
  const run = [...lines.slice(start, end), line].sort();
  lines.splice(start, end - start, ...run);
}

/** The registry with the new environment's import and entry added. */
export function registerEnvironment(registry: string, name: string, cls: string): string {
  const lines = registry.split("\n");
  insertSorted(
    lines,
    IMPORTS_MARKER,
    (l) => l.startsWith("import { ") && l.includes('from "./'),
    `import { ${cls} } from "./${name}";`,
  );
  // The formatter unquotes keys that are identifiers; write what it would.
  const key = /^[a-z][a-z0-9]*$/.test(name) ? name : `"${name}"`;
  insertSorted(
    lines,
    ENTRIES_MARKER,
    (l) => /^ {2}"?[a-z0-9-]+"?: \(\) => new \w+\(\),$/.test(l),
    `  ${key}: () => new ${cls}(),`,
  );
  return lines.join("\n");
}

export function envNew(name: string, kind: StarterKind, root = PROJECT_ROOT): void {
  if (!NAME.test(name)) {
    throw new CliError(`"${name}" is not a valid environment name: use kebab-case, e.g. my-env`);
  }
  if (isRegisteredEnvironment(name))
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
