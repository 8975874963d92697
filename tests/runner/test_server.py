"""The server line's `vllm serve` as a managed child, against a stub server (no torch, no vLLM).

tests/runner/stub_vllm_server.py stands in for `vllm serve` with hidden-state extraction: it
takes the flags the runner builds, serves /health, /v1/models and /v1/completions, and
writes one safetensors file per request. These tests start it through the runner's own
code: a healthy start, a server that dies during start-up, a health timeout, the process
group gone after a stop (SIGTERM ignored included), the reply-shape checks, the argv.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from apiaudit.findings import Finding, Severity
from apiaudit.runner.config import load_config
from apiaudit.runner import server as srv

STUB = Path(__file__).resolve().parent / "stub_vllm_server.py"
CONVERSATIONS = Path(__file__).resolve().parents[2] / "fixtures" / "runner" / "conversations.jsonl"


def _model(tmp_path: Path) -> Path:
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    (model / "config.json").write_text(json.dumps(
        {"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 8, "vocab_size": 100}))
    return model


def _config(tmp_path: Path, *stub_options: str, server: str = ""):
    model = _model(tmp_path)
    command = json.dumps([sys.executable, str(STUB), *stub_options])
    path = tmp_path / "run.toml"
    path.write_text(
        f'[model]\npath = "{model}"\n[data]\nconversations = "{CONVERSATIONS}"\nseq_length = 64\n'
        f'[extract]\nbackend = "vllm-server"\nlayers = [0, 1, 2]\n'
        f"[server]\ncommand = {command}\nstartup_timeout_s = 20\nshutdown_grace_s = 5\n{server}",
        encoding="utf-8",
    )
    return load_config(path, available_gpus=0)


def _start(tmp_path: Path, config, timeout: float = 20.0) -> tuple[srv.ManagedServer, Path]:
    storage = tmp_path / "storage"
    port = srv.free_port("127.0.0.1")
    server = srv.ManagedServer(srv.server_argv(config, port, storage), tmp_path / "server.log", grace_s=config.server.shutdown_grace_s,
                           base_url=f"http://127.0.0.1:{port}")
    return server, storage


def _gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # A zombie child of this test process counts as gone once it can be reaped.
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.1)
    return False


def test_argv_carries_the_extraction_configs(tmp_path):
    config = _config(tmp_path, server='extra_args = ["--enforce-eager"]\nconnector = "MyConnector"')
    argv = srv.server_argv(config, 8123, tmp_path / "storage")
    assert argv[:2] == [sys.executable, str(STUB)] and argv[2] == str(config.model.path)
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    # Layer l's output is vLLM's id l + 1; the last layer (3 of 4) is id 4.
    assert spec == {"method": "extract_hidden_states", "num_speculative_tokens": 1,
                    "draft_model_config": {"hf_config": {"eagle_aux_hidden_state_layer_ids": [1, 2, 3, 4]}}}
    kv = json.loads(argv[argv.index("--kv-transfer-config") + 1])
    assert kv == {"kv_connector": "MyConnector", "kv_role": "kv_producer",
                  "kv_connector_extra_config": {"shared_storage_path": str(tmp_path / "storage")}}
    assert argv[argv.index("--port") + 1] == "8123" and argv[argv.index("--max-model-len") + 1] == "65"
    assert argv[-1] == "--enforce-eager", "extra_args come last, so they win"


def test_default_launcher_is_vllms_own_cli(tmp_path):
    config = _config(tmp_path, server='python = "python3.12"')
    config = dataclasses.replace(config, server=dataclasses.replace(config.server, command=()))
    assert srv.server_argv(config, 1, tmp_path)[:4] == ["python3.12", "-m", "vllm.entrypoints.cli.main", "serve"]
    config = dataclasses.replace(config, server=dataclasses.replace(config.server, python=""))
    assert srv.server_argv(config, 1, tmp_path)[:2] == [sys.executable, "-m"]


def test_healthy_start_answers_and_stops(tmp_path):
    pid_dir = tmp_path / "pids"
    config = _config(tmp_path, "--spawn-child", "--pid-dir", str(pid_dir))
    server, storage = _start(tmp_path, config)
    with server:
        took = server.wait_healthy(20)
        assert took < 20
        reply = srv.post_json(server.base_url + "/v1/completions", srv.completion_body(str(config.model.path), [5, 6, 7]), 10)
        path = Path(srv.check_reply(reply, [5, 6, 7]))
        assert path.parent == storage
        assert srv.check_hidden_states_file(path, 3, 4, 8) is None
        child = int((pid_dir / "child.pid").read_text())
    assert _gone(server.pid) and _gone(child), "the server and its child (its process group) must be gone"


def test_server_that_dies_during_startup_is_one_line_with_the_log_tail(tmp_path):
    server, _ = _start(tmp_path, _config(tmp_path, "--mode", "die"))
    with pytest.raises(srv.ServerFailed) as failed, server:
        server.wait_healthy(20)
    message = str(failed.value)
    assert message.startswith("the server exited with code 3 during start-up; last lines of ")
    assert "CUDA out of memory (pretend)" in message
    assert _gone(server.pid)


def test_health_timeout_names_the_wait_and_stops_the_server(tmp_path):
    server, _ = _start(tmp_path, _config(tmp_path, "--mode", "hang"))
    started = time.monotonic()
    with pytest.raises(srv.ServerFailed) as failed, server:
        server.wait_healthy(2)
    assert time.monotonic() - started < 15
    assert "was not healthy after 2s (waiting for /health; server.startup_timeout_s)" in str(failed.value)
    assert "application startup complete" in str(failed.value), "the log's last lines come with it"
    assert _gone(server.pid)


def test_a_server_ignoring_sigterm_is_killed_after_the_grace_period(tmp_path):
    pid_dir = tmp_path / "pids"
    config = _config(tmp_path, "--ignore-sigterm", "--spawn-child", "--pid-dir", str(pid_dir), server="")
    server, _ = _start(tmp_path, config)
    server.grace_s = 1.0
    with server:
        server.wait_healthy(20)
        child = int((pid_dir / "child.pid").read_text())
    assert server.process is not None and server.process.returncode == -signal.SIGKILL
    assert _gone(server.pid) and _gone(child)


def test_sigterm_to_the_runner_stops_the_server(tmp_path):
    """A runner killed by SIGTERM (a job scheduler's stop) unwinds and stops the server first."""
    pid_dir = tmp_path / "pids"
    config = _config(tmp_path, "--spawn-child", "--pid-dir", str(pid_dir))
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(config.source), str(tmp_path)],
                              stdout=subprocess.PIPE, text=True)
    assert driver.stdout is not None
    assert driver.stdout.readline().strip() == "healthy"
    server_pid, child = (int((pid_dir / f"{name}.pid").read_text()) for name in ("server", "child"))
    driver.send_signal(signal.SIGTERM)
    assert driver.wait(timeout=30) == 128 + signal.SIGTERM
    assert _gone(server_pid) and _gone(child)


