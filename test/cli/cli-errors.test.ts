// What a refused CLI call prints: the API's answer, then the command that fixes it, for the
// token that was sent (its source) and the stack serving the URL (its state directory).
import { describe, expect, it } from "vitest";
import type { TokenChoice } from "../../src/cli/api-client";
import { describeError } from "../../src/cli/cli-errors";
import { PROJECT_ROOT } from "../../src/cli/project";
import { EdgerollError } from "../../src/client/edgeroll-client";

const LOCAL = "http://127.0.0.1:8788";
const refused = (url: string, status = 401, details?: unknown) =>
  new EdgerollError(
    "POST",
    `${url}/v1/batches/lease`,
    status,
    status === 401 ? "unauthorized" : "forbidden",
    status === 401
      ? "unknown bearer token"
      : "this token lacks the trainer role (it has: producer)",
    details,
  );
/** The second stack of docs/local-stack.md, on its own state directory. */
const secondStack: TokenChoice["stack"] = {
  pid: 1,
  api_url: LOCAL,
  state_dir: `${PROJECT_ROOT}.wrangler/state-2`,
  started_at: "",
};
const hint = (error: EdgerollError, choice: TokenChoice) => describeError(error, false, choice)[1];

describe("a refused token's hint", () => {
  it("for an EDGEROLL_TOKEN that is set but wrong: not 'set it', but unset it or the right one", () => {
    expect(hint(refused(LOCAL), { url: LOCAL, source: "EDGEROLL_TOKEN", stack: secondStack })).toBe(
      "  EDGEROLL_TOKEN is set, but http://127.0.0.1:8788 does not know that token (another stack's?): `unset EDGEROLL_TOKEN` and the CLI finds this stack's, or `export EDGEROLL_TOKEN=$(npx edgeroll token --persist-to .wrangler/state-2)`",
    );
    expect(
      hint(refused("https://edgeroll.example.com"), {
        url: "https://edgeroll.example.com",
        source: "EDGEROLL_TOKEN",
        stack: null,
      }),
    ).toMatch(/set it to one of the deployment's API_TOKENS/);
  });

  it("for a --token of another stack, and for none at all", () => {
    expect(hint(refused(LOCAL), { url: LOCAL, source: "--token", stack: secondStack })).toMatch(
      /does not know the token given with --token: `--token \$\(npx edgeroll token --persist-to \.wrangler\/state-2\)` gives this stack's/,
    );
    expect(hint(refused(LOCAL), { url: LOCAL, source: null, stack: null })).toMatch(
      /^ {2}no token was sent: no local stack's token file was found for http:\/\/127\.0\.0\.1:8788\. `npm run dev` makes them/,
    );
  });
});

describe("a token without the role", () => {
  it("gets the command that prints a token with it, for the stack serving the URL", () => {
    const error = refused(LOCAL, 403, { needs_one_of: ["trainer"], has: ["producer"] });
    expect(hint(error, { url: LOCAL, source: "--token", stack: secondStack })).toBe(
      "  the token (from --token) lacks the trainer role: `--token $(npx edgeroll token --role trainer --persist-to .wrangler/state-2)` has it, as does the stack's admin token (`npx edgeroll token --persist-to .wrangler/state-2`, what the CLI uses when given no token)",
    );
  });

  it("and no such hint for a refusal that is not about roles (another trainer's batch)", () => {
    const error = new EdgerollError(
      "POST",
      `${LOCAL}/v1/batches/b_1/ack`,
      403,
      "forbidden",
      "batch b_1 was leased by another trainer",
    );
    expect(describeError(error, false, { url: LOCAL, source: null, stack: null })).toHaveLength(1);
  });
});
