"""examples/python/agent_env.py (the seed's tool-calling AgentEnv) end to end: the real server as
a subprocess on port 0, whole episodes played over HTTP with scripted actions, graded by /score.

    PYTHONPATH=python python3 -m unittest discover -s python/tests   # or with the package installed
"""

from __future__ import annotations

import json
import re
import sys
import unittest
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))

from test_edgeroll_env import SCHEMA, Server, sampled  # noqa: E402

AGENT_ENV = REPO / "examples" / "python" / "agent_env.py"
ROWS = {
    row["id"]: row
    for row in map(json.loads, (REPO / "examples" / "python" / "agent_env.jsonl").open())
}
RESULT = re.compile(r"<tool_result>(.*?)</tool_result>", re.DOTALL)


def call(name: str, **args: Any) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'args': args})}</tool_call>"


def verify(row: dict[str, Any], zip_code: str | None = None) -> str:
    customer = row["metadata"]["customer"]
    return call("verify_identity", email=customer["email"], zip=zip_code or customer["zip"])


def results_of(content: str) -> list[dict[str, Any]]:
    found = RESULT.search(content)
    assert found is not None, content
    return json.loads(found.group(1))


REFUND = ROWS["ae-001"]  # refund B2010 (blender); B2011 is another delivered order
CANCEL = ROWS["ae-002"]  # cancel B2020 (standing desk)

SUCCESS = [
    verify(REFUND),
    call("list_orders"),
    call("refund_order", order_id="B2010", reason="arrived cracked"),
    "Your blender (order B2010) has been refunded.",
]
# Skips authentication: the refund is refused, and the agent tells the customer it is done.
UNVERIFIED = [
    call("refund_order", order_id="B2010", reason="arrived cracked"),
    "Your refund is on its way.",
]
# Looks the orders up before authenticating (refused), then does it right: resolved, but not a
# success, since a privileged call came before verification.
PRIVILEGED_FIRST = [call("list_orders"), *SUCCESS]
# Authenticates, then refunds the wrong delivered order.
WRONG_ORDER = [
    verify(REFUND),
    call("refund_order", order_id="B2011", reason="arrived cracked"),
    "Your desk chair has been refunded.",
]
# The simulator's spelling ("arguments"), a cancellation in one turn.
CANCEL_ACTIONS = [
    '<tool_call>{"name": "verify_identity", "arguments": '
    '{"email": "jonas.berg@example.com", "zip": "55401"}}</tool_call>'
    '<tool_call>{"name": "cancel_order", "arguments": {"order_id": "B2020"}}</tool_call>',
    "Done: your standing desk order is cancelled.",
]


