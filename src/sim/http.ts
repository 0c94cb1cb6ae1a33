/** What every simulator route needs of HTTP: JSON bodies, one error body, and waiting. */
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from "node:http";

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The request's `X-Session-ID` (edgeroll sends the episode's id), if it sent one. */
export function sessionOf(req: IncomingMessage): string | undefined {
  const session = req.headers["x-session-id"];
  return typeof session === "string" ? session : undefined;
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

/** An error as vLLM (and OpenAI) send one: `{"error": {"message", "type"}}`. */
export function sendError(
  res: ServerResponse,
  status: number,
  message: string,
  type = "BadRequestError",
  headers: Record<string, string> = {},
): void {
  sendJson(res, status, { error: { message, type } }, headers);
}

/** The type vLLM gives an error of this status, after its name: `NotFoundError` for 404. */
export function errorType(status: number): string {
  const name = (STATUS_CODES[status] ?? "Server Error").replace(/[^A-Za-z]/g, "");
  return name.endsWith("Error") ? name : `${name}Error`;
}

/** A body that failed its schema: 400, with the start of the reason. */
export function sendBadRequest(res: ServerResponse, error: unknown): void {
  sendError(res, 400, `bad request: ${String(error).slice(0, 300)}`, "invalid_request_error");
}
