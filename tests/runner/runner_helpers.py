"""Helpers the runner tests share (a module of its own: every test folder has a conftest)."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runner"
CONVERSATIONS = FIXTURES / "conversations.jsonl"
JOBS = FIXTURES / "jobs"


def write_config(directory: Path, model: Path, *, extra: str = "", **sections: str) -> Path:
    """A runner config for the tiny model; `sections` replace whole sections' bodies."""
    body = {
        "data": f'conversations = "{CONVERSATIONS}"\nseq_length = 128',
        "extract": 'layers = [0, 1, 2]\ndtype = "float32"\nbatch_size = 4\ndevice = "cpu"',
        "vocab": "draft_vocab_size = 64",
        "train": 'epochs = 2\ntotal_seq_len = 256\ndevice = "cpu"',
    }
    body.update(sections)
    text = f'run_dir = "run"\n{extra}\n[model]\npath = "{model}"\n'
    text += "".join(f"\n[{name}]\n{content}\n" for name, content in body.items())
    path = directory / "runner.toml"
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
