"""The server line's extract stage end to end on the CPU, `vllm serve` played by a stub.

The tiny Llama's conversations are prepared by speculators' own preprocessing, then sent
to tests/runner/stub_vllm_server.py (started by the runner as the server's command) one
request per sample: the files land in speculators 0.7+'s offline layout, the manifest
records the server's argv and version, a rerun sends only the requests whose file is
missing, a reply without what the client reads stops the run with one line, the launch
audit's blocking findings stop it before the server starts, and Ctrl-C leaves no process.
"""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from runner_helpers import write_config

from apiaudit.cli.run import run_command
from apiaudit.findings import Finding, Severity
from apiaudit.runner.config import load_config
from apiaudit.runner.context import StageFailed
from apiaudit.runner.pipeline import run_pipeline
from apiaudit.runner.server import LaunchRefused, read_safetensors_header

pytestmark = pytest.mark.runner

STUB = Path(__file__).resolve().parent / "stub_vllm_server.py"
LAYERS = [0, 1, 2]


def _config(workspace: Path, model: Path, *stub_options: str, concurrency: int = 3) -> Path:
    command = json.dumps([sys.executable, str(STUB), *stub_options])
    return write_config(
        workspace, model,
        extract=f'backend = "vllm-server"\nlayers = {LAYERS}\ndtype = "float32"',
        server=f"command = {command}\nstartup_timeout_s = 30\nshutdown_grace_s = 5\nconcurrency = {concurrency}",
    )


