/**
 * Native tool calling: each episode's tool definitions, as its environment declared them when
 * it opened, beside its transcript (same SQLite, a table of its own). Every generation of the
 * episode sends them; the landing records their hash per episode, since the chat template
 * renders them into the prompt's token ids.
 */
import type { ToolDefinition } from "../sdk";
import { sha256Hex } from "../utils/digest";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS episode_tools (
  idx INTEGER PRIMARY KEY,
  tools TEXT NOT NULL,
  hash TEXT NOT NULL
);`;

export interface EpisodeToolSet {
  tools: ToolDefinition[];
  /** SHA-256 (hex) of the definitions as sent: equal hashes, equal prompts. */
  hash: string;
}

export class EpisodeToolStore {
  private cache: Map<number, EpisodeToolSet> | null = null;

  constructor(private readonly sql: SqlStorage) {}

  private all(): Map<number, EpisodeToolSet> {
    if (this.cache === null) {
      this.sql.exec(SCHEMA);
      this.cache = new Map();
      for (const r of this.sql.exec("SELECT idx, tools, hash FROM episode_tools"))
        this.cache.set(Number(r.idx), {
          tools: JSON.parse(String(r.tools)) as ToolDefinition[],
          hash: String(r.hash),
        });
    }
    return this.cache;
  }

  /** The hash to record with the episode's tools (computed before the opening's transaction). */
  static async hashOf(tools: readonly ToolDefinition[]): Promise<string> {
    return sha256Hex(JSON.stringify(tools));
  }

  /**
   * Writes an episode's tools inside the transaction that records its opening, and returns what
   * to do once it has committed.
   */
  record(idx: number, set: EpisodeToolSet): () => void {
    const cache = this.all();
    this.sql.exec(
      "INSERT OR REPLACE INTO episode_tools (idx, tools, hash) VALUES (?, ?, ?)",
      idx,
      JSON.stringify(set.tools),
      set.hash,
    );
    return () => cache.set(idx, set);
  }

  /** The episode's tools; null for an episode of a text-only environment. */
  of(idx: number): EpisodeToolSet | null {
    return this.all().get(idx) ?? null;
  }
}