DRIVER = """
import sys, time
from pathlib import Path
from apiaudit.runner.config import load_config
from apiaudit.runner import server as srv
config = load_config(sys.argv[1], available_gpus=0)
port = srv.free_port("127.0.0.1")
work = Path(sys.argv[2])
with srv.ManagedServer(srv.server_argv(config, port, work / "storage"), work / "driver-server.log", grace_s=5,
                   base_url=f"http://127.0.0.1:{port}") as server:
    server.wait_healthy(20)
    print("healthy", flush=True)
    time.sleep(60)
"""


@pytest.mark.parametrize(("reply", "missing"), [
    ({"choices": [{"prompt_token_ids": [1, 2]}]}, "has no kv_transfer_params"),
    ({"choices": [{"prompt_token_ids": [1, 2]}], "kv_transfer_params": {"x": 1}},
     "kv_transfer_params has no hidden_states_path (it has ['x'])"),
    ({"choices": [{"text": "a"}], "kv_transfer_params": {"hidden_states_path": "/x"}},
     "has no choices[0].prompt_token_ids"),
    ({"choices": [{"prompt_token_ids": [1]}], "kv_transfer_params": {"hidden_states_path": "/x"}},
     "are not the prompt sent"),
    ({"object": "error"}, "has no choices"),
])
def test_reply_shape_names_what_is_missing(reply, missing):
    with pytest.raises(srv.ReplyShapeError) as failed:
        srv.check_reply(reply, [1, 2])
    assert missing in str(failed.value) and "\n" not in str(failed.value)


def test_hidden_states_file_checks(tmp_path):
    sys.path.insert(0, str(STUB.parent))
    from stub_vllm_server import safetensors_bytes

    path = tmp_path / "hs.safetensors"
    assert "does not exist" in srv.check_hidden_states_file(path, 2, 4, 8)
    path.write_bytes(safetensors_bytes({"hidden_states": ("F32", [2, 3, 8], b"\0" * 192),
                                        "token_ids": ("I64", [2], b"\0" * 16)}))
    assert "hidden_states has shape [2, 3, 8], expected [2, 4, 8]" in srv.check_hidden_states_file(path, 2, 4, 8)
    path.write_bytes(safetensors_bytes({"hidden_states": ("F32", [2, 4, 8], b"\0" * 256)}))
    assert "has no token_ids tensor" in srv.check_hidden_states_file(path, 2, 4, 8)
    path.write_bytes(b"\x01")
    assert "not a readable safetensors file" in srv.check_hidden_states_file(path, 2, 4, 8)


def _finding(severity: Severity, rule: str = "launch-flag-unknown") -> Finding:
    return Finding(rule=rule, severity=severity, consumer="server argv", path="<launch>", line=1, column=0,
                   callee=None, param="--no-such-flag", message="--no-such-flag is not a flag of vllm serve")


def test_launch_audit_hook_calls_the_auditor_with_the_argv(tmp_path):
    config = _config(tmp_path)
    argv = srv.server_argv(config, 9, tmp_path)
    seen = []

    def auditor(line, run_config):
        seen.append((list(line), run_config))
        return [_finding(Severity.WARNING), _finding(Severity.ERROR)]

    assert srv.audit_launch_line(argv, config, None) == []
    findings = srv.audit_launch_line(argv, config, auditor)
    assert seen == [(argv, config)] and len(findings) == 2
    blocking = srv.blocking_launch_findings(findings, "error")
    assert [f.severity for f in blocking] == [Severity.ERROR]
    assert len(srv.blocking_launch_findings(findings, "warning")) == 2 and srv.blocking_launch_findings(findings, "never") == []
    assert srv.launch_refusal(blocking) == (
        "not starting the server: the launch audit found 1 blocking finding: launch-flag-unknown: "
        "--no-such-flag is not a flag of vllm serve (--force to start anyway)")
