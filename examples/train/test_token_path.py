"""The policy server's token fields and the trainer's mismatch check, against a real server.

    .venv-train/bin/python -m unittest discover -s examples/train

The check must pass on the tokens the host served and fail on anything else: the same text
re-tokenized with another template, or the host's tokens scored with other weights.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request
from pathlib import Path

import torch

import tiny_policy as tp
import train

HERE = Path(__file__).resolve().parent
MESSAGES = [{"role": "user", "content": "A quick drill of sums.\nWhat is 2 + 3?"}]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chat(url: str, seed: int, stream: bool = False) -> dict:
    """One completion with vLLM's token fields; a stream is folded into the non-stream shape."""
    body = {"model": "policy", "messages": MESSAGES, "max_tokens": 24, "temperature": 1.0,
            "seed": seed, "logprobs": True, "return_token_ids": True, "stream": stream}
    request = urllib.request.Request(f"{url}/v1/chat/completions", json.dumps(body).encode(),
                                     {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        if not stream:
            reply = json.loads(response.read())
            choice = reply["choices"][0]
            return {"prompt_token_ids": reply["prompt_token_ids"], "token_ids": choice["token_ids"],
                    "logprobs": [e["logprob"] for e in choice["logprobs"]["content"]],
                    "text": choice["message"]["content"]}
        folded = {"prompt_token_ids": None, "token_ids": [], "logprobs": [], "text": ""}
        for line in response.read().decode().splitlines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            folded["prompt_token_ids"] = folded["prompt_token_ids"] or chunk.get("prompt_token_ids")
            for choice in chunk["choices"]:
                folded["token_ids"] += choice.get("token_ids", [])
                folded["logprobs"] += [e["logprob"] for e in (choice.get("logprobs") or {}).get("content", [])]
                folded["text"] += choice["delta"].get("content") or ""
        return folded


def sample_of(prompt_ids: list[int], completion_ids: list[int], logprobs: list[float]) -> dict:
    """A one-turn sample in edgeroll's layout: the prompt unmasked with logprob 0."""
    return {"token_ids": prompt_ids + completion_ids,
            "mask": [0] * len(prompt_ids) + [1] * len(completion_ids),
            "logprobs": [0.0] * len(prompt_ids) + logprobs}


class TokenPath(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.work = tempfile.TemporaryDirectory()
        cls.checkpoint = Path(cls.work.name)
        cls.model = tp.build_model(seed=3)
        tp.save(cls.model, cls.checkpoint, 0)
        port = free_port()
        cls.server = subprocess.Popen(
            [sys.executable, str(HERE / "policy_server.py"), "--checkpoint", str(cls.checkpoint),
             "--port", str(port)], cwd=HERE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        cls.url = f"http://127.0.0.1:{port}"
        for _ in range(240):
            try:
                urllib.request.urlopen(f"{cls.url}/health", timeout=1)
                return
            except OSError:
                time.sleep(0.25)
        raise RuntimeError("the policy server did not come up")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.terminate()
        cls.server.wait(timeout=10)
        cls.work.cleanup()

    def test_served_tokens_pass_the_check(self) -> None:
        served = chat(self.url, seed=1)
        self.assertEqual(served["prompt_token_ids"], tp.encode(tp.render(MESSAGES)))
        self.assertEqual(len(served["token_ids"]), len(served["logprobs"]))
        self.assertEqual(tp.decode([t for t in served["token_ids"] if t != tp.IM_END_ID]), served["text"])
        check = train.mismatch(self.model, [sample_of(served["prompt_token_ids"], served["token_ids"], served["logprobs"])])
        self.assertLess(check["mean_abs"], 1e-5)
        train.check_on_policy(check)

    def test_retokenized_text_fails_the_check(self) -> None:
        served = chat(self.url, seed=2)
        # The trainer renders the same conversation with another template ("role: " where the
        # host writes "role\n") and re-tokenizes the text: the host's logprobs no longer sit on
        # the tokens they were sampled as, even though every character is the same.
        other = "".join(f"{tp.IM_START}{m['role']}: {m['content']}{tp.IM_END}\n" for m in MESSAGES)
        prompt = tp.encode(other + f"{tp.IM_START}assistant: ")
        check = train.mismatch(self.model, [sample_of(prompt, served["token_ids"], served["logprobs"])])
        self.assertGreater(check["mean_abs"], 1e-2)
        with self.assertRaises(train.OffPolicy):
            train.check_on_policy(check)

    def test_stale_weights_fail_the_check(self) -> None:
        served = chat(self.url, seed=3)
        stale = tp.build_model(seed=4)  # the trainer holds weights the host never served
        check = train.mismatch(stale, [sample_of(served["prompt_token_ids"], served["token_ids"], served["logprobs"])])
        with self.assertRaises(train.OffPolicy):
            train.check_on_policy(check)

    def test_concurrent_requests_batch_and_match_the_unbatched_answer(self) -> None:
        alone = chat(self.url, seed=7)
        replies: dict[int, dict] = {}

        def ask(i: int) -> None:
            replies[i] = chat(self.url, seed=7 if i == 0 else 100 + i, stream=i % 2 == 1)

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # The same seed gives the same tokens alone or batched with five others, and the
        # streamed replies carry the same token fields as the others.
        self.assertEqual(replies[0]["token_ids"], alone["token_ids"])
        for i, reply in replies.items():
            check = train.mismatch(self.model, [sample_of(reply["prompt_token_ids"], reply["token_ids"], reply["logprobs"])])
            self.assertLess(check["mean_abs"], 1e-5, f"request {i}")

    def test_new_weights_are_served_with_their_version(self) -> None:
        before = chat(self.url, seed=5)
        changed = tp.build_model(seed=5)
        path = tp.save(changed, self.checkpoint, 1)
        train.post(f"{self.url}/update_weights", {"path": str(path), "policy_version": 1})
        try:
            with urllib.request.urlopen(f"{self.url}/v1/models") as response:
                self.assertEqual(json.loads(response.read())["data"][0]["policy_version"], 1)
            after = chat(self.url, seed=5)
            sample = sample_of(after["prompt_token_ids"], after["token_ids"], after["logprobs"])
            self.assertLess(train.mismatch(changed, [sample])["mean_abs"], 1e-5)
            self.assertNotEqual(before["logprobs"], after["logprobs"])
        finally:
            path = tp.save(self.model, self.checkpoint, 0)
            train.post(f"{self.url}/update_weights", {"path": str(path), "policy_version": 0})

    def test_token_in_completions_continue_from_kept_ids(self) -> None:
        # edgeroll's token-in turn: the prompt's ids from /tokenize, the completion from ids.
        tokenized = post_json(f"{self.url}/tokenize", {"model": "policy", "messages": MESSAGES,
                                                      "add_generation_prompt": True})
        prompt = tokenized["tokens"]
        self.assertEqual(prompt, tp.encode(tp.render(MESSAGES)))
        first = complete(self.url, prompt, max_tokens=6, seed=11)
        self.assertEqual(first["prompt_token_ids"], prompt)
        self.assertEqual(len(first["token_ids"]), 6)
        # A weight sync cut the turn after 6 tokens: the continuation's prompt is the prompt's ids
        # and the kept ones, under the new weights; the turn is both, each token with its logprob.
        changed = tp.build_model(seed=6)
        path = tp.save(changed, self.checkpoint, 1)
        train.post(f"{self.url}/update_weights", {"path": str(path), "policy_version": 1})
        try:
            rest = complete(self.url, prompt + first["token_ids"], max_tokens=12, seed=12)
        finally:
            path = tp.save(self.model, self.checkpoint, 0)
            train.post(f"{self.url}/update_weights", {"path": str(path), "policy_version": 0})
        self.assertEqual(rest["prompt_token_ids"], prompt + first["token_ids"])
        sample = sample_of(prompt, first["token_ids"] + rest["token_ids"], first["logprobs"] + rest["logprobs"])
        sample["policy_versions"] = [-1] * len(prompt) + [0] * 6 + [1] * len(rest["token_ids"])
        # Each version's tokens match the weights that sampled them, and only those.
        self.assertLess(train.mismatch(self.model, [sample], 0)["mean_abs"], 1e-5)
        self.assertEqual(train.mismatch(self.model, [sample], 0)["tokens"], 6)
        self.assertLess(train.mismatch(changed, [sample], 1)["mean_abs"], 1e-5)
        self.assertGreater(train.mismatch(self.model, [sample])["mean_abs"], 1e-3)

    def test_a_closed_stream_cancels_its_request(self) -> None:
        before = health(self.url)["cancelled_requests"]
        prompt = tp.encode(tp.render(MESSAGES))
        # The seed's generation runs long (seeded: the same tokens streamed or not), so it is
        # still running when the client goes away.
        whole = complete(self.url, prompt, max_tokens=400, seed=13)
        self.assertGreater(len(whole["token_ids"]), 100)
        body = {"model": "policy", "prompt": prompt, "max_tokens": 400,
                "temperature": 1.0, "seed": 13, "stream": True, "logprobs": 0}
        request = urllib.request.Request(f"{self.url}/v1/completions", json.dumps(body).encode(),
                                         {"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            response.readline()  # the first chunk: the generation is running
        # Closed, as edgeroll closes a generation it interrupts: the server notices at its next
        # token and cancels the request.
        deadline = time.monotonic() + 20
        while health(self.url)["cancelled_requests"] == before and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(health(self.url)["cancelled_requests"], before + 1)

    def test_a_cancelled_row_leaves_the_batch_at_the_next_step(self) -> None:
        cancel = threading.Event()
        prompt = tp.encode(tp.render(MESSAGES))
        settings = [{"temperature": 1.0, "top_p": 1.0, "budget": 40, "stops": [],
                     "generator": torch.Generator().manual_seed(s), "cancelled": e}
                    for s, e in ((1, cancel), (2, None))]
        emitted: dict[int, int] = {0: 0, 1: 0}
        for step, rows in enumerate(tp.generate_batch(self.model, [prompt, prompt], settings)):
            for row, _, _ in rows:
                emitted[row] += 1
            if step == 2:
                cancel.set()
        self.assertEqual(emitted[0], 3)  # steps 0, 1 and 2, then nothing
        self.assertGreater(emitted[1], 3)


def post_json(url: str, body: dict) -> dict:
    return train.post(url, body)


def health(url: str) -> dict:
    with urllib.request.urlopen(f"{url}/health", timeout=10) as response:
        return json.loads(response.read())


def complete(url: str, prompt: list[int], max_tokens: int, seed: int) -> dict:
    """A streamed `/v1/completions` from ids in vLLM's shape, folded: prompt ids, ids, logprobs."""
    body = {"model": "policy", "prompt": prompt, "max_tokens": max_tokens, "temperature": 1.0,
            "seed": seed, "logprobs": 0, "return_token_ids": True, "stream": True}
    request = urllib.request.Request(f"{url}/v1/completions", json.dumps(body).encode(),
                                     {"content-type": "application/json"})
    folded = {"prompt_token_ids": None, "token_ids": [], "logprobs": [], "text": ""}
    with urllib.request.urlopen(request, timeout=60) as response:
        for line in response.read().decode().splitlines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            for choice in json.loads(line[6:])["choices"]:
                folded["prompt_token_ids"] = folded["prompt_token_ids"] or choice.get("prompt_token_ids")
                folded["token_ids"] += choice.get("token_ids", [])
                folded["logprobs"] += (choice.get("logprobs") or {}).get("token_logprobs", [])
                folded["text"] += choice["text"]
    return folded


if __name__ == "__main__":
    torch.set_num_threads(1)
    unittest.main()
