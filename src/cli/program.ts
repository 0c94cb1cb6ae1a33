/**
 * The `edgeroll` command table: every subcommand, its flags, and the module that runs it. Each
 * module is imported only when its command runs, so a command never loads code it does not
 * need: `edgeroll token` works while an environment file does not compile.
 */
import { Command } from "commander";
import { DEFAULT_URL } from "./api-client";
import { CliError } from "./project";

/** Repeatable flags (`--stop a --stop b`) collect into a list. */
const collect = (value: string, previous: string[] = []) => [...previous, value];

export function buildProgram(): Command {
  const program = new Command("edgeroll")
    .description("Multi-turn RL rollouts for LLMs on Cloudflare Workers")
    .option("--verbose", "print the stack trace of an error");

  const env = program.command("env").description("author and validate environments");

  env
    .command("new")
    .description("write a runnable starter environment, its dataset and a test, and register it")
    .argument("<name>", "kebab-case environment name, e.g. my-env")
    .option("--multi-turn", "a multi-turn starter (the guess-number shape; the default)")
    .option("--single-turn", "a single-turn starter (prompt in, one scored reply)")
    .option("--python", "a Python starter served over HTTP (the guess-number shape)")
    .action(
      async (
        name: string,
        options: { multiTurn?: boolean; singleTurn?: boolean; python?: boolean },
      ) => {
        if (options.multiTurn && options.singleTurn) {
          throw new CliError("choose one of --multi-turn and --single-turn");
        }
        const { envNew, envNewPython } = await import("./env-new");
        if (options.python) {
          if (options.singleTurn) throw new CliError("--python writes a multi-turn starter");
          return envNewPython(name);
        }
        envNew(name, options.singleTurn ? "single-turn" : "multi-turn");
      },
    );

  env
    .command("check")
    .description("validate an environment offline, with no model")
    .argument(
      "[name]",
      "an environment: built in, registered here, or one the Worker at EDGEROLL_URL serves remotely",
    )
    .option("--url <url>", "a remote environment server (docs/remote-env-protocol.md)")
    .option("--dataset <file>", "dataset JSONL (default: datasets/<name>.jsonl)")
    .option("--prompt-text <text>", "the run's prompt text", "")
    .option(
      "--judge-url <url>",
      "the judge a judged environment's scoring asks (OpenAI-compatible, e.g. `edgeroll sim`'s /v1; JUDGE_API_KEY sent)",
    )
    .option("--judge-model <model>", "the judge's model (the simulator's: judge)", "judge")
    .action(
      async (
        name: string | undefined,
        options: {
          dataset?: string;
          promptText: string;
          url?: string;
          judgeUrl?: string;
          judgeModel: string;
        },
      ) => {
        const { envCheck } = await import("./env-check");
        process.exitCode = (await envCheck(name, options)) ? 0 : 1;
      },
    );

  env
    .command("serve")
    .description(
      "serve a TypeScript environment over the remote protocol (docs/remote-env-protocol.md)",
    )
    .argument("<name>", "a registered environment name")
    .option("--port <n>", "port to listen on (0: any free port)", "9100")
    .option("--host <host>", "address to bind", "127.0.0.1")
    .option("--token <secret>", "require this bearer token (default: REMOTE_ENV_TOKEN)")
    .action(async (name: string, options: { port: string; host: string; token?: string }) => {
      const { serveCommand } = await import("./env-serve");
      await serveCommand(name, options);
    });

  program
    .command("sim")
    .description(
      "run the OpenAI-compatible inference simulator (scripted policies, latency, faults)",
    )
    .option("--port <n>", "port to listen on", "8000")
    .option("--host <host>", "address to bind", "127.0.0.1")
    .option("--ttft-ms <ms>", "time to first token", "0")
    .option("--ms-per-token <ms>", "time per generated token", "0")
    .option(
      "--tokens-per-s <r>",
      "generated tokens streamed per second (instead of --ms-per-token)",
    )
    .option(
      "--long <n>",
      "every completion n tokens long, unless its model says pad:N (with --tokens-per-s: long generations, as a reasoning model's, to measure a weight sync)",
    )
    .option("--ms-per-prompt-token <ms>", "extra time to first token per prompt token", "0")
    .option("--error-rate <p>", "share of requests answered with an error status", "0")
    .option("--error-statuses <list>", "statuses to answer errors with", "500,503,429")
    .option("--hang-rate <p>", "share of requests never answered", "0")
    .option("--malformed-rate <p>", "share of requests answered with an unparseable body", "0")
    .option("--cut-rate <p>", "share of streams cut half-way", "0")
    .option("--reset-rate <p>", "share of connections dropped", "0")
    .option(
      "--template <kind>",
      "chat template: chatml, or drop-reasoning (re-renders history without <think> blocks, as Qwen3's does)",
      "chatml",
    )
    .option("--no-token-ids", "answer no prompt_token_ids / token_ids, as vLLM before 0.10.2")
    .option("--hosts <n>", "serve a fleet of n hosts on consecutive ports from --port", "1")
    .option(
      "--kv-blocks <n>",
      "each host's KV cache in 16-token blocks: a prefix cache reporting cached_tokens (default: none)",
    )
    .option(
      "--shared-prefill",
      "one prefill queue per host (--ms-per-prompt-token of its time per uncached token, request after request), as a GPU's compute is shared",
    )
    .option("--slow <i:factor>", "make host i (from 0) this many times slower, e.g. 2:10")
    .option(
      "--kill <i@s[-t]>",
      "stop host i s seconds after start (connections refused), back at t if given, e.g. 3@30-60",
    )
    .action(async (flags) => (await import("./sim")).sim(flags));

  const withApi = (command: Command) =>
    command
      .option(
        "--url <url>",
        "the edgeroll Worker (env EDGEROLL_URL)",
        process.env.EDGEROLL_URL ?? DEFAULT_URL,
      )
      .option(
        "--token <token>",
        "bearer token (default: env EDGEROLL_TOKEN, else the token of the local stack serving --url)",
      );

  program
    .command("demo")
    .description("run the whole pipeline locally: simulator, wrangler dev, a job, a batch, SQL")
    .option("--port <n>", "port for the Worker", "8787")
    .option("--sim-port <n>", "port for the simulator", "8000")
    .option("--persist-to <dir>", "local state directory", ".wrangler/state")
    .option("--groups <n>", "guess-number groups (spread over four policy versions)", "16")
    .option("--keep", "keep serving the dashboard until Ctrl-C")
    .action(async (flags) => (await import("./demo")).demo(flags));

  program
    .command("dev")
    .description(
      "serve the API and dashboard on the local state, with the simulator (Ctrl-C stops)",
    )
    .option("--port <n>", "port for the Worker", "8787")
    .option("--sim-port <n>", "port for the simulator", "8000")
    .option(
      "--sim-hosts <n>",
      "the simulator as a fleet of n hosts on consecutive ports from --sim-port (more than 1: each with a prefix cache)",
      "1",
    )
    .option("--persist-to <dir>", "local state directory", ".wrangler/state")
    .option(
      "--inference-url <url>",
      "use this OpenAI-compatible host instead of the simulator (several, comma-separated: a fleet)",
    )
    .option("--teacher-url <url>", "the distillation teacher's host (default: the inference host)")
    .action(async (flags) => (await import("./dev")).dev(flags));

  withApi(program.command("run"))
    .description("start one rollout group per dataset example, with progress; rerunning resumes")
    .requiredOption("--env <name>", "an environment the Worker serves (GET /v1/environments)")
    .requiredOption("--dataset <file.jsonl>", "task examples, one per line")
    .requiredOption("--group-size <n>", "episodes per group")
    .option("--concurrency <n>", "groups in flight at once", "8")
    .option(
      "--run <id>",
      "run id (default: the dataset's name, prefixed with the env unless it holds it)",
    )
    .option("--prompt-text <text>", "the run's prompt text (the system message when none)")
    .option("--model <name>", "model name on the inference host", "sim")
    .option("--temperature <t>", "sampling temperature", "1")
    .option("--top-p <p>", "nucleus sampling: keep the tokens of this much probability", "1")
    .option("--stop <text>", "a stop string (repeat for more, up to 8)", collect)
    .option("--max-completion-tokens <n>", "per action")
    .option("--max-context-tokens <n>", "per episode")
    .option("--seed <n>", "reproducible sampling")
    .option("--policy-version <n>", "the policy generating the episodes (default: the run's)")
    .option(
      "--max-ahead <n>",
      "keep pace with the trainer: at most n groups of the run in flight or landed and not yet leased",
    )
    .option("--credit-assignment <kind>", "per_episode or per_turn", "per_episode")
    .option("--advantage <kind>", "group normalisation: mean or mean_std", "mean")
    .option("--tokens <mode>", "token-exact episodes: auto, required or off", "auto")
    .option("--generation <mode>", "chat (the host renders prompts) or tokens (token-in)", "chat")
    .option("--algorithm <name>", "grpo, or opd (on-policy distillation, with --teacher)", "grpo")
    .option("--teacher <model>", "the teacher model for --algorithm opd (on TEACHER_BASE_URL)")
    .option(
      "--overlong <policy>",
      "episodes whose last action hit --max-completion-tokens: keep, mask (advantage 0, sample mask 0) or filter (never leased)",
      "keep",
    )
    .option(
      "--kind <kind>",
      "train, or eval: measure --policy-version, never leased (see `edgeroll eval`)",
      "train",
    )
    .option("--limit <n>", "only the first n examples")
    .option(
      "--env-version <v>",
      "the environment version the groups must run: a 409 if it declares another",
    )
    .option(
      "--server",
      "produce the run on the Worker (POST /v1/runs/:id/producer): upload the dataset, hand it over, follow it",
    )
    .option("--epochs <n>", "with --server: passes over the dataset", "1")
    .option("--shuffle-seed <n>", "with --server: each pass in its own seeded order")
    .option(
      "--max-resamples <k>",
      "with --server: resample an example whose group landed uniform up to k times (dynamic sampling)",
    )
    .option("--sampler <name>", "with --server: uniform, or pool (a curriculum)", "uniform")
    .option(
      "--skip-solved-after <n>",
      "--sampler pool: skip an example solved in its last n groups",
    )
    .option(
      "--skip-unsolved-after <m>",
      "--sampler pool: skip an example solved in none of its last m groups",
    )
    .option("--retry-after <k>", "--sampler pool: sample a skipped example again after k skips")
    .option("--dataset-name <name>", "with --server: the upload's name (default: the file's)")
    .action(async (flags) =>
      flags.server
        ? (await import("./run-server")).runOnServer(flags)
        : (await import("./run")).run(flags),
    );

  withApi(program.command("eval"))
    .description(
      "evaluate one policy version: an eval group per dataset example, then pass@k, maj@k and the mean reward",
    )
    .requiredOption("--env <name>", "an environment the Worker serves (GET /v1/environments)")
    .requiredOption("--dataset <file.jsonl>", "held-out task examples, one per line")
    .requiredOption("--group-size <n>", "episodes per example: pass@k and maj@k go up to it")
    .requiredOption("--policy-version <n>", "the policy version measured")
    .option(
      "--k <list>",
      "which k to show, e.g. 1,4,8 (default: 1, 2, 4, ... up to the group size)",
    )
    .option("--concurrency <n>", "groups in flight at once", "8")
    .option(
      "--run <id>",
      "run id (default: the dataset's name, prefixed with the env unless it holds it)",
    )
    .option("--prompt-text <text>", "the run's prompt text (the system message when none)")
    .option("--model <name>", "model name on the inference host", "sim")
    .option("--temperature <t>", "sampling temperature", "1")
    .option("--top-p <p>", "nucleus sampling: keep the tokens of this much probability", "1")
    .option("--stop <text>", "a stop string (repeat for more, up to 8)", collect)
    .option("--max-completion-tokens <n>", "per action")
    .option("--max-context-tokens <n>", "per episode")
    .option("--seed <n>", "reproducible sampling")
    .option("--tokens <mode>", "token-exact episodes: auto, required or off", "auto")
    .option("--generation <mode>", "chat (the host renders prompts) or tokens (token-in)", "chat")
    .option("--limit <n>", "only the first n examples")
    .action(async (flags) =>
      (await import("./eval")).evaluate({
        creditAssignment: "per_episode",
        advantage: "mean",
        algorithm: "grpo",
        overlong: "keep",
        ...flags,
      }),
    );

  withApi(program.command("pull"))
    .description(
      "lease one batch of scored groups and write it as JSON lines, as a trainer loop would",
    )
    .option("--max-groups <n>", "at most this many groups")
    .option("--max-episodes <n>", "at most this many episodes (whole groups only)")
    .option("--run <id>", "only this run")
    .option("--env <name>", "only this environment")
    .option("--lease-seconds <s>", "lease length (default 300)")
    .option("--include <list>", "messages, per_turn, sft, tokens", "messages,per_turn")
    .option("--token-encoding <json|base64>", "with tokens: number lists, or base64 arrays", "json")
    .option("--include-uniform", "also groups whose episodes all scored the same (no GRPO signal)")
    .option("--ack", "ack the batch once it is written")
    .option("--out <file.jsonl>", "append the groups here instead of printing them")
    .action(async (flags) => (await import("./trainer-commands")).pull(flags));

  withApi(program.command("ack"))
    .description("ack a leased batch")
    .argument("<batch-id>")
    .action(async (id: string, flags) => (await import("./trainer-commands")).ack(id, flags));
  withApi(program.command("release"))
    .description("hand a leased batch back at once")
    .argument("<batch-id>")
    .action(async (id: string, flags) => (await import("./trainer-commands")).release(id, flags));

  withApi(program.command("export"))
    .description(
      "write a run's scored episodes (rl), SFT rows from its successful episodes (sft), or token-exact samples (tokens)",
    )
    .requiredOption("--run <id>", "the run to export")
    .option("--env <name>", "only this environment")
    .option(
      "--kind <rl|sft|tokens>",
      "scored episodes, rejection-sampled SFT rows, or token samples",
      "rl",
    )
    .option(
      "--format <format>",
      "jsonl (rl, sft); for tokens: samples (edgeroll's), trl (rollout_func rows) or atropos (ScoredDataGroups)",
      "jsonl",
    )
    .option("--out <file>", "write here instead of stdout")
    .action(async (flags) => (await import("./export-run")).exportRun(flags));

  const dataset = program
    .command("dataset")
    .description("datasets in the Worker's R2 bucket, for runs to sample from");

  withApi(dataset.command("push"))
    .description(
      "check a JSONL dataset line by line, then stream it to the Worker (the trainer role)",
    )
    .argument("<file.jsonl>", "task examples, one per line")
    .option("--name <name>", "the dataset's name (default: the file's name without .jsonl)")
    .option("--replace", "replace other bytes already pushed under the name")
    .action(async (file: string, flags) =>
      (await import("./dataset-commands")).datasetPush(file, flags),
    );

  withApi(dataset.command("list"))
    .description("the datasets pushed: name, examples, bytes, sha256, when")
    .option("--json", "print JSON instead of a table")
    .action(async (flags) => (await import("./dataset-commands")).datasetList(flags));

  program
    .command("token")
    .description(
      'print a local stack\'s bearer token, e.g. curl -H "authorization: Bearer $(npx edgeroll token)"',
    )
    .option("--role <name>", "admin (every role), producer, trainer or reader", "admin")
    .option("--persist-to <dir>", "local state directory", ".wrangler/state")
    .action(async (flags) => (await import("./token-command")).printToken(flags));

  program
    .command("sql")
    .description("run SQL on the episode logs (D1) and print a table; wraps wrangler d1 execute")
    .argument("<query>", 'e.g. "SELECT * FROM run_summary"')
    .option("--remote", "query the deployed database instead of the local one")
    .option("--json", "print JSON instead of a table")
    .option("--persist-to <dir>", "local state directory (wrangler's --persist-to)")
    .action(async (query: string, flags) => (await import("./sql")).sql(query, flags));

  return program;
}
