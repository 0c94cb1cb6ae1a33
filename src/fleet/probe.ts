/**
 * Whether an ejected host answers again: `GET <base>/models`, which every OpenAI-compatible
 * server (vLLM, SGLang, llama.cpp, `transformers serve`) serves under its base URL, cheaply and
 * without touching the GPU. An answer of 200 within the timeout readmits the host.
 */
import { kvUsage } from "./adaptive-cap";

export interface ProbeResult {
  ok: boolean;
  /** Why not, when it is not. */
  error: string | null;
}

export const PROBE_TIMEOUT_MS = 2000;

/**
 * The host's KV cache usage from its Prometheus `/metrics`, served at the server's root (vLLM;
 * SGLang with `--enable-metrics`), not under `/v1`; null when it does not answer or say.
 */
export async function readKvUsage(
  url: string,
  apiKey: string | undefined,
  timeoutMs = PROBE_TIMEOUT_MS,
): Promise<number | null> {
  const headers: Record<string, string> = {};
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  try {
    const response = await fetch(`${url.replace(/\/v1$/, "")}/metrics`, {
      headers,
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!response.ok) {
      await response.body?.cancel();
      return null;
    }
    return kvUsage(await response.text());
  } catch {
    return null;
  }
}

export async function probeHost(
  url: string,
  apiKey: string | undefined,
  timeoutMs = PROBE_TIMEOUT_MS,
): Promise<ProbeResult> {
  const headers: Record<string, string> = {};
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  try {
    const response = await fetch(`${url}/models`, {
      headers,
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.body?.cancel();
    return response.ok
      ? { ok: true, error: null }
      : { ok: false, error: `GET /models answered ${response.status}` };
  } catch (error) {
    return { ok: false, error: `GET /models: ${String(error)}` };
  }
}
