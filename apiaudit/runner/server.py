"""The server line's `vllm serve`: its command line, its life as a managed child, and its replies.

vLLM extracts hidden states itself when it is started with the speculative method
`extract_hidden_states` and a hidden-states KV connector: each completion request writes
one safetensors file (`hidden_states` [tokens, layers, hidden], `token_ids`) and its reply
names it in `kv_transfer_params["hidden_states_path"]`. This module

* builds the `vllm serve MODEL ...` argv from the run config (`server_argv`);
* hands that argv to the launch audit before anything starts (`audit_launch_line`, the one
  hook where the static audit of a launch line plugs in);
* runs the server as a managed child (`ManagedServer`): its own process group, its output
  in a log file, a health wait with a timeout, and a shutdown (SIGTERM to the whole group,
  SIGKILL after a grace period) on success, failure, Ctrl-C and SIGTERM alike;
* speaks the reply contract speculators' `vllm_client` reads (`check_reply`,
  `check_hidden_states_file`), so the run-time preflight names what a reply lacks.

Nothing here imports torch, vLLM or speculators: safetensors headers are read as bytes.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Protocol, Sequence, TypeVar

from apiaudit.findings import Finding, Severity
from apiaudit.runner.config import RunConfig
from apiaudit.runner.context import StageFailed

# vLLM's own entry point for `vllm serve` (what the `vllm` console script runs).
VLLM_SERVE_MODULE = "vllm.entrypoints.cli.main"
SPECULATIVE_METHOD = "extract_hidden_states"
KV_ROLE = "kv_producer"
LOG_TAIL_LINES = 20
_Managed = TypeVar("_Managed", bound="ManagedProcess")
HEALTH_POLL_S = 0.5


class ServerFailed(StageFailed):
    """The server did not start, died, or answered in a shape the client cannot read."""


class LaunchRefused(StageFailed):
    """The launch audit found blocking findings in the server's command line."""


# ---------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------


def hidden_state_layer_ids(config: RunConfig) -> list[int]:
    """vLLM's ids of the captured layers: id i is the residual stream entering layer i, so the
    output of the runner's layer l (what the hf backend captures) is id l + 1, and the last
    layer's output, before the final norm, is id num_hidden_layers."""
    return [layer + 1 for layer in config.captured_layers]


def speculative_config(config: RunConfig) -> dict[str, Any]:
    return {
        "method": SPECULATIVE_METHOD,
        "num_speculative_tokens": config.server.num_speculative_tokens,
        "draft_model_config": {"hf_config": {"eagle_aux_hidden_state_layer_ids": hidden_state_layer_ids(config)}},
    }


def kv_transfer_config(config: RunConfig, storage: Path) -> dict[str, Any]:
    return {
        "kv_connector": config.server.connector,
        "kv_role": KV_ROLE,
        "kv_connector_extra_config": {"shared_storage_path": str(storage)},
    }


def server_launcher(config: RunConfig) -> list[str]:
    """What starts the server, before MODEL: `[server] command`, or PYTHON -m vllm's CLI serve."""
    if config.server.command:
        return list(config.server.command)
    return [config.server.python or sys.executable, "-m", VLLM_SERVE_MODULE, "serve"]


def server_argv(config: RunConfig, port: int, storage: Path) -> list[str]:
    """The whole `vllm serve` command line; `[server] extra_args` come last and win."""
    extract = config.extract
    argv = [
        *server_launcher(config),
        str(config.model.path),
        "--host", config.server.host,
        "--port", str(port),
        "--speculative-config", json.dumps(speculative_config(config), separators=(",", ":")),
        "--kv-transfer-config", json.dumps(kv_transfer_config(config, storage), separators=(",", ":")),
        # A prompt of seq_length tokens plus the one token each request generates.
        "--max-model-len", str(config.data.seq_length + 1),
        "--gpu-memory-utilization", str(extract.gpu_memory_utilization),
        "--dtype", extract.dtype,
        # As speculators' launch script does: each prompt's hidden states in one prefill.
        "--no-enable-chunked-prefill",
    ]
    if extract.gpus > 1:
        argv += ["--tensor-parallel-size", str(extract.gpus)]
    return argv + list(config.server.extra_args)


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


