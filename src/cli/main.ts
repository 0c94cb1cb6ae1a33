/** `edgeroll` command line: one subcommand per job, each in its own module. */
import { Command } from "commander";
import { envCheck } from "./env-check";
import { envNew } from "./env-new";
import { CliError } from "./project";

const program = new Command("edgeroll").description(
  "Multi-turn RL rollouts for LLMs on Cloudflare Workers",
);

const env = program.command("env").description("author and validate environments");

env
  .command("new")
  .description("write a runnable starter environment, its dataset and a test, and register it")
  .argument("<name>", "kebab-case environment name, e.g. my-env")
  .option("--multi-turn", "a multi-turn starter (the guess-number shape; the default)")
  .option("--single-turn", "a single-turn starter (prompt in, one scored reply)")
  .action((name: string, options: { multiTurn?: boolean; singleTurn?: boolean }) => {
    if (options.multiTurn && options.singleTurn) {
      throw new CliError("choose one of --multi-turn and --single-turn");
    }
    envNew(name, options.singleTurn ? "single-turn" : "multi-turn");
  });

env
  .command("check")
  .description("validate an environment offline, with no model")
  .argument("<name>", "a registered environment name")
  .option("--dataset <file>", "dataset JSONL (default: datasets/<name>.jsonl)")
  .option("--prompt-text <text>", "the run's prompt text", "")
  .action(async (name: string, options: { dataset?: string; promptText: string }) => {
    process.exitCode = (await envCheck(name, options)) ? 0 : 1;
  });

try {
  await program.parseAsync();
} catch (error) {
  if (!(error instanceof CliError)) throw error;
  console.error(`edgeroll: ${error.message}`);
  process.exitCode = 1;
}
