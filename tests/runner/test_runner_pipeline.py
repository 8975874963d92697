"""The EAGLE-3 pipeline end to end on the CPU (issue 4, done-means 1 and 2).

A 4-layer random Llama and a word-level tokenizer are built in the test (nothing is
downloaded); eight conversations from fixtures/runner run through prepare, extract
(hf backend), vocab and train with speculators' own building blocks, behind a real
preflight against the installed speculators.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from runner_helpers import CONVERSATIONS, JOBS, write_config

from apiaudit.cli.run import run_command
from apiaudit.runner.config import STAGES

pytestmark = pytest.mark.runner


def _run(config: Path, *args: str):
    return CliRunner().invoke(run_command, [str(config), *args], catch_exceptions=False)


def _manifest(run_dir: Path, stage: str) -> dict:
    return json.loads((run_dir / stage / "manifest.json").read_text())


@pytest.fixture(scope="module")
def first_run(tiny_model, tmp_path_factory):
    workspace = tmp_path_factory.mktemp("pipeline")
    config = write_config(workspace, tiny_model)
    result = _run(config)
    assert result.exit_code == 0, result.output
    return config, workspace / "run", result.output


def test_all_four_stages_ran_and_wrote_manifests(first_run):
    _config, run_dir, output = first_run
    assert "preflight ok" in output
    for stage in STAGES:
        manifest = _manifest(run_dir, stage)
        assert manifest["stage"] == stage and manifest["outputs"], stage
        assert manifest["versions"]["speculators"] not in ("absent", None)
        assert (run_dir / stage / "stage.log").stat().st_size > 0
    assert _manifest(run_dir, "prepare")["counts"]["samples"] == len(CONVERSATIONS.read_text().splitlines())
    extract = _manifest(run_dir, "extract")
    assert extract["config"]["extract"]["captured_layers"] == [0, 1, 2, 3]
    assert extract["inputs"], "extract must record what it read"
    assert json.loads((run_dir / "preflight.json").read_text())["provider"]["name"] == "speculators"


def test_sample_files_are_what_the_trainer_reads(first_run, tiny_model):
    import torch
    from speculators.train.data import Eagle3SampleFileDataset

    _config, run_dir, _output = first_run
    samples = sorted((run_dir / "extract" / "samples").glob("data_*.pt"))
    sample = torch.load(samples[0], weights_only=True)
    assert len(sample["hidden_states"]) == 4
    assert all(h.shape == (sample["input_ids"].shape[0], 64) for h in sample["hidden_states"])
    assert 0 < int(sample["loss_mask"].sum()) < sample["loss_mask"].shape[0]
    dataset = Eagle3SampleFileDataset(max_len=256, file_list=[str(p) for p in samples])
    item = dataset[0]
    assert item["hidden_states"].shape[-1] == 3 * 64 and item["verifier_last_hidden_states"].shape[-1] == 64


def test_hf_states_match_the_models_own_hidden_state_outputs(first_run, tiny_model):
    """The aux layers equal transformers' hidden-state outputs (layer i -> hidden_states[i + 1])."""
    import torch
    from transformers import AutoModelForCausalLM

    _config, run_dir, _output = first_run
    sample = torch.load(run_dir / "extract" / "samples" / "data_0.pt", weights_only=True)
    model = AutoModelForCausalLM.from_pretrained(str(tiny_model), dtype=torch.float32).eval()
    with torch.no_grad():
        outputs = model(sample["input_ids"][None], output_hidden_states=True)
    for layer, states in zip((0, 1, 2), sample["hidden_states"][:3], strict=True):
        torch.testing.assert_close(states, outputs.hidden_states[layer + 1][0], rtol=1e-4, atol=1e-4)


def test_checkpoint_loads_back_as_eagle3_and_runs_forward(first_run):
    import torch
    from speculators.models.eagle3 import Eagle3DraftModel

    from apiaudit.runner.draft import load_draft

    _config, run_dir, _output = first_run
    checkpoint = Path(_manifest(run_dir, "train")["counts"]["checkpoint"])
    draft = load_draft(checkpoint)
    assert isinstance(draft, Eagle3DraftModel)
    assert draft.draft_vocab_size == 64 and int(draft.t2d.sum()) == 64
    sample = torch.load(run_dir / "extract" / "samples" / "data_1.pt", weights_only=True)
    hidden = torch.cat(sample["hidden_states"][:-1], dim=-1)[None]
    with torch.no_grad():
        draft_tokens = draft(hidden_states=hidden, input_ids=sample["input_ids"][None], ttt_steps=2)
    assert len(draft_tokens) == 2
    assert all(t.shape == sample["input_ids"][None].shape for t in draft_tokens)
    assert all(int(t.max()) < 64 for t in draft_tokens)  # ids in the draft vocabulary