# ---------------------------------------------------------------------------------------
# The launch audit hook
# ---------------------------------------------------------------------------------------


class LaunchAuditor(Protocol):
    """Audits a server's command line against the release that will run it (issue 24, part 2)."""

    def __call__(self, argv: Sequence[str], config: RunConfig) -> list[Finding]: ...


def audit_launch_line(argv: Sequence[str], config: RunConfig, auditor: LaunchAuditor | None) -> list[Finding]:
    """The launch audit, run before the server starts: the one place a static audit of the
    `vllm serve` line plugs in. With no auditor there is nothing to check."""
    return list(auditor(argv, config)) if auditor is not None else []


def installed_release_auditor(cache_dir: Path | None = None) -> LaunchAuditor:
    """The static launch audit (`apiaudit.audit.audit_launch`) against the provider installed in
    this interpreter, the one the rules name; when the server runs in another environment whose
    release this one cannot read, nothing is checked here (the job's own preflight still is)."""

    def audit(argv: Sequence[str], config: RunConfig) -> list[Finding]:
        from apiaudit.audit import audit_launch, default_provider
        from apiaudit.errors import InputError

        if config.server.python or config.server.command:
            return []  # another environment's server: its release is not this interpreter's
        try:
            return list(audit_launch(argv, default_provider(), cache_dir=cache_dir))
        except InputError:
            return []  # no provider installed here, or rules that describe no command line

    return audit


def blocking_launch_findings(findings: Sequence[Finding], fail_on: str) -> list[Finding]:
    """The findings at or above the run's `preflight.fail_on` (never: none)."""
    if fail_on == "never":
        return []
    threshold = Severity(fail_on)
    return [f for f in findings if f.severity.at_least(threshold)]


def launch_refusal(blocking: Sequence[Finding]) -> str:
    first = blocking[0]
    more = f" (and {len(blocking) - 1} more)" if len(blocking) > 1 else ""
    return (f"not starting the server: the launch audit found {len(blocking)} blocking finding"
            f"{'s' if len(blocking) != 1 else ''}: {first.rule}: {first.message}{more} (--force to start anyway)")


# ---------------------------------------------------------------------------------------
# The managed child
# ---------------------------------------------------------------------------------------


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    tail = [line for line in text.splitlines() if line.strip()][-lines:]
    return "\n".join(tail) if tail else "(the log is empty)"


