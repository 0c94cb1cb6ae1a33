/** Whether a landing was made durable (D1 committed the rows, R2 took the token object). */
export type LandingOutcome = { ok: true } | { ok: false; error: string };
