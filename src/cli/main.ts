/** `edgeroll` command line: parses the command (program.ts) and prints a failure as one line. */
import { describeError } from "./cli-errors";
import { buildProgram } from "./program";

const program = buildProgram();
try {
  await program.parseAsync();
} catch (error) {
  for (const line of describeError(error, program.opts().verbose === true)) console.error(line);
  // Other requests of a failed job may still be in flight: the command is over.
  process.exit(1);
}
