/**
 * The local stack's bearer tokens: made once per state directory, kept in a file beside the
 * state they guard (owner-only), and found there by every client on this machine — the CLI, the
 * TypeScript client's `discoverToken`, the Python client and `npx edgeroll token` for curl.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LOCAL_TOKENS_FILE } from "../client/local-token";
import { PROJECT_ROOT } from "./project";

/** Where `npm run dev` and `npm run demo` keep their state unless told otherwise. */
export const DEFAULT_STATE_DIR = ".wrangler/state";

/** One token per role, plus one with every role. */
export interface LocalTokens {
  admin: string;
  producer: string;
  trainer: string;
  reader: string;
}

export type LocalTokenName = keyof LocalTokens;
export const LOCAL_TOKEN_NAMES: readonly LocalTokenName[] = [
  "admin",
  "producer",
  "trainer",
  "reader",
];

export function tokensFile(persistTo: string): string {
  return join(persistTo, LOCAL_TOKENS_FILE);
}

/** The default state directory of this checkout. */
export function defaultStateDir(): string {
  return join(PROJECT_ROOT, DEFAULT_STATE_DIR);
}

/** The tokens of a state directory, or null when no local stack has run on it. */
export function readLocalTokens(persistTo: string): LocalTokens | null {
  const file = tokensFile(persistTo);
  return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as LocalTokens) : null;
}

/** The state directory's tokens, made on first use so every later run finds the same ones. */
export function localTokens(persistTo: string): LocalTokens {
  const existing = readLocalTokens(persistTo);
  if (existing) return existing;
  const make = (role: string) => `er-${role}-${randomBytes(18).toString("base64url")}`;
  const tokens = {
    admin: make("admin"),
    producer: make("producer"),
    trainer: make("trainer"),
    reader: make("reader"),
  };
  mkdirSync(persistTo, { recursive: true });
  writeFileSync(tokensFile(persistTo), `${JSON.stringify(tokens, null, 2)}\n`, { mode: 0o600 });
  return tokens;
}

/** The Worker's API_TOKENS secret for these tokens. */
export function apiTokensVar(tokens: LocalTokens): string {
  return JSON.stringify({
    [tokens.admin]: ["producer", "trainer", "reader"],
    [tokens.producer]: ["producer"],
    [tokens.trainer]: ["trainer"],
    [tokens.reader]: ["reader"],
  });
}
