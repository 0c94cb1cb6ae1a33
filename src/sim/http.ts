/** What every simulator route needs of HTTP: JSON bodies, one error body, and waiting. */
import type { ServerResponse } from "node:http";

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

/** An error as vLLM (and OpenAI) send one: `{"error": {"message", "type"}}`. */
export function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  type = "BadRequestError",
): void {
  sendJson(res, status, { error: { message, type } });
}

/** A body that failed its schema: 400, with the start of the reason. */
export function sendBadRequest(res: ServerResponse, error: unknown): void {
  sendError(res, 400, `bad request: ${String(error).slice(0, 300)}`, "invalid_request_error");
}
