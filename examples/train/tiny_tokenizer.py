"""The tiny policy's tokenizer (tiny_policy.encode / decode) as a Hugging Face tokenizer, for
libraries that want a `PreTrainedTokenizerBase` (TRL's GRPOTrainer takes one as processing_class).

    from tiny_tokenizer import build_tokenizer
    tokenizer = build_tokenizer()
    tokenizer("<|im_start|>user\\nhi").input_ids == tiny_policy.encode("<|im_start|>user\\nhi")
    tokenizer.decode(ids) == tiny_policy.decode(ids)

Same ids, same text: a word-level model over tiny_policy.VOCAB, fed one character at a time (the
pre-tokenizer isolates every character), with `<|pad|>`, `<|im_start|>` and `<|im_end|>` as
special tokens, matched whole before the split, as tiny_policy.encode matches them first. A
character outside the vocabulary becomes `?`, as in tiny_policy.encode. Decoding glues the tokens
back without spaces and drops `<|pad|>`, as tiny_policy.decode does; `skip_special_tokens=True`
also drops `<|im_start|>` and `<|im_end|>` (what TRL does to show a completion's text). The chat
template is tiny_policy.render's ChatML. Needs only `tokenizers` and `transformers`.
"""

from __future__ import annotations

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

import tiny_policy as tp

# ChatML exactly as tiny_policy.render writes it (content None renders as "").
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + (message['content'] or '') + '<|im_end|>\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def build_backend() -> Tokenizer:
    """The `tokenizers` object: vocabulary ids are tiny_policy's own ids."""
    backend = Tokenizer(models.WordLevel(vocab=dict(tp.ID), unk_token="?"))
    # `[\s\S]`, not `.`: the regex engine's `.` does not match a newline, which is in the vocab.
    backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    # Fuse glues the characters back together; the pad token decodes to nothing.
    backend.decoder = decoders.Sequence([decoders.Replace(tp.PAD, ""), decoders.Fuse()])
    backend.add_special_tokens(tp.SPECIALS)
    return backend


def build_tokenizer() -> PreTrainedTokenizerFast:
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=build_backend(),
        pad_token=tp.PAD,
        bos_token=tp.IM_START,
        eos_token=tp.IM_END,  # the end-of-turn token: generation stops on it
        # No unk_token here: it would make "?" special, and skip_special_tokens would drop every
        # question mark. The word-level model maps unknown characters to "?" on its own.
        padding_side="left",  # TRL asks for left padding on its processing class
        model_max_length=tp.CONTEXT,
        clean_up_tokenization_spaces=False,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer
