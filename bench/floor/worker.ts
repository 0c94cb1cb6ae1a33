/**
 * The floor under an edgeroll turn (bench/floor.ts): one Durable Object per group of 8
 * episodes, and per turn exactly the platform calls a turn of the pipeline makes — a streamed
 * completion fetched from the host under a deadline, the statements that record it and its
 * tokens in a shared write turn, a step on an `RpcTarget` session of a service, and the
 * statements that record the step in another write turn — and per group the platform calls of
 * its landing (landing.ts: D1 and R2). None of edgeroll's own work (limiter, validation,
 * scoring, credit, group commit, restarts): whatever the pipeline loses beyond this Worker is
 * edgeroll's, the rest is the platform's. The schema and statements are copies of
 * src/rollout/storage/'s, on purpose: the floor imports nothing of edgeroll, so none of its
 * work can hide in here.
 */
import { DurableObject, RpcTarget, WorkerEntrypoint } from "cloudflare:workers";
import { type LandingEnv, type LandingEpisode, landGroup, registerGroup } from "./landing";

interface Message {
  role: string;
  content: string;
}

interface FloorEnv extends LandingEnv {
  GROUP: DurableObjectNamespace<FloorGroup>;
  STEPPER: Service<FloorStepper>;
  /** Set by the local stack's `startWorker`, as for edgeroll's Worker. */
  INFERENCE_BASE_URL: string;
}

const GROUP_SIZE = 8;
const REPLY = "The road goes on. ".repeat(12).slice(0, 200);

class FloorSession extends RpcTarget {
  /** What `marathon` does: reply to every action with 200 characters. */
  step(messages: Message[]): { messages: Message[] } {
    const turn = messages.filter((m) => m.role === "assistant").length;
    return { messages: [{ role: "user", content: `Turn ${turn}. ${REPLY}` }] };
  }
}

