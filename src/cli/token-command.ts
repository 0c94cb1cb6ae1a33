/** `edgeroll token`: prints one of a local stack's bearer tokens, for curl and scripts. */
import {
  LOCAL_TOKEN_NAMES,
  type LocalTokenName,
  readLocalTokens,
  tokensFile,
} from "./local-tokens";
import { CliError, resolveStateDir } from "./project";

export function printToken(flags: { role: string; persistTo: string }): void {
  if (!LOCAL_TOKEN_NAMES.includes(flags.role as LocalTokenName)) {
    throw new CliError(
      `--role must be one of ${LOCAL_TOKEN_NAMES.join(", ")}, got "${flags.role}"`,
    );
  }
  const persistTo = resolveStateDir(flags.persistTo);
  const tokens = readLocalTokens(persistTo);
  if (tokens === null) {
    throw new CliError(
      `no local tokens at ${tokensFile(persistTo)}: \`npm run dev\` or \`npm run demo\` makes them`,
    );
  }
  console.log(tokens[flags.role as LocalTokenName]);
}
