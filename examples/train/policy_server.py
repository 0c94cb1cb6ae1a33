"""An OpenAI-compatible inference server around the tiny policy, in vLLM's wire format.

    python3 examples/train/policy_server.py --checkpoint DIR --port 8100

`POST /v1/chat/completions` renders the messages with ChatML, samples with `temperature` and
`top_p` up to `max_tokens` (or `max_completion_tokens`), stops on `<|im_end|>` or a `stop`
string, and, when asked, answers with vLLM's token fields: `prompt_token_ids` on the response
(in the first chunk of a stream), `token_ids` on the choice, and one `logprobs.content[]` entry
per completion token. Like vLLM's default (`--logprobs-mode raw_logprobs`), a token's logprob is
the model's own, before temperature and top-p. Streamed or not.

`POST /update_weights {"path", "policy_version"}` loads a checkpoint the trainer wrote, between
requests; `GET /v1/models` reports the policy version served.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import torch

import tiny_policy as tp

MODEL_NAME = "policy"


class Policy:
    """The model, one generation at a time (a lock: a CPU has no room for batching here)."""

    def __init__(self, checkpoint: Path) -> None:
        self.model = tp.load_initial(checkpoint).eval()
        self.version = 0
        self.lock = threading.Lock()

    def update(self, path: str, version: int) -> None:
        state = torch.load(path, weights_only=True)
        with self.lock:
            self.model.load_state_dict(state)
            self.version = version

    @torch.no_grad()
    def generate(self, prompt: list[int], request: dict):
        """Yields (token id, logprob) as each token is sampled."""
        temperature = float(request.get("temperature", 1.0))
        top_p = float(request.get("top_p", 1.0))
        budget = int(request.get("max_completion_tokens") or request.get("max_tokens") or 64)
        stops = request.get("stop") or []
        stops = [stops] if isinstance(stops, str) else stops
        generator = torch.Generator().manual_seed(int(request["seed"])) if "seed" in request else None
        with self.lock:
            out = self.model(torch.tensor([prompt]), use_cache=True)
            past, logits = out.past_key_values, out.logits[0, -1]
            text = ""
            for _ in range(budget):
                logprobs = torch.log_softmax(logits.float(), dim=-1)
                token = sample(logprobs, temperature, top_p, generator)
                yield token, float(logprobs[token])
                if token == tp.IM_END_ID:
                    return
                text += tp.VOCAB[token]
                if any(text.endswith(s) for s in stops):
                    return
                out = self.model(torch.tensor([[token]]), past_key_values=past, use_cache=True)
                past, logits = out.past_key_values, out.logits[0, -1]


def sample(logprobs: torch.Tensor, temperature: float, top_p: float, generator) -> int:
    if temperature == 0:
        return int(torch.argmax(logprobs))
    probs = torch.softmax(logprobs / temperature, dim=-1)
    if top_p < 1.0:
        sorted_probs, order = torch.sort(probs, descending=True)
        keep = torch.cumsum(sorted_probs, dim=0) - sorted_probs < top_p
        probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_probs[keep])
    return int(torch.multinomial(probs, 1, generator=generator))


def logprob_entry(token: int, logprob: float) -> dict:
    text = tp.VOCAB[token]
    return {"token": text, "logprob": logprob, "bytes": list(text.encode()), "top_logprobs": []}


class Handler(BaseHTTPRequestHandler):
    policy: Policy
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet: the trainer prints the progress
        pass

    def reply(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self.reply(200, {"object": "list", "data": [
                {"id": MODEL_NAME, "object": "model", "policy_version": self.policy.version}]})
        elif self.path == "/health":
            self.reply(200, {"ok": True, "policy_version": self.policy.version})
        else:
            self.reply(404, {"error": {"message": f"no route GET {self.path}"}})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        if self.path == "/update_weights":
            self.policy.update(body["path"], int(body["policy_version"]))
            self.reply(200, {"ok": True, "policy_version": self.policy.version})
        elif self.path.endswith("/chat/completions"):
            self.chat(body)
        else:
            self.reply(404, {"error": {"message": f"no route POST {self.path}"}})

    def chat(self, request: dict) -> None:
        prompt = tp.encode(tp.render(request["messages"]))
        budget = int(request.get("max_completion_tokens") or request.get("max_tokens") or 64)
        if len(prompt) + budget > tp.CONTEXT:
            self.reply(400, {"error": {"message": f"This model's maximum context length is {tp.CONTEXT} tokens. However, you requested {len(prompt) + budget} tokens.", "type": "BadRequestError"}})
            return
        ids = request.get("return_token_ids") is True
        logprobs = request.get("logprobs") is True
        head = {"id": f"chatcmpl-policy-{time.monotonic_ns()}", "created": int(time.time()),
                "model": MODEL_NAME}
        steps = self.policy.generate(prompt, request)
        if not request.get("stream"):
            tokens = list(steps)
            self.reply(200, {**head, "object": "chat.completion", "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text_of(tokens)},
                "logprobs": {"content": [logprob_entry(t, lp) for t, lp in tokens]} if logprobs else None,
                "finish_reason": finish_of(tokens),
                **({"token_ids": [t for t, _ in tokens]} if ids else {}),
            }], "usage": usage(prompt, tokens), **({"prompt_token_ids": prompt} if ids else {})})
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()

        def send(chunk: dict) -> None:
            data = {**head, "object": "chat.completion.chunk", **chunk}
            self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())

        send({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                           "logprobs": None, "finish_reason": None}],
              **({"prompt_token_ids": prompt} if ids else {})})
        tokens = []
        for token, lp in steps:
            tokens.append((token, lp))
            send({"choices": [{
                "index": 0,
                "delta": {"content": "" if token == tp.IM_END_ID else tp.VOCAB[token]},
                **({"logprobs": {"content": [logprob_entry(token, lp)]}} if logprobs else {}),
                **({"token_ids": [token]} if ids else {}),
                "finish_reason": None,
            }]})
        send({"choices": [{"index": 0, "delta": {}, "finish_reason": finish_of(tokens)}]})
        if (request.get("stream_options") or {}).get("include_usage"):
            send({"choices": [], "usage": usage(prompt, tokens)})
        self.wfile.write(b"data: [DONE]\n\n")
        self.close_connection = True


def text_of(tokens: list[tuple[int, float]]) -> str:
    return tp.decode([t for t, _ in tokens if t != tp.IM_END_ID])


def finish_of(tokens: list[tuple[int, float]]) -> str:
    return "stop" if tokens and tokens[-1][0] == tp.IM_END_ID else "length"


def usage(prompt: list[int], tokens: list) -> dict:
    return {"prompt_tokens": len(prompt), "completion_tokens": len(tokens),
            "total_tokens": len(prompt) + len(tokens)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--port", type=int, default=8100)
    args = parser.parse_args()
    torch.set_num_threads(1)  # one core for the model; the other for the Worker
    Handler.policy = Policy(args.checkpoint)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"policy server on http://127.0.0.1:{args.port}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
