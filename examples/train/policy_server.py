"""An OpenAI-compatible inference server around the tiny policy, in vLLM's wire format.

    python3 examples/train/policy_server.py --checkpoint DIR --port 8100

`POST /v1/chat/completions` renders the messages with ChatML, samples with `temperature` and
`top_p` up to `max_tokens` (or `max_completion_tokens`), stops on `<|im_end|>` or a `stop`
string, and, when asked, answers with vLLM's token fields: `prompt_token_ids` on the response
(in the first chunk of a stream), `token_ids` on the choice, and one `logprobs.content[]` entry
per completion token. Like vLLM's default (`--logprobs-mode raw_logprobs`), a token's logprob is
the model's own, before temperature and top-p. Streamed or not.

`POST /v1/completions` with `prompt` as token ids samples from those ids (edgeroll's token-in
generation), answering with vLLM's `CompletionLogProbs` and the same token fields; `POST /tokenize`
renders `messages` (or takes `prompt` text) and answers its ids, as vLLM's does. A client that
closes a stream (edgeroll interrupting generations for a weight sync) cancels its request: the
batch stops running it at the next token, so new weights can load at once.

`POST /update_weights {"path", "policy_version"}` loads a checkpoint the trainer wrote, between
batches; `GET /v1/models` reports the policy version served.
"""

from __future__ import annotations

import argparse
import json
import queue
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import torch

import tiny_policy as tp

MODEL_NAME = "policy"


class Policy:
    """The model behind a micro-batching scheduler: requests that arrive while a batch runs wait
    for the next one, and each batch decodes all of its requests together (one forward pass a
    token for the whole batch, as a real host batches), each with its own sampling settings."""

    def __init__(self, checkpoint: Path, max_batch: int, token_ms: float = 0.0) -> None:
        self.model = tp.load_initial(checkpoint).eval()
        self.version = 0
        self.cancelled = 0  # requests whose client went away mid-stream (`GET /health`)
        self.max_batch = max_batch
        # A decoding step takes at least this long: the per-token latency of a larger model on
        # an accelerator, for runs that need generations to outlast the trainer's update.
        self.token_s = token_ms / 1000
        self.pending: list[tuple[list[int], dict, queue.SimpleQueue]] = []
        self.arrived = threading.Condition()
        self.weights = threading.Lock()  # held by a batch, so new weights land between batches
        threading.Thread(target=self.schedule, daemon=True).start()

    def update(self, path: str, version: int) -> None:
        state = torch.load(path, weights_only=True)
        with self.weights:
            self.model.load_state_dict(state)
            self.version = version

    def generate(self, prompt: list[int], request: dict) -> "Generation":
        stops = request.get("stop") or []
        settings = {
            "temperature": float(request.get("temperature", 1.0)),
            "top_p": float(request.get("top_p", 1.0)),
            "budget": budget_of(request),
            "stops": [stops] if isinstance(stops, str) else stops,
            "generator": torch.Generator().manual_seed(int(request["seed"])) if "seed" in request else None,
            "cancelled": threading.Event(),
        }
        generation = Generation(settings)
        with self.arrived:
            self.pending.append((prompt, settings, generation.out))
            self.arrived.notify()
        return generation

    def schedule(self) -> None:
        while True:
            with self.arrived:
                while not self.pending:
                    self.arrived.wait()
                batch, self.pending = self.pending[: self.max_batch], self.pending[self.max_batch:]
            try:
                with self.weights:
                    steps = tp.generate_batch(self.model, [p for p, _, _ in batch], [s for _, s, _ in batch])
                    began = time.monotonic()
                    for emitted in steps:
                        if self.token_s:
                            time.sleep(max(0.0, began + self.token_s - time.monotonic()))
                        for row, token, logprob in emitted:
                            batch[row][2].put((token, logprob))
                        began = time.monotonic()
                for _, _, out in batch:
                    out.put(None)
            except Exception as error:  # a failed batch fails its requests, not the server
                for _, _, out in batch:
                    out.put(error)


