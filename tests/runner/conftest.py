"""Fixtures of the runner tests: a tiny random Llama built locally, and configs around it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from runner_helpers import CONVERSATIONS  # noqa: E402


def runner_extra_missing() -> list[str]:
    from apiaudit.runner.imports import missing_runner_modules

    return missing_runner_modules()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A 4-layer, hidden-64 random Llama with a word-level tokenizer and a chat template."""
    missing = runner_extra_missing()
    if missing:
        pytest.skip(f"runner extra not installed (missing {', '.join(missing)}): scripts/install-runner.sh")
    from tiny_llama import build_model_dir

    return build_model_dir(tmp_path_factory.mktemp("tiny-llama") / "model", CONVERSATIONS)
