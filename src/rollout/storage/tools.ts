/**
 * Native tool calling: each episode's tool definitions, as its environment declared them when
 * it opened. Every generation of the episode sends them; the landing records their hash per
 * episode, since the chat template renders them into the prompt's token ids.
 */
import { type ToolDefinition, ToolDefinitionsSchema } from "../../sdk";
import { sha256Hex } from "../../utils/digest";
import { jsonOf } from "./columns";
import type { GroupDatabase } from "./database";

export interface EpisodeToolSet {
  tools: ToolDefinition[];
  /** SHA-256 (hex) of the definitions as sent: equal hashes, equal prompts. */
  hash: string;
}

/** An episode's tools with their hash, computed before the opening's write. */
export async function toolSetOf(tools: ToolDefinition[]): Promise<EpisodeToolSet> {
  return { tools, hash: await sha256Hex(JSON.stringify(tools)) };
}

export class ToolsTable {
  private cache: Map<number, EpisodeToolSet> | null = null;

  constructor(private readonly db: GroupDatabase) {
    db.onReset(() => {
      this.cache = null;
    });
    db.onCreate(() => {
      this.cache = new Map();
    });
  }

  private get all(): Map<number, EpisodeToolSet> {
    if (this.cache === null) {
      this.cache = new Map();
      for (const r of this.db.exec("SELECT idx, tools, hash FROM episode_tools"))
        this.cache.set(Number(r.idx), {
          tools: ToolDefinitionsSchema.parse(jsonOf(r.tools)),
          hash: String(r.hash),
        });
    }
    return this.cache;
  }

  /** Writes an episode's tools, inside the transaction that records its opening. */
  record(idx: number, set: EpisodeToolSet): void {
    this.db.exec(
      "INSERT OR REPLACE INTO episode_tools (idx, tools, hash) VALUES (?, ?, ?)",
      idx,
      JSON.stringify(set.tools),
      set.hash,
    );
    this.db.afterCommit(() => this.all.set(idx, set));
  }

  /** The episode's tools; null for an episode of a text-only environment. */
  of(idx: number): EpisodeToolSet | null {
    return this.all.get(idx) ?? null;
  }
}
