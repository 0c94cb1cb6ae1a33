/** The result of running environment code: a value, or why the environment failed. */
import { errorMessage } from "../sdk";

export type EnvCall<T> = { ok: true; value: T } | { ok: false; error: string };

/** Runs environment code and turns whatever it throws into a recorded reason, never an RPC error. */
export async function envCall<T>(run: () => Promise<T> | T): Promise<EnvCall<T>> {
  try {
    return { ok: true, value: await run() };
  } catch (error) {
    return { ok: false, error: errorMessage(error) };
  }
}