export class FloorStepper extends WorkerEntrypoint {
  session(): FloorSession {
    return new FloorSession();
  }
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS episodes (idx INTEGER PRIMARY KEY, state TEXT, turns INTEGER,
  response_text TEXT);
CREATE TABLE IF NOT EXISTS messages (idx INTEGER NOT NULL, seq INTEGER NOT NULL, turn INTEGER,
  sampled INTEGER NOT NULL, message TEXT NOT NULL, prompt_tokens INTEGER,
  completion_tokens INTEGER, finish_reason TEXT, latency_ms INTEGER, attempts INTEGER,
  truncated INTEGER, PRIMARY KEY (idx, seq));
CREATE TABLE IF NOT EXISTS steps (idx INTEGER NOT NULL, turn INTEGER NOT NULL,
  metadata TEXT NOT NULL, PRIMARY KEY (idx, turn));
CREATE TABLE IF NOT EXISTS generations (idx INTEGER PRIMARY KEY, state TEXT NOT NULL,
  sent_at INTEGER, deadline_at INTEGER);
CREATE TABLE IF NOT EXISTS turn_tokens (idx INTEGER NOT NULL, turn INTEGER NOT NULL,
  prompt_length INTEGER NOT NULL, prefix_length INTEGER NOT NULL,
  completion_length INTEGER NOT NULL, prompt_tail BLOB NOT NULL, completion BLOB NOT NULL,
  logprobs BLOB NOT NULL, spilled INTEGER NOT NULL DEFAULT 0, consistent INTEGER NOT NULL,
  model TEXT, temperature REAL NOT NULL, top_p REAL NOT NULL, PRIMARY KEY (idx, turn));`;

/** What a streamed completion carried: its text, and the token fields edgeroll keeps. */
interface Completion {
  content: string;
  promptIds: number[];
  ids: number[];
  logprobs: number[];
}

function parseStream(body: string): Completion {
  const out: Completion = { content: "", promptIds: [], ids: [], logprobs: [] };
  for (const line of body.split("\n")) {
    if (!line.startsWith("data: {")) continue;
    const choice = JSON.parse(line.slice(6)).choices?.[0];
    out.content += choice?.delta?.content ?? "";
    if (choice?.prompt_token_ids) out.promptIds = choice.prompt_token_ids;
    out.ids.push(...(choice?.token_ids ?? []));
    for (const t of choice?.logprobs?.content ?? []) out.logprobs.push(t.logprob);
  }
  return out;
}

const bytes = (view: Int32Array | Float32Array) => new Uint8Array(view.buffer);

export class FloorGroup extends DurableObject<FloorEnv> {
  private readonly sql = this.ctx.storage.sql;
  private nextWriteTurn: Promise<void> | null = null;

  private writeTurn(): Promise<void> {
    this.nextWriteTurn ??= new Promise<void>((resolve) =>
      setTimeout(() => {
        this.nextWriteTurn = null;
        resolve();
      }, 0),
    );
    return this.nextWriteTurn;
  }

  private append(idx: number, seq: number, turn: number, message: Message, sampled: boolean) {
    this.sql.exec(
      `INSERT INTO messages (idx, seq, turn, sampled, message, prompt_tokens, completion_tokens,
         finish_reason, latency_ms, attempts, truncated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      idx,
      seq,
      turn,
      sampled ? 1 : 0,
      JSON.stringify(message),
      10,
      4,
      "stop",
      5,
      1,
      null,
    );
  }

  /** A generation's body; a connection that breaks is tried again, as edgeroll's client does. */
  private async generate(url: string, request: object, signal: AbortSignal): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      try {
        const response = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(request),
          signal,
        });
        if (!response.ok) throw new Error(`the host answered ${response.status}`);
        return await response.text();
      } catch (error) {
        if (attempt >= 5 || signal.aborted) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
      }
    }
  }

  /**
   * Plays the group's episodes to the end, lands them, then deletes its storage as a landed
   * group does.
   */
  async play(
    run: string,
    groupId: string,
    turns: number,
    url: string,
    model: string,
    statements: number,
  ) {
    await registerGroup(this.env, run, groupId, turns);
    this.sql.exec(SCHEMA);
    this.runDistinctStatements(statements);
    const started = Date.now();
    await Promise.all(
      Array.from({ length: GROUP_SIZE }, (_, idx) => this.episode(idx, turns, url, model)),
    );
    await landGroup(this.env, run, groupId, this.episodesKept(started), this.tokensKept());
    await this.ctx.storage.deleteAll();
  }

  /**
   * `statements` distinct queries run once each (0 in every published figure): workerd keeps
   * every distinct statement an object runs prepared, in a cache of its own (up to 1 MB of SQL
   * text), so this measures what each one an object uses costs its memory
   * (`npm run bench:heap -- floor 1024 --series --statements 60`).
   */
  private runDistinctStatements(count: number) {
    for (let k = 0; k < count; k++)
      this.sql.exec(
        `SELECT m.idx, m.seq, m.message, e.state FROM messages m JOIN episodes e ON e.idx = m.idx
         WHERE m.idx = ? AND m.seq > ? AND e.state != 'statement ${k}' ORDER BY m.seq`,
        0,
        0,
      );
  }

  private episodesKept(startedAt: number): LandingEpisode[] {
    const messages = [...this.sql.exec("SELECT * FROM messages ORDER BY idx, seq")];
    return [...this.sql.exec("SELECT * FROM episodes ORDER BY idx")].map((e) => ({
      idx: Number(e.idx),
      turns: Number(e.turns),
      responseText: String(e.response_text),
      startedAt,
      messages: messages
        .filter((m) => m.idx === e.idx)
        .map((m) => ({
          seq: Number(m.seq),
          turn: Number(m.turn),
          sampled: m.sampled === 1,
          message: String(m.message),
        })),
    }));
  }

  /** Every turn's token arrays, one after another: the group's token object. */
  private tokensKept(): Uint8Array {
    const parts = [...this.sql.exec("SELECT * FROM turn_tokens ORDER BY idx, turn")].flatMap((r) =>
      [r.prompt_tail, r.completion, r.logprobs].map((b) => new Uint8Array(b as ArrayBuffer)),
    );
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const part of parts) {
      out.set(part, at);
      at += part.length;
    }
    return out;
  }

  /** A turn's token row, its prompt kept only past what the previous turn left. */
  private recordTokens(idx: number, turn: number, done: number, completion: Completion) {
    const tail = completion.promptIds.slice(done);
    this.sql.exec(
      `INSERT INTO turn_tokens (idx, turn, prompt_length, prefix_length, completion_length,
         prompt_tail, completion, logprobs, spilled, consistent, model, temperature, top_p)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 1, ?, 1, 1)`,
      idx,
      turn,
      completion.promptIds.length,
      Math.min(done, completion.promptIds.length),
      completion.ids.length,
      bytes(Int32Array.from(tail)),
      bytes(Int32Array.from(completion.ids)),
      bytes(Float32Array.from(completion.logprobs)),
      "sim",
    );
  }

  private async episode(idx: number, turns: number, url: string, model: string): Promise<void> {
    using session = await this.env.STEPPER.session();
    const transcript: Message[] = [{ role: "user", content: "Go." }];
    this.sql.exec("INSERT INTO episodes VALUES (?, 'generating', 0, '')", idx);
    this.append(idx, 0, 0, transcript[0] as Message, false);
    let tokensDone = 0;
    for (let turn = 0; turn < turns; turn++) {
      const now = Date.now();
      this.sql.exec(
        "INSERT OR REPLACE INTO generations (idx, state, sent_at, deadline_at) VALUES (?, 'sent', ?, ?)",
        idx,
        now,
        now + 600_000,
      );
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(), 600_000);
      // The fields edgeroll's request carries (src/inference/completion.ts), token fields
      // included, so that the host answers with the same bytes; only their parsing is left out.
      const body = await this.generate(
        url,
        {
          model,
          temperature: 1,
          top_p: 1,
          max_tokens: 16,
          seed: idx * 1000 + turn,
          stream: true,
          stream_options: { include_usage: true },
          messages: transcript,
          max_completion_tokens: 16,
          logprobs: true,
          top_logprobs: 0,
          return_token_ids: true,
        },
        deadline.signal,
      );
      clearTimeout(timer);
      const completion = parseStream(body);
      const { content } = completion;
      const action = { role: "assistant", content };
      await this.writeTurn();
      this.ctx.storage.transactionSync(() => {
        this.append(idx, transcript.length, turn, action, true);
        this.recordTokens(idx, turn, tokensDone, completion);
        this.sql.exec("DELETE FROM generations WHERE idx = ?", idx);
        this.sql.exec(
          "UPDATE episodes SET state = 'stepping', turns = ? WHERE idx = ?",
          turn + 1,
          idx,
        );
      });
      transcript.push(action);
      tokensDone = completion.promptIds.length + completion.ids.length;
      const step = await session.step(transcript);
      await this.writeTurn();
      this.ctx.storage.transactionSync(() => {
        for (const [i, message] of step.messages.entries())
          this.append(idx, transcript.length + i, turn, message, false);
        this.sql.exec(
          "INSERT OR REPLACE INTO steps (idx, turn, metadata) VALUES (?, ?, '{}')",
          idx,
          turn,
        );
        this.sql.exec(
          "UPDATE episodes SET response_text = ?, state = 'generating' WHERE idx = ?",
          content,
          idx,
        );
      });
      transcript.push(...step.messages);
    }
  }
}

export default {
  /**
   * `/?groups=G&turns=T&model=M[&statements=N]`: plays G groups of 8 to the end (none: a health
   * check).
   */
  async fetch(request: Request, env: FloorEnv): Promise<Response> {
    const query = new URL(request.url).searchParams;
    const groups = Number(query.get("groups") ?? "0");
    const run = crypto.randomUUID();
    await Promise.all(
      Array.from({ length: groups }, (_, i) =>
        env.GROUP.get(env.GROUP.idFromName(`${run}-${i}`)).play(
          run,
          `${run}-${i}`,
          Number(query.get("turns") ?? "12"),
          `${env.INFERENCE_BASE_URL}/chat/completions`,
          query.get("model") ?? "sim",
          Number(query.get("statements") ?? "0"),
        ),
      ),
    );
    return new Response("played");
  },
};