@dataclass
class ManagedProcess:
    """A child process that is never left running.

    It starts in a process group of its own (so Ctrl-C at the terminal reaches the runner
    only, and the runner decides), its output in `log_path` (or, with `pipe`, handed to the
    caller line by line by `lines()` and copied there). `stop()` sends SIGTERM to the whole
    group (vLLM's engine and workers, torchrun's ranks), then SIGKILL after `grace_s`.
    Use it as a context manager: the process stops on every way out, and while it runs, a
    SIGTERM to the runner stops it too.
    """

    argv: list[str]
    log_path: Path
    grace_s: float = 30.0
    env: dict[str, str] | None = None
    cwd: Path | None = None
    pipe: bool = False
    process: subprocess.Popen | None = field(default=None, init=False)
    _previous_sigterm: Any = field(default=None, init=False)

    def __enter__(self: _Managed) -> _Managed:
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"$ {' '.join(self.argv)}\n".encode())
            log.flush()
            try:
                self.process = subprocess.Popen(
                    self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE if self.pipe else log,
                    stderr=subprocess.STDOUT, start_new_session=True, env=self.env, cwd=self.cwd,
                    preexec_fn=_die_with_parent,
                )
            except OSError as exc:
                raise ServerFailed(f"could not start {self.argv[0]}: {exc.strerror or exc}") from None
        self._trap_sigterm()

    def lines(self) -> Iterator[str]:
        """With `pipe`: each line the process writes, also appended to the log, until it closes its output."""
        assert self.process is not None and self.process.stdout is not None
        with self.log_path.open("ab") as log:
            for raw in self.process.stdout:
                log.write(raw)
                log.flush()
                yield raw.decode("utf-8", errors="replace").rstrip()

    def wait(self) -> int:
        assert self.process is not None
        return self.process.wait()

    def check_alive(self, during: str) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise ServerFailed(
                f"{self._name()} exited with code {self.process.returncode} {during}; "
                f"last lines of {self.log_path}:\n{log_tail(self.log_path)}"
            )

    def _name(self) -> str:
        return Path(self.argv[0]).name

    def stop(self) -> int | None:
        """Stop the whole process group: SIGTERM, then SIGKILL after the grace period. Idempotent."""
        self._restore_sigterm()
        process = self.process
        if process is None:
            return None
        with _signals_deferred():
            _signal_group(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=self.grace_s)
            except subprocess.TimeoutExpired:
                pass
            # The leader may be gone while its children still run: always sweep the group.
            _signal_group(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
        return process.returncode

    def _trap_sigterm(self) -> None:
        """While the child runs, SIGTERM to the runner unwinds (and so stops the child) instead of killing it."""
        if not _in_main_thread():
            return

        def on_sigterm(signum, _frame):
            raise SystemExit(128 + signum)

        self._previous_sigterm = signal.signal(signal.SIGTERM, on_sigterm)

    def _restore_sigterm(self) -> None:
        if self._previous_sigterm is not None and _in_main_thread():
            signal.signal(signal.SIGTERM, self._previous_sigterm)
            self._previous_sigterm = None


@dataclass
class ManagedServer(ManagedProcess):
    """The `vllm serve` child: a managed process with a health wait."""

    base_url: str = ""

    def _name(self) -> str:
        return "the server"

    def wait_healthy(self, timeout_s: float) -> float:
        """Wait until GET /health answers 200 and /v1/models lists a model; the seconds it took.

        A server that exits meanwhile, or is still not healthy after `timeout_s`, is one
        ServerFailed line with the last lines of its log.
        """
        started = time.monotonic()
        deadline = started + timeout_s
        stage = "/health"
        while True:
            self.check_alive("during start-up")
            try:
                if stage == "/health":
                    with urllib.request.urlopen(self.base_url + "/health", timeout=5) as reply:
                        if reply.status == 200:
                            stage = "/v1/models"
                            continue
                elif served_model(self.base_url) is not None:
                    return time.monotonic() - started
            except (OSError, ValueError):
                pass
            if time.monotonic() >= deadline:
                raise ServerFailed(
                    f"the server was not healthy after {timeout_s:g}s (waiting for {stage}; server.startup_timeout_s); "
                    f"last lines of {self.log_path}:\n{log_tail(self.log_path)}"
                )
            time.sleep(HEALTH_POLL_S)


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """A second Ctrl-C while the server is being stopped must not cut the stop short."""
    if not _in_main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _die_with_parent() -> None:
    """In the child, before exec: on Linux, SIGTERM when the runner dies without unwinding (SIGKILL)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


# ---------------------------------------------------------------------------------------
# HTTP: the contract speculators' vllm_client reads
# ---------------------------------------------------------------------------------------


def get_json(url: str, timeout: float = 5.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        return json.loads(reply.read().decode("utf-8"))


def post_json(url: str, body: dict[str, Any], timeout: float) -> Any:
    request = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"),
                                     headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return json.loads(reply.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", errors="replace")[:300]
        raise ServerFailed(f"POST {url} answered HTTP {exc.code}: {detail}") from None


def served_model(base_url: str) -> str | None:
    """The id of the first model GET /v1/models lists (vLLM serves one), or None."""
    body = get_json(base_url + "/v1/models")
    models = body.get("data") if isinstance(body, dict) else None
    if not models or not isinstance(models[0], dict) or "id" not in models[0]:
        return None
    return str(models[0]["id"])


def server_version(base_url: str) -> str:
    """What GET /version says (vLLM's version), or 'unknown'."""
    try:
        body = get_json(base_url + "/version")
    except (OSError, ValueError):
        return "unknown"
    return str(body.get("version", "unknown")) if isinstance(body, dict) else "unknown"


def completion_body(model: str, token_ids: Sequence[int]) -> dict[str, Any]:
    """The request speculators' client sends: the token ids as the prompt, one generated token."""
    return {"model": model, "prompt": list(token_ids), "max_tokens": 1, "return_token_ids": True}


class ReplyShapeError(ServerFailed):
    """A reply lacks what the client reads (its message names what is missing)."""


def check_reply(reply: Any, token_ids: Sequence[int]) -> str:
    """The hidden-states path a completion reply names; ReplyShapeError naming what is missing.

    What speculators' `vllm_client.extract_output` reads: `choices[0].prompt_token_ids`
    equal to the prompt, and `kv_transfer_params.hidden_states_path`.
    """
    if not isinstance(reply, dict):
        raise ReplyShapeError(f"the completion reply is not a JSON object: {str(reply)[:120]}")
    choices = reply.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ReplyShapeError("the completion reply has no choices")
    prompt_ids = choices[0].get("prompt_token_ids")
    if prompt_ids is None:
        raise ReplyShapeError("the completion reply has no choices[0].prompt_token_ids (return_token_ids)")
    if list(prompt_ids) != list(token_ids):
        raise ReplyShapeError(f"the completion reply's prompt_token_ids are not the prompt sent "
                              f"({len(prompt_ids)} ids back for {len(token_ids)} sent)")
    params = reply.get("kv_transfer_params")
    if params is None:
        raise ReplyShapeError("the completion reply has no kv_transfer_params (is a hidden-states KV connector "
                              "configured? --kv-transfer-config)")
    if not isinstance(params, dict) or not params.get("hidden_states_path"):
        keys = sorted(params) if isinstance(params, dict) else type(params).__name__
        raise ReplyShapeError(f"the completion reply's kv_transfer_params has no hidden_states_path (it has {keys})")
    return str(params["hidden_states_path"])


def read_safetensors_header(path: Path) -> dict[str, Any]:
    """The JSON header of a safetensors file: {tensor name: {"dtype", "shape", ...}}."""
    with path.open("rb") as handle:
        size_bytes = handle.read(8)
        if len(size_bytes) != 8:
            raise ValueError("shorter than a safetensors header")
        (size,) = struct.unpack("<Q", size_bytes)
        if size > 100_000_000:
            raise ValueError("not a safetensors file (header size)")
        header = json.loads(handle.read(size).decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError("not a safetensors header")
    return header


def check_hidden_states_file(path: Path, token_count: int, layers: int, hidden: int) -> str | None:
    """What is wrong with a hidden-states file for a prompt of `token_count` tokens, or None.

    speculators' trainer reads `hidden_states` [tokens, layers, hidden] (the auxiliary
    layers, then the last) and `token_ids` [tokens].
    """
    if not path.is_file():
        return f"the file the reply names does not exist: {path}"
    try:
        header = read_safetensors_header(path)
    except (OSError, ValueError) as exc:
        return f"{path} is not a readable safetensors file ({exc})"
    for name in ("hidden_states", "token_ids"):
        if name not in header:
            return f"{path} has no {name} tensor (it has {sorted(k for k in header if k != '__metadata__')})"
    shape = list(header["hidden_states"].get("shape", []))
    if shape != [token_count, layers, hidden]:
        return f"{path}: hidden_states has shape {shape}, expected [{token_count}, {layers}, {hidden}] ([tokens, layers, hidden])"
    ids_shape = list(header["token_ids"].get("shape", []))
    if ids_shape != [token_count]:
        return f"{path}: token_ids has shape {ids_shape}, expected [{token_count}]"
    return None


def wait_for_lock(path: Path, timeout_s: float = 10.0) -> None:
    """hs-connectors' connectors write under an flock'd `FILE.lock`: wait for the writer, then remove it."""
    lock = Path(str(path) + ".lock")
    if not lock.exists():
        return
    import fcntl

    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        return
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ServerFailed(f"the server still holds {lock} after {timeout_s:g}s") from None
                time.sleep(0.05)
    finally:
        os.close(fd)
    lock.unlink(missing_ok=True)


__all__ = [
    "LaunchAuditor", "LaunchRefused", "ManagedProcess", "ManagedServer", "ReplyShapeError", "ServerFailed", "audit_launch_line",
    "check_hidden_states_file", "check_reply", "server_argv",
]