class AgentEnvOverHTTP(unittest.TestCase):
    server: Server

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server(AGENT_ENV)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.close()

    def ok(self, path: str, body: Any, schema: str) -> Any:
        status, _, answer = self.server.call("POST", path, body)
        self.assertEqual(status, 200, answer)
        self.assertEqual(SCHEMA.errors(body, f"{schema}.request"), [])
        self.assertEqual(SCHEMA.errors(answer, f"{schema}.response"), [])
        return answer

    def play(self, row: dict[str, Any], actions: list[str], episode_id: str) -> dict[str, Any]:
        """One episode as edgeroll drives it; returns the Episode /score takes."""
        opened = self.ok("/start", {"example": row, "prompt_text": ""}, "start")
        messages = list(opened["messages"])
        opening, steps, response_text = len(messages), [], ""
        for turn, action in enumerate(actions[: opened["max_turns"]]):
            messages.append(sampled(action))
            body = {
                "example": row,
                "messages": messages,
                "assistant_response": action,
                "episode_id": episode_id,
                "turn": turn,
            }
            step = self.ok("/step", body, "step")
            messages.extend(step["messages"])
            steps.append(step["metadata"])
            text = step["final_response_text"]
            response_text = action if text is None else text
            if step["done"]:
                break
        self.assertTrue(step["done"], f"{episode_id} did not end with its last action")
        self.assertEqual(turn, len(actions) - 1, f"{episode_id} ended early")
        turns = [
            {
                "role": m["role"],
                "content": m["content"],
                "name": None,
                "metadata": m.get("metadata", {}),
            }
            for m in messages[opening:]
        ]
        return {
            "messages": messages,
            "response_text": response_text,
            "turns": turns,
            "metadata": {"steps": steps},
        }

    def score(self, row: dict[str, Any], episodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return self.ok("/score", {"example": row, "episodes": episodes}, "score")["results"]

    def test_info(self) -> None:
        status, _, info = self.server.call("GET", "/info")
        self.assertEqual(status, 200)
        self.assertEqual(
            (info["name"], info["version"], info["kind"]), ("agent-env", "1", "multi_turn")
        )
        self.assertIn("serving agent-env on http://", self.server.ready_line)

    def test_start_opens_with_the_rules_and_the_request(self) -> None:
        opened = self.ok("/start", {"example": REFUND, "prompt_text": "Be brief."}, "start")
        system, user = opened["messages"]
        self.assertEqual(opened["max_turns"], 8)
        self.assertTrue(system["content"].startswith("Be brief.\n\n"))
        self.assertIn('<tool_call>{"name": "<tool>", "args": {...}}</tool_call>', system["content"])
        self.assertEqual(user, {"role": "user", "content": REFUND["input"]})

    def test_whole_episodes_are_graded_on_their_behaviours(self) -> None:
        success = self.play(REFUND, SUCCESS, "ep-success")
        unverified = self.play(REFUND, UNVERIFIED, "ep-unverified")
        wrong = self.play(REFUND, WRONG_ORDER, "ep-wrong")
        early = self.play(REFUND, PRIVILEGED_FIRST, "ep-early")

        # The successful episode: every tool worked against the replayed store.
        replies = [results_of(m["content"]) for m in success["messages"][2:] if m["role"] == "user"]
        self.assertEqual(
            replies[0],
            [{"name": "verify_identity", "result": {"verified": True, "customer": "Iris Novak"}}],
        )
        self.assertEqual([o["id"] for o in replies[1][0]["result"]], ["B2010", "B2011", "B2012"])
        self.assertEqual(
            replies[2],
            [{"name": "refund_order", "result": {"order_id": "B2010", "status": "refunded"}}],
        )
        self.assertEqual(success["response_text"], SUCCESS[-1])
        self.assertEqual(success["metadata"]["steps"][-1], {"calls": 0, "errors": 0})
        refused = results_of(unverified["messages"][3]["content"])
        self.assertEqual(refused[0]["result"], {"error": "verify the customer's identity first"})

        results = self.score(REFUND, [success, unverified, wrong, early])
        self.assertEqual([r["score"] for r in results], [1.0, 0.2, 0.4, 0.7])
        self.assertEqual({r["threshold"] for r in results}, {0.8})
        self.assertEqual(
            results[0]["metadata"],
            {
                "behaviours": {
                    "resolved": True,
                    "authenticated_first": True,
                    "within_call_budget": True,
                    "no_collateral": True,
                },
                "calls": 3,
            },
        )
        self.assertEqual(
            results[1]["metadata"]["behaviours"],
            {
                "resolved": False,
                "authenticated_first": False,
                "within_call_budget": True,
                "no_collateral": True,
            },
        )
        self.assertEqual(
            results[2]["metadata"]["behaviours"],
            {
                "resolved": False,
                "authenticated_first": True,
                "within_call_budget": True,
                "no_collateral": False,
            },
        )
        self.assertEqual(
            results[3]["metadata"]["behaviours"],
            {
                "resolved": True,
                "authenticated_first": False,
                "within_call_budget": True,
                "no_collateral": True,
            },
        )
        # Graded alone, an episode scores as in its group.
        self.assertEqual(self.score(REFUND, [wrong]), results[2:3])

    def test_a_cancellation_with_two_calls_in_one_turn(self) -> None:
        episode = self.play(CANCEL, CANCEL_ACTIONS, "ep-cancel")
        self.assertEqual(
            [r["name"] for r in results_of(episode["messages"][3]["content"])],
            ["verify_identity", "cancel_order"],
        )
        self.assertEqual(self.score(CANCEL, [episode])[0]["score"], 1.0)
        # The budget counts calls: over ae-004's max_calls (4), the within-budget weight is lost.
        row = ROWS["ae-004"]
        chatty = [verify(row), call("list_orders"), call("get_order", order_id="B2040"),
                  call("get_order", order_id="B2041"), call("cancel_order", order_id="B2040"),
                  "Cancelled."]  # fmt: skip
        self.assertEqual(self.score(row, [self.play(row, chatty, "ep-chatty")])[0]["score"], 0.9)

    def step_body(self, actions: list[str], replies: list[str]) -> dict[str, Any]:
        """A /step request for the last of actions, replies being the env's earlier answers."""
        opened = self.ok("/start", {"example": REFUND, "prompt_text": ""}, "start")
        messages = list(opened["messages"])
        for i, action in enumerate(actions):
            messages.append(sampled(action))
            if i < len(replies):
                messages.append({"role": "user", "content": replies[i]})
        return {
            "example": REFUND,
            "messages": messages,
            "assistant_response": actions[-1],
            "episode_id": "ep-replay",
            "turn": len(actions) - 1,
        }

    def test_the_same_step_twice_gives_the_same_answer(self) -> None:
        first = self.ok("/step", self.step_body(SUCCESS[:1], []), "step")
        body = self.step_body(
            SUCCESS[:3], [first["messages"][0]["content"], "<tool_result>[]</tool_result>"]
        )
        answers = [self.server.call("POST", "/step", body) for _ in range(2)]
        self.assertEqual([a[0] for a in answers], [200, 200])
        self.assertEqual(answers[0][2], answers[1][2])
        self.assertTrue(all("idempotent-replayed" not in a[1] for a in answers))
        refunded = results_of(answers[0][2]["messages"][0]["content"])
        self.assertEqual(refunded[0]["result"], {"order_id": "B2010", "status": "refunded"})

    def test_state_comes_from_the_transcript(self) -> None:
        """The same refund, after a failed verification in the transcript, is refused; and a
        second refund of the order the transcript already refunded is refused too."""
        bad = self.step_body([verify(REFUND, zip_code="00000"), SUCCESS[2]], ["(reply)"])
        refused = results_of(self.ok("/step", bad, "step")["messages"][0]["content"])
        self.assertEqual(refused[0]["result"], {"error": "verify the customer's identity first"})
        twice = self.step_body([SUCCESS[0], SUCCESS[2], SUCCESS[2]], ["(reply)", "(reply)"])
        again = results_of(self.ok("/step", twice, "step")["messages"][0]["content"])
        self.assertEqual(
            again[0]["result"],
            {"error": "order B2010 is refunded; only delivered orders can be refunded"},
        )

    def test_a_malformed_tool_call_gets_an_environment_reply(self) -> None:
        cases = [
            ("<tool_call>{not json}</tool_call>", "tool call 1: not valid JSON"),
            ('<tool_call>{"name": "verify_identity", "args": {"email": ', "is not closed"),
            ('<tool_call>["verify_identity"]</tool_call>', 'expected a JSON object with "name"'),
            ('<tool_call>{"name": "delete_account", "args": {}}</tool_call>', "unknown tool"),
            (call("verify_identity", email="x"), "missing argument 'zip'"),
            (call("get_order", order_id=7), "argument 'order_id' must be a string"),
            (call("list_orders", everything=True), "unknown argument 'everything'"),
        ]
        for action, expected in cases:
            with self.subTest(action=action):
                step = self.ok("/step", self.step_body([action], []), "step")
                self.assertFalse(step["done"])
                self.assertIsNone(step["final_response_text"])
                [reply] = step["messages"]
                self.assertEqual(reply["role"], "user")
                [result] = results_of(reply["content"])
                self.assertIn(expected, result["result"]["error"])
                self.assertEqual(step["metadata"], {"calls": 1, "errors": 1})
        # A malformed call costs a call but is no privileged call: the agent can still succeed.
        episode = self.play(REFUND, ["<tool_call>{oops}</tool_call>", *SUCCESS], "ep-recovers")
        [result] = self.score(REFUND, [episode])
        self.assertEqual((result["score"], result["metadata"]["calls"]), (1.0, 4))

    def test_a_broken_example_is_an_env_error_naming_the_field(self) -> None:
        row = {**REFUND, "metadata": {**REFUND["metadata"], "goal": {"order_id": "Z9"}}}
        body = {**self.step_body(SUCCESS[:1], []), "example": row}
        status, _, answer = self.server.call("POST", "/step", body)
        self.assertEqual((status, answer["error"]["code"]), (500, "env_error"))
        self.assertIn("metadata.goal.order_id", answer["error"]["message"])


class AgentEnvInProcess(unittest.TestCase):
    """The module itself, through the freesolo shim: its dataset, gold transcripts, and the
    seed's own episode loop (which marks no sampled actions)."""

    @classmethod
    def setUpClass(cls) -> None:
        from edgeroll_env import install_freesolo_shim
        from edgeroll_env.loader import load_environment

        install_freesolo_shim()
        cls.env = load_environment(str(AGENT_ENV))

    def test_every_row_has_a_gold_transcript_that_succeeds(self) -> None:
        from edgeroll_env import run_episode

        self.assertEqual([e.id for e in self.env.dataset], sorted(ROWS))
        for example in self.env.dataset:
            with self.subTest(example=example.id):
                gold = self.env.sft_completion(example)
                actions = [m["content"] for m in gold if m["role"] == "assistant"]
                self.assertEqual(len(actions), 4)
                episode = run_episode(self.env, example, lambda _messages, i: actions[i])
                self.assertEqual(list(episode.messages)[-len(gold) :][1::2], gold[1::2])
                reward = self.env.score_episode(example, episode)
                self.assertEqual((reward.score, reward.threshold), (1.0, 0.8))

    def test_the_seeds_loop_runs_as_written(self) -> None:
        from freesolo.environments import EnvironmentEpisode

        example = self.env.dataset[0]
        actions = iter(SUCCESS)
        messages = self.env.start_episode(example, "")
        response_text = ""
        for _ in range(self.env.max_episode_turns(example)):
            action = next(actions)
            messages.append({"role": "assistant", "content": action})
            result = self.env.step_episode(example, messages, action)
            if result.final_response_text is not None:
                response_text = result.final_response_text
            else:
                response_text = action
            messages.extend(result.messages)
            if result.done:
                break
        episode = EnvironmentEpisode(messages=tuple(messages), response_text=response_text)
        self.assertEqual(response_text, SUCCESS[-1])
        self.assertEqual(self.env.score_episode(example, episode).score, 1.0)


if __name__ == "__main__":
    unittest.main()
