"""The tiny policy both the server and the trainer use: a character-level tokenizer written by
hand, the ChatML template edgeroll's SDK renders, and a GPT-2-style causal LM of about 0.9 M
parameters, built from a config and initialised here (no weights are downloaded).

The tokenizer maps each printable ASCII character and newline to one id, and each ChatML special
token (`<|im_start|>`, `<|im_end|>`) to one id of its own: the text between special tokens is
encoded alone, as Hugging Face tokenizers do. `<|im_end|>` is the end-of-turn token: generation
stops on it, and it is part of the completion's ids, as a real host reports it.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from transformers import GPT2Config, GPT2LMHeadModel

PAD, IM_START, IM_END = "<|pad|>", "<|im_start|>", "<|im_end|>"
SPECIALS = [PAD, IM_START, IM_END]
ALPHABET = ["\n"] + [chr(c) for c in range(32, 127)]
VOCAB = SPECIALS + ALPHABET
ID = {token: i for i, token in enumerate(VOCAB)}
PAD_ID, IM_START_ID, IM_END_ID = ID[PAD], ID[IM_START], ID[IM_END]
CONTEXT = 512


def encode(text: str) -> list[int]:
    """Text to ids: the special tokens first, every other character on its own (unknown ones as
    `?`)."""
    ids: list[int] = []
    i = 0
    while i < len(text):
        for special in (IM_START, IM_END):
            if text.startswith(special, i):
                ids.append(ID[special])
                i += len(special)
                break
        else:
            ids.append(ID.get(text[i], ID["?"]))
            i += 1
    return ids


def decode(ids: list[int]) -> str:
    return "".join(VOCAB[i] if 0 <= i < len(VOCAB) else "?" for i in ids if i != PAD_ID)


def render(messages: list[dict], add_generation_prompt: bool = True) -> str:
    """ChatML, as edgeroll's SDK renders it for SFT rows: `<|im_start|>role\\ncontent<|im_end|>\\n`."""
    text = "".join(f"{IM_START}{m['role']}\n{m.get('content') or ''}{IM_END}\n" for m in messages)
    return text + (f"{IM_START}assistant\n" if add_generation_prompt else "")


def build_model(seed: int) -> GPT2LMHeadModel:
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=len(VOCAB),
        n_positions=CONTEXT,
        n_embd=128,
        n_layer=4,
        n_head=4,
        bos_token_id=IM_START_ID,
        eos_token_id=IM_END_ID,
        pad_token_id=PAD_ID,
        # No dropout: the trainer's logprobs must be the host's for the same weights.
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    return GPT2LMHeadModel(config)


def save(model: GPT2LMHeadModel, directory: Path, policy_version: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"policy-v{policy_version}.pt"
    torch.save(model.state_dict(), path)
    (directory / "config.json").write_text(model.config.to_json_string())
    return path


def load_initial(directory: Path) -> GPT2LMHeadModel:
    config = GPT2Config.from_dict(json.loads((directory / "config.json").read_text()))
    model = GPT2LMHeadModel(config)
    model.load_state_dict(torch.load(directory / "policy-v0.pt", weights_only=True))
    return model


def token_logprobs(model: GPT2LMHeadModel, sequences: list[list[int]]) -> torch.Tensor:
    """log p(ids[i] | ids[:i]) at every position of every sequence, 0 at the first and on the
    padding: one forward pass over the batch (right-padded, so no real token sees a pad), each
    row aligned with its sequence as edgeroll's samples are (a logprob sits on the token it
    scores)."""
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), PAD_ID)
    attention = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, s in enumerate(sequences):
        ids[row, : len(s)] = torch.tensor(s)
        attention[row, : len(s)] = 1
    logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
    picked = torch.log_softmax(logits, dim=-1).gather(2, ids[:, 1:].unsqueeze(2)).squeeze(2)
    logprobs = torch.cat([torch.zeros(len(sequences), 1), picked], dim=1)
    return logprobs * attention


def padded(rows: list[list[float]], width: int) -> torch.Tensor:
    """Per-token values (masks, logprobs, advantages) as one right-padded tensor."""
    out = torch.zeros((len(rows), width))
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r, dtype=torch.float32)
    return out


@torch.no_grad()
def generate_batch(model: GPT2LMHeadModel, prompts: list[list[int]], settings: list[dict]):
    """Samples a completion for every prompt at once, yielding after each decoding step the
    (row, token id, logprob) of every row still running. Prompts are left-padded, so each row's
    positions count from its own first token; a row stops on `<|im_end|>`, its budget or one of
    its stop strings. The logprob is the model's own (before temperature and top-p), as vLLM
    reports by default. `settings[i]` holds `temperature`, `top_p`, `budget`, `stops`, `generator`,
    and may hold `cancelled` (a threading.Event): once set, the row stops at the next step, as a
    host stops a request whose client went away, so the batch ends without running it out."""
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), PAD_ID)
    attention = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, p in enumerate(prompts):
        ids[row, width - len(p):] = torch.tensor(p)
        attention[row, width - len(p):] = 1
    positions = (attention.cumsum(1) - 1).clamp(min=0)
    out = model(input_ids=ids, attention_mask=attention, position_ids=positions, use_cache=True)
    past, logits = out.past_key_values, out.logits[:, -1]
    running = list(range(len(prompts)))
    texts = [""] * len(prompts)
    next_position = positions[:, -1] + 1
    for step in range(max(s["budget"] for s in settings)):
        running = [row for row in running if not cancelled(settings[row])]
        if not running:
            return
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        tokens = torch.full((len(prompts),), PAD_ID)
        emitted = []
        for row in running:
            s = settings[row]
            token = sample(logprobs[row], s["temperature"], s["top_p"], s["generator"])
            tokens[row] = token
            emitted.append((row, token, float(logprobs[row, token])))
        yield emitted
        still = []
        for row, token, _ in emitted:
            texts[row] += "" if token == IM_END_ID else VOCAB[token]
            s = settings[row]
            done = (token == IM_END_ID or step + 1 >= s["budget"]
                    or any(texts[row].endswith(x) for x in s["stops"]))
            if not done:
                still.append(row)
        running = still
        if not running:
            return
        # Rows that finished keep a place in the batch, fed padding that nothing attends to.
        live = torch.zeros((len(prompts), 1), dtype=torch.long)
        live[running] = 1
        attention = torch.cat([attention, live], dim=1)
        out = model(input_ids=tokens.unsqueeze(1), attention_mask=attention,
                    position_ids=next_position.unsqueeze(1), past_key_values=past, use_cache=True)
        past, logits = out.past_key_values, out.logits[:, -1]
        next_position = next_position + 1


def cancelled(settings: dict) -> bool:
    event = settings.get("cancelled")
    return event is not None and event.is_set()


def sample(logprobs: torch.Tensor, temperature: float, top_p: float, generator) -> int:
    """One token from the model's logprobs, with temperature (0: greedy) and nucleus top-p."""
    if temperature == 0:
        return int(torch.argmax(logprobs))
    probs = torch.softmax(logprobs / temperature, dim=-1)
    if top_p < 1.0:
        sorted_probs, order = torch.sort(probs, descending=True)
        keep = torch.cumsum(sorted_probs, dim=0) - sorted_probs < top_p
        probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_probs[keep])
    return int(torch.multinomial(probs, 1, generator=generator))
