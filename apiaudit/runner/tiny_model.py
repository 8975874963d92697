"""A randomly initialised Llama-architecture model and its tokenizer, built locally.

Nothing is downloaded: the tokenizer is a word-level vocabulary of the conversations'
own words with a chat template; the model is `LlamaForCausalLM` with random weights.
It is what `fixtures/runner/examples/tiny-cpu.toml` points at:

    python -m apiaudit.runner.tiny_model fixtures/runner/models/tiny-llama \
        --conversations fixtures/runner/conversations.jsonl

The tests build it the same way; the GPU run (tests/runner/gpu_pipeline.py) builds a
larger one with the same code. Needs the runner extra (torch, transformers).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

SPECIALS = ("<|unk|>", "<|pad|>", "<|begin|>", "<|start|>", "<|end|>")
CHAT_TEMPLATE = (
    "{{ '<|begin|>' }}"
    "{% for message in messages %}"
    "{{ '<|start|>' + message['role'] + '\n' + message['content'] + '<|end|>\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start|>assistant\n' }}{% endif %}"
)


def words_of(conversations_file: Path) -> list[str]:
    words: set[str] = set()
    for line in conversations_file.read_text(encoding="utf-8").splitlines():
        if line.strip():
            for turn in json.loads(line)["conversations"]:
                words.update(re.findall(r"\w+|[^\w\s]+", turn["value"]))
    # The roles and the placeholders speculators' template probe uses are words too.
    words.update({"system", "user", "assistant", "USER_MSG_1", "USER_MSG_2", "ASSISTANT_MSG_1", "ASSISTANT_MSG_2"})
    return sorted(words)


def build_tokenizer(words: list[str], vocab_size: int):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(SPECIALS)}
    for word in words:
        vocab.setdefault(word, len(vocab))
    # Unused ids up to the model's vocabulary size, as real vocabularies have.
    while len(vocab) < vocab_size:
        vocab[f"<|unused_{len(vocab)}|>"] = len(vocab)
    if len(vocab) > vocab_size:
        raise ValueError(f"{len(vocab)} words do not fit a vocabulary of {vocab_size}")
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<|unk|>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="<|unk|>",
        pad_token="<|pad|>",
        bos_token="<|begin|>",
        eos_token="<|end|>",
        additional_special_tokens=["<|start|>"],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def build_model_dir(
    out: Path,
    conversations_file: Path,
    *,
    hidden_size: int = 64,
    num_layers: int = 4,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    intermediate_size: int = 128,
    vocab_size: int = 512,
    dtype: str = "float32",
    device: str = "cpu",
    seed: int = 0,
) -> Path:
    """Save a random Llama and its tokenizer to `out` (a Hugging Face model folder)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(words_of(conversations_file), vocab_size)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        max_position_embeddings=4096,
        tie_word_embeddings=False,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.device(device):
        model = LlamaForCausalLM(config)
    model.to(getattr(torch, dtype)).save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m apiaudit.runner.tiny_model", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the model folder to write")
    parser.add_argument("--conversations", type=Path, required=True, help="a .jsonl of {\"conversations\": [...]} whose words make the vocabulary")
    parser.add_argument("--hidden-size", type=int, default=64)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--vocab-size", type=int, default=512)
    args = parser.parse_args(argv)
    if not args.conversations.is_file():
        parser.error(f"no such file: {args.conversations}")
    build_model_dir(args.out, args.conversations, hidden_size=args.hidden_size, num_layers=args.layers, vocab_size=args.vocab_size)
    print(f"wrote a random Llama ({args.layers} layers, hidden {args.hidden_size}) and its tokenizer to {args.out}")
    return 0


if __name__ == "__main__":
    from apiaudit.runner.imports import run_entry_point

    raise SystemExit(run_entry_point(main, ("torch", "transformers", "tokenizers")))