class Generation:
    """One request in the scheduler: iterates (token id, logprob) as each token is sampled;
    `cancel()` stops it at the batch's next step."""

    def __init__(self, settings: dict) -> None:
        self.settings = settings
        self.out: queue.SimpleQueue = queue.SimpleQueue()

    def __iter__(self):
        while (item := self.out.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            yield item

    def cancel(self) -> None:
        self.settings["cancelled"].set()

    @property
    def cancelled(self) -> bool:
        return self.settings["cancelled"].is_set()


def budget_of(request: dict) -> int:
    return int(request.get("max_completion_tokens") or request.get("max_tokens") or 64)


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
            self.reply(200, {"ok": True, "policy_version": self.policy.version,
                             "cancelled_requests": self.policy.cancelled})
        else:
            self.reply(404, {"error": {"message": f"no route GET {self.path}"}})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        if self.path == "/update_weights":
            self.policy.update(body["path"], int(body["policy_version"]))
            self.reply(200, {"ok": True, "policy_version": self.policy.version})
        elif self.path == "/tokenize":
            self.tokenize(body)
        elif self.path.endswith("/chat/completions"):
            self.chat(body)
        elif self.path.endswith("/completions"):
            self.complete(body)
        else:
            self.reply(404, {"error": {"message": f"no route POST {self.path}"}})

    def too_long(self, prompt: list[int], request: dict) -> bool:
        budget = budget_of(request)
        if len(prompt) + budget <= tp.CONTEXT:
            return False
        self.reply(400, {"error": {"message": f"This model's maximum context length is {tp.CONTEXT} tokens. However, you requested {len(prompt) + budget} tokens.", "type": "BadRequestError"}})
        return True

    def tokenize(self, request: dict) -> None:
        """vLLM's `POST /tokenize`: `messages` through the chat template, or `prompt` as text."""
        if "messages" in request:
            text = tp.render(request["messages"], bool(request.get("add_generation_prompt", True)))
        else:
            text = request.get("prompt", "")
        tokens = tp.encode(text)
        self.reply(200, {"count": len(tokens), "max_model_len": tp.CONTEXT, "tokens": tokens,
                         "token_strs": None})

    def open_stream(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True

    def sampled(self, steps, send) -> list[tuple[int, float]]:
        """Streams each sampled token with `send`; a client that went away (edgeroll interrupting
        a generation for a weight sync) cancels the request, so its batch stops running it."""
        tokens = []
        try:
            for token, lp in steps:
                tokens.append((token, lp))
                send(token, lp)
        except (BrokenPipeError, ConnectionResetError):
            steps.cancel()
            self.policy.cancelled += 1
        return tokens

    def chat(self, request: dict) -> None:
        prompt = tp.encode(tp.render(request["messages"]))
        if self.too_long(prompt, request):
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
        self.open_stream()

        def send(chunk: dict) -> None:
            data = {**head, "object": "chat.completion.chunk", **chunk}
            self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

        send({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                           "logprobs": None, "finish_reason": None}],
              **({"prompt_token_ids": prompt} if ids else {})})
        tokens = self.sampled(steps, lambda token, lp: send({"choices": [{
            "index": 0,
            "delta": {"content": "" if token == tp.IM_END_ID else tp.VOCAB[token]},
            **({"logprobs": {"content": [logprob_entry(token, lp)]}} if logprobs else {}),
            **({"token_ids": [token]} if ids else {}),
            "finish_reason": None,
        }]}))
        if steps.cancelled:
            return
        send({"choices": [{"index": 0, "delta": {}, "finish_reason": finish_of(tokens)}]})
        if (request.get("stream_options") or {}).get("include_usage"):
            send({"choices": [], "usage": usage(prompt, tokens)})
        self.wfile.write(b"data: [DONE]\n\n")

    def complete(self, request: dict) -> None:
        """vLLM's `/v1/completions` from token ids (edgeroll's token-in generation, and the
        continuation of a turn a weight sync interrupted): `prompt` is a list of ids, `logprobs: 0`
        asks for each sampled token's own, `return_token_ids` puts `prompt_token_ids` (first
        chunk) and `token_ids` on the choice."""
        prompt = request.get("prompt")
        if isinstance(prompt, str):
            prompt = tp.encode(prompt)
        if not (isinstance(prompt, list) and all(isinstance(t, int) and 0 <= t < len(tp.VOCAB) for t in prompt)):
            self.reply(400, {"error": {"message": "prompt must be text or a list of token ids of this model", "type": "BadRequestError"}})
            return
        if self.too_long(prompt, request):
            return
        ids = request.get("return_token_ids") is True
        logprobs = request.get("logprobs") is not None
        head = {"id": f"cmpl-policy-{time.monotonic_ns()}", "created": int(time.time()),
                "model": MODEL_NAME, "object": "text_completion"}

        def choice(tokens: list[tuple[int, float]], first: bool, finish: str | None) -> dict:
            return {"index": 0, "text": text_of(tokens),
                    "logprobs": completion_logprobs(tokens) if logprobs else None,
                    "finish_reason": finish, "stop_reason": None,
                    **({"prompt_token_ids": prompt} if ids and first else {}),
                    **({"token_ids": [t for t, _ in tokens]} if ids else {})}

        steps = self.policy.generate(prompt, request)
        if not request.get("stream"):
            tokens = list(steps)
            self.reply(200, {**head, "choices": [choice(tokens, True, finish_of(tokens))],
                             "usage": usage(prompt, tokens)})
            return
        self.open_stream()

        def send(chunk: dict) -> None:
            self.wfile.write(f"data: {json.dumps({**head, **chunk})}\n\n".encode())
            self.wfile.flush()

        first = [True]

        def token_chunk(token: int, lp: float) -> None:
            send({"choices": [choice([(token, lp)], first[0], None)]})
            first[0] = False

        tokens = self.sampled(steps, token_chunk)
        if steps.cancelled:
            return
        send({"choices": [choice([], first[0], finish_of(tokens))]})
        if (request.get("stream_options") or {}).get("include_usage"):
            send({"choices": [], "usage": usage(prompt, tokens)})
        self.wfile.write(b"data: [DONE]\n\n")


def completion_logprobs(tokens: list[tuple[int, float]]) -> dict:
    """vLLM's `CompletionLogProbs` for `logprobs: 0`: each token's text, offset and own logprob,
    its `top_logprobs` the sampled token alone."""
    texts = [tp.VOCAB[t] for t, _ in tokens]
    offsets, at = [], 0
    for text in texts:
        offsets.append(at)
        at += len(text)
    return {"text_offset": offsets, "token_logprobs": [lp for _, lp in tokens], "tokens": texts,
            "top_logprobs": [{text: lp} for text, (_, lp) in zip(texts, tokens)]}


class Server(ThreadingHTTPServer):
    """A thread a connection, and room in the listen queue for a burst of them: a run resuming
    after an interrupting sync sends every continuation and tokenizer call at once, and the
    standard library's queue of 5 drops the rest, whose clients then wait out TCP's SYN
    retransmits (1, 2, 4, 8, 16 s ...): /tokenize calls took 27 to 107 s that way."""

    request_queue_size = 1024
    daemon_threads = True


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
    parser.add_argument("--max-batch", type=int, default=64)
    parser.add_argument("--token-ms", type=float, default=0.0,
                        help="the least time a decoding step takes (a larger model's per-token latency)")
    args = parser.parse_args()
    torch.set_num_threads(1)  # one core for the model; the other for the Worker
    Handler.policy = Policy(args.checkpoint, args.max_batch, args.token_ms)
    server = Server(("127.0.0.1", args.port), Handler)
    print(f"policy server on http://127.0.0.1:{args.port}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
