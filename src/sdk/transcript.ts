/** Marks sampled actions so replay and per-turn credit never confuse them with environment text. */
import type { ChatMessage, EnvironmentEpisode, EnvironmentTurn, ToolCall } from "./types";

/** What the policy produced for one turn. */
export interface PolicyAction {
  content: string;
  toolCalls?: ToolCall[];
}

/** The assistant message recorded for a sampled action: `metadata.sampled = true`. */
export function sampledMessage(action: PolicyAction): ChatMessage {
  const message: ChatMessage = {
    role: "assistant",
    content: action.content,
    metadata: { sampled: true },
  };
  if (action.toolCalls?.length) message.tool_calls = action.toolCalls;
  return message;
}

export function isSampledAction(message: ChatMessage | EnvironmentTurn): boolean {
  return message.role === "assistant" && message.metadata?.sampled === true;
}

/** The sampled actions of a transcript, in order. */
export function sampledActions(messages: readonly ChatMessage[]): ChatMessage[] {
  return messages.filter(isSampledAction);
}

/** The episode's sampled assistant turns, the ones `per_turn_rewards` grade, in order. */
export function sampledTurns(episode: EnvironmentEpisode): EnvironmentTurn[] {
  return episode.turns.filter(isSampledAction);
}
