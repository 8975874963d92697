"""The same tiny pipeline with extract and train on CUDA (issue 4, done-means 3; skipped without a GPU)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from runner_helpers import write_config

from apiaudit.cli.run import run_command

pytestmark = [pytest.mark.runner, pytest.mark.gpu]


def test_pipeline_on_cuda(tiny_model, tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    config = write_config(
        tmp_path, tiny_model,
        extract='layers = [0, 1, 2]\ndtype = "bfloat16"\nbatch_size = 4\ndevice = "cuda"',
        train='epochs = 2\ntotal_seq_len = 256\ndevice = "cuda"',
    )
    result = CliRunner().invoke(run_command, [str(config)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    run_dir = tmp_path / "run"
    sample = torch.load(run_dir / "extract" / "samples" / "data_0.pt", weights_only=True)
    assert sample["hidden_states"][0].dtype == torch.bfloat16

    from apiaudit.runner.draft import load_draft

    checkpoint = json.loads((run_dir / "train" / "manifest.json").read_text())["counts"]["checkpoint"]
    draft = load_draft(checkpoint, device="cuda")
    from gpu_pipeline import padded_inputs

    hidden, input_ids = padded_inputs(sample, "cuda")
    with torch.no_grad():
        tokens = draft(hidden_states=hidden, input_ids=input_ids, ttt_steps=2)
    assert len(tokens) == 2 and tokens[0].device.type == "cuda"