def test_rerun_skips_every_stage_and_a_lost_sample_is_redone_alone(first_run):
    config, run_dir, _output = first_run
    samples = run_dir / "extract" / "samples"
    before = {p.name: p.stat().st_mtime_ns for p in samples.glob("data_*.pt")}

    second = _run(config)
    assert second.exit_code == 0, second.output
    assert all(f"{stage:8} up to date, skipped" in second.output for stage in STAGES), second.output

    (samples / "data_3.pt").unlink()
    third = _run(config)
    assert third.exit_code == 0, third.output
    assert "1 sample extracted, 7 reused" in third.output
    after = {p.name: p.stat().st_mtime_ns for p in samples.glob("data_*.pt")}
    assert [name for name in after if after[name] != before[name]] == ["data_3.pt"]
    # Redone in the same batch as before, the sample is the same, so nothing downstream reruns.
    assert all(f"{stage:8} up to date, skipped" in third.output for stage in ("prepare", "vocab", "train"))


def test_changed_train_config_reruns_only_train(first_run, tmp_path):
    config, run_dir, _output = first_run
    text = config.read_text().replace("epochs = 2", "epochs = 1")
    changed = config.with_name("changed.toml")
    changed.write_text(text)
    result = _run(changed, "--stage", "train")
    assert result.exit_code == 0, result.output
    assert "train    done in" in result.output and "1 stage(s) ran" in result.output
    assert _manifest(run_dir, "train")["config"]["train"]["epochs"] == 1
    # Put the first run's state back for any test that reads it later.
    assert _run(config, "--stage", "train").exit_code == 0


def test_stage_without_its_input_is_one_clear_error(tiny_model, tmp_path):
    config = write_config(tmp_path, tiny_model)
    result = _run(config, "--stage", "train")
    assert result.exit_code == 2
    assert "needs the output of extract" in result.output and "Traceback" not in result.output


def test_refuses_to_start_on_a_stale_job_script_and_starts_with_force(tiny_model, tmp_path):
    stale = JOBS / "stale_job.py"
    config = write_config(tmp_path, tiny_model, extra="", preflight=f'consumers = ["{stale}"]')
    refused = _run(config)
    assert refused.exit_code == 1
    assert "stale_job.py:" in refused.output and "ttt_steps" in refused.output
    assert "--force" in refused.output
    run_dir = tmp_path / "run"
    assert not any((run_dir / stage).exists() for stage in STAGES), "a stage started despite preflight"

    forced = _run(config, "--force", "--stage", "prepare")
    assert forced.exit_code == 0, forced.output
    assert "starting despite the blocking findings" in forced.output
    assert _manifest(run_dir, "prepare")["counts"]["samples"] > 0


def test_overlay_runs_against_the_patched_copy(tiny_model, tmp_path):
    """--overlay DIR: preflight audits the copy in DIR, and the stages import it."""
    import importlib.util
    import subprocess
    import sys

    empty = tmp_path / "overlay"
    empty.mkdir()
    result = _run(write_config(tmp_path / "a", tiny_model), "--overlay", str(empty))
    assert result.exit_code == 2 and "no speculators package" in result.output

    installed = Path(importlib.util.find_spec("speculators").origin).parent
    shutil.copytree(installed, tmp_path / "patched" / "speculators", ignore=shutil.ignore_patterns("__pycache__"))
    config = write_config(tmp_path / "b", tiny_model)
    # A fresh process: this one has imported the installed speculators already.
    command = [sys.executable, "-c", "from apiaudit.cli.run import run_command; run_command()",
               str(config), "--overlay", str(tmp_path / "patched"), "--stage", "prepare"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = tmp_path / "b" / "run"
    preflight_report = json.loads((run_dir / "preflight.json").read_text())
    assert preflight_report["provider"]["root"].startswith(str(tmp_path / "patched"))
    assert _manifest(run_dir, "prepare")["versions"]["speculators"].startswith("overlay:")
    log = (run_dir / "prepare" / "stage.log").read_text()
    assert f"speculators from {tmp_path / 'patched' / 'speculators'}" in log and "stage prepare: done" in log


def test_vllm_results_are_put_back_in_request_order():
    """Results come back sorted by request id as text; twelve requests put that out of order."""
    torch = pytest.importorskip("torch", reason="runner extra not installed: scripts/install-runner.sh")

    from apiaudit.runner.extract import in_request_order

    requests = [[i, i + 1] for i in range(12)]
    order = sorted(range(12), key=lambda i: f"req_0_{i}")
    results = [{"input_ids": torch.tensor(requests[i]), "hidden_states": [f"states {i}"]} for i in order]
    assert order != list(range(12))
    assert in_request_order(requests, results) == [[f"states {i}"] for i in range(12)]
