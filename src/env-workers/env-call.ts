/** The result of running environment code: a value, or why the environment failed. */
import { RemoteEnvError, type RemoteFault } from "../environments/remote/client";
import { errorMessage } from "../sdk";

export type EnvCall<T> =
  | { ok: true; value: T }
  /** `fault`: a remote environment that was unreachable or too slow; else the code failed. */
  | { ok: false; error: string; fault?: Exclude<RemoteFault, "failed"> };

/** Runs environment code and turns whatever it throws into a recorded reason, never an RPC error. */
export async function envCall<T>(run: () => Promise<T> | T): Promise<EnvCall<T>> {
  try {
    return { ok: true, value: await run() };
  } catch (error) {
    if (error instanceof RemoteEnvError && error.reason !== "failed")
      return { ok: false, error: error.message, fault: error.reason };
    return { ok: false, error: errorMessage(error) };
  }
}