def _requests(log: Path) -> list[list[int]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _manifest(run_dir: Path, stage: str) -> dict:
    return json.loads((run_dir / stage / "manifest.json").read_text())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(scope="module")
def served(tiny_model, tmp_path_factory):
    """prepare, extract (through the stub), vocab: the first run, with preflight, through the CLI."""
    workspace = tmp_path_factory.mktemp("served")
    requests = workspace / "requests.jsonl"
    config = _config(workspace, tiny_model, "--requests-log", str(requests), "--pid-dir", str(workspace / "pids"),
                     "--spawn-child")
    result = CliRunner().invoke(run_command, [str(config), "--stage", "prepare", "--stage", "extract",
                                              "--stage", "vocab", "--cache-dir", str(workspace / "cache")],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return config, workspace / "run", requests


def test_every_sample_has_its_file_in_speculators_layout(served, tiny_model):
    from datasets import load_from_disk

    _config_path, run_dir, requests = served
    samples = _manifest(run_dir, "prepare")["counts"]["samples"]
    hs = run_dir / "extract" / "hidden_states"
    assert sorted(p.name for p in hs.iterdir()) == sorted(f"hs_{i}.safetensors" for i in range(samples))
    data = load_from_disk(str(run_dir / "extract" / "data"))
    assert set(data.column_names) >= {"input_ids", "loss_mask", "seq_len"}
    # One preflight request (a few tokens), then one request per sample, each with that sample's tokens.
    sent = _requests(requests)
    assert len(sent) == samples + 1 and len(sent[0]) == 4
    for index in range(samples):
        ids = [int(t) for t in data[index]["input_ids"]]
        assert int(data[index]["seq_len"]) == len(ids)
        header = read_safetensors_header(hs / f"hs_{index}.safetensors")
        assert header["hidden_states"]["shape"] == [len(ids), 4, 64]
        assert ids in sent
    assert not any((run_dir / "extract" / "server-storage").iterdir()), "every file was moved out of the storage"


def test_states_are_the_servers_for_that_sample(served):
    """hs_N holds what the server wrote for sample N's prompt (the stub's states are a function of the tokens)."""
    from datasets import load_from_disk
    from safetensors.numpy import load_file

    sys.path.insert(0, str(STUB.parent))
    from stub_vllm_server import hidden_states_for

    _config_path, run_dir, _requests_log = served
    data = load_from_disk(str(run_dir / "extract" / "data"))
    ids = [int(t) for t in data[2]["input_ids"]]
    loaded = load_file(str(run_dir / "extract" / "hidden_states" / "hs_2.safetensors"))
    assert loaded["token_ids"].tolist() == ids
    expected = struct.unpack(f"<{len(ids) * 4 * 64}f", hidden_states_for(ids, [1, 2, 3, 4], 64))
    assert loaded["hidden_states"].reshape(-1).tolist() == pytest.approx(list(expected))


def test_manifest_records_the_server(served):
    _config_path, run_dir, _requests_log = served
    manifest = _manifest(run_dir, "extract")
    server = manifest["counts"]["server"]
    argv = server["argv"]
    assert argv[:2] == [sys.executable, str(STUB)]
    assert json.loads(argv[argv.index("--speculative-config") + 1])["method"] == "extract_hidden_states"
    kv = json.loads(argv[argv.index("--kv-transfer-config") + 1])
    assert kv["kv_connector"] == "ExampleHiddenStatesConnector"
    assert kv["kv_connector_extra_config"]["shared_storage_path"] == str(run_dir / "extract" / "server-storage")
    assert server["version"] == "stub" and server["started"] is True
    assert server["client"] == "http (the vllm_client contract)"  # speculators 0.4 has no vllm_client
    assert manifest["versions"]["speculators"] not in ("absent", None)
    assert manifest["config"]["server"]["connector"] == "ExampleHiddenStatesConnector"
    assert manifest["config"]["extract"]["backend"] == "vllm-server"
    assert manifest["counts"]["extracted"] == manifest["counts"]["samples"] and manifest["counts"]["reused"] == 0
    assert (run_dir / "extract" / "server.log").read_text().startswith(f"$ {sys.executable} {STUB}")


def test_the_server_is_gone_after_the_run(served):
    _config_path, run_dir, _requests_log = served
    pids = run_dir.parent / "pids"
    for name in ("server.pid", "child.pid"):
        assert _wait_gone(int((pids / name).read_text())), name


def test_rerun_sends_only_the_missing_requests(served):
    config_path, run_dir, requests = served
    config = load_config(config_path)
    before = len(_requests(requests))
    samples = _manifest(run_dir, "prepare")["counts"]["samples"]
    for index in (1, 3):
        (run_dir / "extract" / "hidden_states" / f"hs_{index}.safetensors").unlink()
    summary = run_pipeline(config, only=["extract"], preflight=False)
    assert summary.outcome("extract").status == "ran"
    sent = _requests(requests)[before:]
    assert len(sent) == 1 + 2, "the preflight request and the two missing samples"
    counts = _manifest(run_dir, "extract")["counts"]
    assert (counts["extracted"], counts["reused"]) == (2, samples - 2)
    # Unchanged: nothing is sent and the server does not start.
    summary = run_pipeline(config, only=["extract"], preflight=False)
    assert summary.outcome("extract").status == "skipped"
    assert len(_requests(requests)) == before + 3


@pytest.mark.parametrize(("mode", "missing"), [
    ("no-kv", "reply-shape preflight: the completion reply has no kv_transfer_params"),
    ("no-path", "reply-shape preflight: the completion reply's kv_transfer_params has no hidden_states_path"),
    ("no-file", "reply-shape preflight: the file the reply names does not exist"),
    ("bad-shape", "reply-shape preflight: "),
])
def test_reply_shape_preflight_stops_the_run_with_one_line(served, tmp_path, tiny_model, mode, missing):
    """Before the dataset is sent, a reply that lacks what the client reads stops the run (exit 1, one line)."""
    _config_path, run_dir, _requests_log = served
    requests = tmp_path / "requests.jsonl"
    config_path = _config(tmp_path, tiny_model, "--mode", mode, "--requests-log", str(requests),
                          "--pid-dir", str(tmp_path / "pids"))
    # The prepared samples of the first run, so only extract runs here.
    _copy_stage(run_dir, tmp_path / "run", "prepare")
    config = load_config(config_path)
    with pytest.raises(StageFailed) as failed:
        run_pipeline(config, only=["extract"], preflight=False)
    message = str(failed.value)
    assert message.startswith(missing) and "\n" not in message, message
    assert len(_requests(requests)) == 1, "nothing of the dataset was sent"
    assert _wait_gone(int((tmp_path / "pids" / "server.pid").read_text()))


def test_cli_reports_a_reply_shape_failure_in_one_line(served, tmp_path, tiny_model):
    _config_path, run_dir, _requests_log = served
    config_path = _config(tmp_path, tiny_model, "--mode", "no-kv")
    _copy_stage(run_dir, tmp_path / "run", "prepare")
    result = CliRunner().invoke(run_command, [str(config_path), "--stage", "extract", "--cache-dir",
                                                              str(run_dir.parent / "cache")])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "apiaudit run: stage failed: reply-shape preflight: the completion reply has no kv_transfer_params "
        "(is a hidden-states KV connector configured? --kv-transfer-config)")
    assert "Traceback" not in result.stderr + result.stdout


def test_launch_audit_blocks_before_the_server_starts(served, tmp_path, tiny_model):
    _config_path, run_dir, _requests_log = served
    config_path = _config(tmp_path, tiny_model, "--pid-dir", str(tmp_path / "pids"))
    _copy_stage(run_dir, tmp_path / "run", "prepare")
    config = load_config(config_path)
    seen: list[list[str]] = []

    def auditor(argv, run_config):
        seen.append(list(argv))
        return [Finding(rule="launch-config-key-unknown", severity=Severity.ERROR, consumer="server", path="<launch>",
                        line=1, column=0, callee=None, param="bogus", message="bogus is not a SpeculativeConfig field")]

    with pytest.raises(LaunchRefused) as refused:
        run_pipeline(config, only=["extract"], preflight=False, launch_auditor=auditor)
    assert "launch-config-key-unknown: bogus is not a SpeculativeConfig field" in str(refused.value)
    assert "--speculative-config" in seen[0]
    assert not (tmp_path / "pids").exists(), "the server never started"
    summary = run_pipeline(config, only=["extract"], preflight=False, launch_auditor=auditor, force=True)
    assert summary.outcome("extract").status == "ran"
    assert _manifest(tmp_path / "run", "extract")["counts"]["server"]["launch_findings"] == 1


def test_ctrl_c_leaves_no_process_and_the_rerun_resumes(served, tmp_path, tiny_model):
    _config_path, run_dir, _requests_log = served
    requests, pids = tmp_path / "requests.jsonl", tmp_path / "pids"
    config_path = _config(tmp_path, tiny_model, "--requests-log", str(requests), "--pid-dir", str(pids),
                          "--spawn-child", "--request-delay", "0.4", concurrency=1)
    _copy_stage(run_dir, tmp_path / "run", "prepare")
    runner = subprocess.Popen([sys.executable, "-m", "apiaudit", "run", str(config_path), "--stage", "extract",
                               "--cache-dir", str(run_dir.parent / "cache")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while len(_requests(requests)) < 3:  # the preflight request and two samples' requests
        assert runner.poll() is None, runner.communicate()
        assert time.monotonic() < deadline, "the runner never sent its requests"
        time.sleep(0.1)
    server_pid, child_pid = (int((pids / name).read_text()) for name in ("server.pid", "child.pid"))
    runner.send_signal(signal.SIGINT)
    _out, err = runner.communicate(timeout=60)
    assert runner.returncode == 130, err
    assert err.strip().splitlines()[-1] == "apiaudit: interrupted"
    assert _wait_gone(server_pid) and _wait_gone(child_pid), "the server and its child must be gone"

    done = sorted((tmp_path / "run" / "extract" / "hidden_states").glob("hs_*.safetensors"))
    assert 0 < len(done) < _manifest(run_dir, "prepare")["counts"]["samples"]
    sent_before = len(_requests(requests))
    summary = run_pipeline(load_config(config_path), only=["extract"], preflight=False)
    counts = _manifest(tmp_path / "run", "extract")["counts"]
    assert summary.outcome("extract").status == "ran" and counts["reused"] == len(done)
    assert len(_requests(requests)) - sent_before == 1 + counts["extracted"]


def _copy_stage(run_dir: Path, target_run: Path, stage: str) -> None:
    import shutil

    shutil.copytree(run_dir / stage, target_run / stage)
