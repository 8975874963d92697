"""Stage 1, prepare: conversations -> token ids and loss masks over the assistant turns.

Loading and tokenizing are speculators' own (`load_raw_dataset`, `build_eagle3_dataset`):
its chat-template handling decides which tokens the draft learns from.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from apiaudit.errors import InputError
from apiaudit.infra.words import counted
from apiaudit.runner.config import RunConfig
from apiaudit.runner.context import StageContext, StageResult
from apiaudit.runner.imports import allow_data_generation_without_vllm
from apiaudit.runner.manifest import fingerprint_files

DATASET_DIR = "dataset"
# Tokenizer files a model folder may hold; whichever exist are inputs of this stage.
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "chat_template.json",
    "tokenizer.model",
    "vocab.json",
    "merges.txt",
)


def prepare_config(config: RunConfig) -> dict:
    return {"data": config.section("data"), "model": str(config.model.path)}


def prepare_inputs(config: RunConfig) -> dict[str, str]:
    inputs = fingerprint_files([config.model.path / name for name in TOKENIZER_FILES], config.run_dir)
    conversations = Path(config.data.conversations)
    if conversations.is_file():
        inputs.update(fingerprint_files([conversations], config.run_dir))
    else:
        inputs["dataset"] = config.data.conversations
    return inputs


def run_prepare(ctx: StageContext) -> StageResult:
    import datasets
    from transformers import AutoTokenizer

    allow_data_generation_without_vllm()
    from speculators.data_generation.preprocessing import (
        build_eagle3_dataset,
        load_raw_dataset,
    )

    config = ctx.config
    datasets.disable_progress_bars()
    ctx.reporter.stage_started("prepare", None, "conversations")

    tokenizer = AutoTokenizer.from_pretrained(str(config.model.path))
    if getattr(tokenizer, "chat_template", None) is None:
        raise InputError(f"model.path: the tokenizer in {config.model.path} has no chat template")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token

    raw = load_raw_dataset(config.data.conversations, num_proc=1, cache_dir=str(ctx.cache_dir / "datasets"))
    raw = raw.shuffle(seed=config.data.seed)
    if config.data.max_samples is not None and len(raw) > config.data.max_samples:
        raw = raw.select(range(config.data.max_samples))
    ctx.log.info("loaded %d conversations from %s", len(raw), config.data.conversations)

    prepared = build_eagle3_dataset(
        dataset=raw,
        tokenizer=tokenizer,
        max_length=config.data.seq_length,
        num_proc=config.data.num_proc,
    )
    # speculators truncates only on its regex path; cut every sample to seq_length here.
    seq_length = config.data.seq_length
    prepared = prepared.with_format(None).map(
        lambda row: {"input_ids": row["input_ids"][:seq_length], "loss_mask": row["loss_mask"][:seq_length]}
    )
    prepared = prepared.filter(lambda row: len(row["input_ids"]) > 1)
    if len(prepared) == 0:
        raise InputError(f"data.conversations: no usable conversation in {config.data.conversations}")
    ctx.reporter.advance(len(raw))

    out = ctx.stage_dir / DATASET_DIR
    if out.exists():
        shutil.rmtree(out)
    prepared.save_to_disk(str(out))
    trainable = sum(sum(mask) for mask in prepared["loss_mask"])
    tokens = sum(len(ids) for ids in prepared["input_ids"])
    ctx.log.info("wrote %d samples (%d tokens, %d trainable) to %s", len(prepared), tokens, trainable, out)
    return StageResult(
        outputs=sorted(p for p in out.rglob("*") if p.is_file()),
        counts={"conversations": len(raw), "samples": len(prepared), "tokens": tokens, "trainable_tokens": trainable},
        summary=f"{counted(len(prepared), 'sample')}, {counted(tokens, 'token')} ({trainable} trainable)",
    )


class PreparedSamples:
    """The prepared samples, read straight from the saved Arrow table as NumPy arrays.

    Not through datasets' torch or numpy formatters: they import torchvision's video
    reader whenever torchvision is installed, and releases of the two that do not match
    fail there.
    """

    def __init__(self, stage_dir: Path) -> None:
        from datasets import load_from_disk

        table = load_from_disk(str(stage_dir / DATASET_DIR)).data
        self.input_ids = _list_column(table, "input_ids")
        self.loss_mask = _list_column(table, "loss_mask")

    def __len__(self) -> int:
        return len(self.input_ids)

    def length(self, index: int) -> int:
        return int(self.input_ids[index].shape[0])

    def sample_ids(self, index: int) -> list[int]:
        """One sample's token ids as plain integers (what a completion request sends)."""
        return [int(token) for token in self.input_ids[index]]

    def sample(self, index: int) -> dict:
        """One sample as the tensors speculators' code reads (input_ids, loss_mask)."""
        import torch

        return {
            "input_ids": torch.tensor(self.input_ids[index], dtype=torch.long),
            "loss_mask": torch.tensor(self.loss_mask[index], dtype=torch.long),
        }


def load_prepared(stage_dir: Path) -> PreparedSamples:
    return PreparedSamples(stage_dir)


def _list_column(table, name: str) -> list:
    """A column of integer lists as one NumPy array per row (views into the Arrow buffers)."""
    rows: list = []
    for chunk in table.column(name).chunks:
        values = chunk.values.to_numpy(zero_copy_only=False)
        offsets = chunk.offsets.to_numpy()
        rows.extend(values[offsets[i] : offsets[i + 1]] for i in range(len(chunk)))
    return rows
