/** What the group storage tests build a group from: a new group's spec, an action's stats. */
import { newGroupSpec } from "../../src/rollout/group-ids";
import { StartGroupRequestSchema, withPolicyVersion } from "../../src/rollout/group-spec";

/** A sampled action's stats, as the host reported them. */
export const ACTION_STATS = {
  promptTokens: 10,
  completionTokens: 5,
  finishReason: "stop",
  latencyMs: 3,
  attempts: 1,
};

/** A new guess-number group's spec (secret 7), as the API starts one. */
export function guessGroupSpec(run: string, size: number) {
  const request = withPolicyVersion(
    StartGroupRequestSchema.parse({
      env: "guess-number",
      example: { id: run, input: "Find the number.", metadata: { secret: 7 } },
      group_size: size,
      run_id: run,
      sampling: { model: "sim" },
    }),
  );
  return newGroupSpec(request, null);
}
