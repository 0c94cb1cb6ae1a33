/**
 * A run or environment named on the command line, checked with the Worker: a typo is an
 * error that says so (and lists the environments there are, as the API does), not an empty
 * answer that reads as "nothing to do".
 */
import { type EdgerollClient, EdgerollError } from "../client/edgeroll-client";
import { CliError } from "./project";

export async function ensureEnvironment(client: EdgerollClient, name: string): Promise<void> {
  const { environments } = await client.listEnvironments();
  if (!environments.includes(name))
    throw new CliError(`unknown environment "${name}" (registered: ${environments.join(", ")})`);
}

/** True when the run has groups (or a policy); false when the Worker never heard of it. */
export async function runExists(client: EdgerollClient, runId: string): Promise<boolean> {
  try {
    await client.getRun(runId);
    return true;
  } catch (error) {
    if (error instanceof EdgerollError && error.status === 404) return false;
    throw error;
  }
}

export function unknownRun(runId: string): CliError {
  return new CliError(
    `unknown run "${runId}": no group was ever started in it. The runs there are: \`npx edgeroll sql "SELECT run_id, COUNT(*) AS groups FROM groups GROUP BY run_id"\`, or the dashboard's runs table`,
  );
}
