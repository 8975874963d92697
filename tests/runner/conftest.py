"""Fixtures of the runner tests: a tiny random Llama built locally, and configs around it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "runner"
CONVERSATIONS = FIXTURES / "conversations.jsonl"
JOBS = FIXTURES / "jobs"

sys.path.insert(0, str(Path(__file__).resolve().parent))


def runner_extra_missing() -> list[str]:
    from apiaudit.runner.imports import missing_runner_modules

    return missing_runner_modules()


@pytest.fixture
def needs_runner_extra():
    missing = runner_extra_missing()
    if missing:
        pytest.skip(f"runner extra not installed (missing {', '.join(missing)}): scripts/install-runner.sh")


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A 4-layer, hidden-64 random Llama with a word-level tokenizer and a chat template."""
    missing = runner_extra_missing()
    if missing:
        pytest.skip(f"runner extra not installed (missing {', '.join(missing)}): scripts/install-runner.sh")
    from tiny_llama import build_model_dir

    return build_model_dir(tmp_path_factory.mktemp("tiny-llama") / "model", CONVERSATIONS)


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
