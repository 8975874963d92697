"""Stage 2 on the server line: `vllm serve` extracts the hidden states, one request per sample.

The stage writes speculators' own offline-training layout (what `speculators train
--data-path DATA --hidden-states-path HS --on-missing raise` reads, and what its
`generate-offline-data` writes):

* ``data/``: the prepared samples as a datasets folder (`input_ids`, `loss_mask`, `seq_len`),
* ``hidden_states/hs_N.safetensors``: sample N's `hidden_states` [tokens, 4, hidden] (the
  three auxiliary layers, then the last, before the final norm) and `token_ids` [tokens].

The server runs only while there are samples without a file: a request whose file exists
is not sent again, so an interrupted stage resumes where it stopped. Before the dataset is
sent, one tiny request must come back in the shape the client reads (`check_reply`) and
name a readable file; otherwise the run stops with one line saying what is missing.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import struct
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Callable, Sequence

from apiaudit.errors import InputError
from apiaudit.infra.words import counted
from apiaudit.runner.config import RunConfig
from apiaudit.runner.context import StageContext, StageResult
from apiaudit.runner.server import (
    LaunchRefused,
    ManagedServer,
    ReplyShapeError,
    ServerFailed,
    audit_launch_line,
    blocking_launch_findings,
    check_hidden_states_file,
    check_reply,
    completion_body,
    free_port,
    launch_refusal,
    post_json,
    read_safetensors_header,
    served_model,
    server_version,
    wait_for_lock,
)

DATA_DIR = "data"
HIDDEN_STATES_DIR = "hidden_states"
# The connector's shared_storage_path: the server writes here, the stage moves each file out.
STORAGE_DIR = "server-storage"
SERVER_LOG = "server.log"
# The reply-shape preflight's prompt: the first tokens of a real sample.
PREFLIGHT_TOKENS = 4
# speculators' vllm_client lives in its 0.7+ releases.
SPECULATORS_CLIENT_SINCE = (0, 7)

Send = Callable[[Sequence[int]], str]


def hidden_states_file(hidden_states_dir: Path, index: int) -> Path:
    return hidden_states_dir / f"hs_{index}.safetensors"


def server_extract_config(config: RunConfig) -> dict:
    """What the server line's extract output depends on: the extract keys that reach the server, and [server]."""
    extract = config.section("extract")
    for hf_only in ("device", "batch_size"):
        extract.pop(hf_only, None)
    extract["captured_layers"] = list(config.captured_layers)
    server = config.section("server")
    # How the server is reached and waited for does not change what it writes.
    for key in ("host", "port", "startup_timeout_s", "request_timeout_s", "shutdown_grace_s", "concurrency"):
        server.pop(key, None)
    return {"extract": extract, "server": server, "model": str(config.model.path)}


def release_tuple(version: str) -> tuple[int, ...]:
    parts: list[int] = []
    for piece in version.split("."):
        digits = "".join(c for c in piece if c.isdigit()) if piece[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits))
        if not piece.isdigit():
            break
    return tuple(parts)


def installed_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def run_server_extract(ctx: StageContext) -> StageResult:
    from apiaudit.runner.prepare import load_prepared

    config = ctx.config
    prepared = load_prepared(ctx.upstream("prepare"))
    total = len(prepared)
    hs_dir = ctx.stage_dir / HIDDEN_STATES_DIR
    hs_dir.mkdir(parents=True, exist_ok=True)
    todo = [i for i in range(total) if not hidden_states_file(hs_dir, i).is_file()]
    reused = total - len(todo)
    ctx.log.info("%d samples: %d files on disk from an earlier run, %d requests to send", total, reused, len(todo))
    ctx.reporter.stage_started("extract", total, "requests")
    ctx.reporter.advance(reused)

    server: dict[str, Any] = {"started": False, "reason": "every sample's file was on disk"}
    if todo:
        server = _serve_and_extract(ctx, prepared, todo, hs_dir)

    data_dir = ctx.stage_dir / DATA_DIR
    write_training_dataset(ctx.upstream("prepare"), data_dir, [prepared.length(i) for i in range(total)])
    outputs = [hidden_states_file(hs_dir, i) for i in range(total)]
    outputs += sorted(p for p in data_dir.rglob("*") if p.is_file())
    return StageResult(
        outputs=outputs,
        counts={"samples": total, "extracted": len(todo), "reused": reused, "layers": list(config.captured_layers),
                "server": server},
        summary=f"{counted(len(todo), 'sample')} extracted by the server, {reused} reused (layers "
        f"{list(config.captured_layers)}, backend {config.extract.backend})",
    )


def _serve_and_extract(ctx: StageContext, prepared, todo: list[int], hs_dir: Path) -> dict[str, Any]:
    config = ctx.config
    storage = ctx.stage_dir / STORAGE_DIR
    if storage.exists():
        shutil.rmtree(storage)  # what an interrupted run's server left behind
    storage.mkdir(parents=True)
    from apiaudit.runner.server import server_argv

    port = config.server.port or free_port(config.server.host)
    argv = server_argv(config, port, storage)
    findings = audit_launch_line(argv, config, ctx.launch_auditor)
    for finding in findings:
        ctx.log.warning("launch audit: %s %s: %s", finding.severity.value, finding.rule, finding.message)
    blocking = blocking_launch_findings(findings, config.preflight.fail_on)
    if blocking and not ctx.force:
        raise LaunchRefused(launch_refusal(blocking))
    if blocking:
        ctx.reporter.note(f"--force: starting the server despite {len(blocking)} blocking launch finding(s)")

    base_url = f"http://{config.server.host}:{port}"
    ctx.log.info("starting the server: %s", " ".join(argv))
    ctx.reporter.note(f"extract: starting the server on port {port} (log: {ctx.stage_dir / SERVER_LOG})")
    record: dict[str, Any] = {"started": True, "argv": argv, "launch_findings": len(findings)}
    with ManagedServer(argv, ctx.stage_dir / SERVER_LOG, grace_s=config.server.shutdown_grace_s,
                       base_url=base_url) as managed:
        record["ready_s"] = round(managed.wait_healthy(config.server.startup_timeout_s), 2)
        model = served_model(base_url) or str(config.model.path)
        record["version"] = server_version(base_url)
        record["model"] = model
        ctx.log.info("server healthy after %.1fs: vLLM %s serving %s", record["ready_s"], record["version"], model)
        layers, hidden = len(config.captured_layers), config.target.hidden_size

        preflight_ids = prepared.sample_ids(todo[0])[:PREFLIGHT_TOKENS]
        reply_preflight(base_url, model, preflight_ids, layers, hidden, config.server.request_timeout_s, managed)
        ctx.log.info("reply-shape preflight: ok")

        send, record["client"] = open_client(config, base_url, model)
        ctx.log.info("client: %s", record["client"])

        def collect(index: int, path: str) -> None:
            ids = prepared.sample_ids(index)
            produced = Path(path)
            wait_for_lock(produced)
            problem = check_hidden_states_file(produced, len(ids), layers, hidden) or _token_ids_problem(produced, ids)
            if problem is not None:
                raise ServerFailed(f"sample {index}: {problem}")
            _move(produced, hidden_states_file(hs_dir, index))
            ctx.reporter.advance(1)

        _send_all(todo, lambda i: send(prepared.sample_ids(i)), collect, config.server.concurrency, managed)
    return record


def reply_preflight(base_url: str, model: str, token_ids: Sequence[int], layers: int, hidden: int, timeout: float,
                    managed: ManagedServer) -> None:
    """One tiny request, before the dataset is sent: its reply and file must be what the client reads."""
    try:
        reply = post_json(base_url + "/v1/completions", completion_body(model, token_ids), timeout)
    except (OSError, ValueError) as exc:
        managed.check_alive("during the reply-shape preflight")
        raise ServerFailed(f"reply-shape preflight: the completion request failed: {exc}") from None
    try:
        path = Path(check_reply(reply, token_ids))
    except ReplyShapeError as exc:
        raise ReplyShapeError(f"reply-shape preflight: {exc}") from None
    wait_for_lock(path)
    problem = check_hidden_states_file(path, len(token_ids), layers, hidden)
    if problem is not None:
        raise ReplyShapeError(f"reply-shape preflight: {problem}")
    path.unlink(missing_ok=True)


def open_client(config: RunConfig, base_url: str, model: str) -> tuple[Send, str]:
    """The function that sends one sample and returns the path of its file, and what it is.

    speculators' own `vllm_client.generate_hidden_states` when the speculators this process
    imports has it (0.7+) and `server.client` allows; otherwise the same HTTP contract.
    """
    choice = config.server.client
    version = installed_version("speculators") or "absent"
    timeout = config.server.request_timeout_s
    wanted = choice != "http" and release_tuple(version) >= SPECULATORS_CLIENT_SINCE
    speculators_send = _speculators_client() if wanted else None
    if speculators_send is not None:
        import openai

        client = openai.OpenAI(base_url=base_url + "/v1", api_key="EMPTY", max_retries=0)

        def send_with_speculators(token_ids: Sequence[int]) -> str:
            result = speculators_send(client, model, {"input_ids": list(token_ids)}, timeout=timeout)
            # 0.7-0.8 return the path; 0.9 returns (handle, kv_transfer_params).
            return str(result[0] if isinstance(result, tuple) else result)

        return send_with_speculators, f"speculators {version} vllm_client"
    if choice == "speculators":
        raise InputError(f"server.client = \"speculators\" needs speculators 0.7+ with openai in the runner's "
                         f"environment (found speculators {version}); use \"auto\" or \"http\"")

    def send_over_http(token_ids: Sequence[int]) -> str:
        return check_reply(post_json(base_url + "/v1/completions", completion_body(model, token_ids), timeout), token_ids)

    return send_over_http, "http (the vllm_client contract)"


def _speculators_client() -> Callable[..., Any] | None:
    """speculators' `generate_hidden_states` (0.7+, with openai), or None where it cannot be imported."""
    try:
        import openai  # noqa: F401 - the client's own dependency
        from speculators.data_generation.vllm_client import generate_hidden_states
    except ImportError:
        return None
    return generate_hidden_states


def _send_all(todo: list[int], fetch: Callable[[int], str], collect: Callable[[int, str], None], concurrency: int,
              managed: ManagedServer) -> None:
    """`concurrency` requests in flight; each finished one collected here, in this thread."""
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="apiaudit-extract")
    pending: dict[Future, int] = {}
    queue = iter(todo)
    try:
        for index in queue:
            pending[pool.submit(fetch, index)] = index
            if len(pending) >= concurrency:
                break
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                index = pending.pop(future)
                try:
                    path = future.result()
                except ServerFailed:
                    raise
                except Exception as exc:  # noqa: BLE001 - a failed request: the server's state says why
                    managed.check_alive(f"while extracting (request for sample {index})")
                    raise ServerFailed(f"the request for sample {index} failed: {type(exc).__name__}: {exc}") from None
                collect(index, path)
                following = next(queue, None)
                if following is not None:
                    pending[pool.submit(fetch, following)] = following
    finally:
        # Requests in flight fail once the server stops; nothing waits for them here.
        pool.shutdown(wait=False, cancel_futures=True)


def _token_ids_problem(path: Path, token_ids: Sequence[int]) -> str | None:
    """The file's token_ids must be the prompt's (speculators' check_hidden_states)."""
    header = read_safetensors_header(path)
    entry = header["token_ids"]
    widths = {"I64": ("q", 8), "I32": ("i", 4)}
    if entry.get("dtype") not in widths:
        return f"{path}: token_ids has dtype {entry.get('dtype')}, expected an integer type"
    code, width = widths[entry["dtype"]]
    start, end = entry["data_offsets"]
    with path.open("rb") as handle:
        (size,) = struct.unpack("<Q", handle.read(8))
        handle.seek(8 + size + start)
        raw = handle.read(end - start)
    values = list(struct.unpack(f"<{len(raw) // width}{code}", raw))
    if values != list(token_ids):
        return f"{path}: token_ids are not the prompt sent"
    return None


def _move(source: Path, target: Path) -> None:
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        os.replace(source, tmp)
    except OSError:
        shutil.copyfile(source, tmp)
        source.unlink()
    os.replace(tmp, target)


def write_training_dataset(prepare_dir: Path, out: Path, lengths: list[int]) -> None:
    """The prepared samples as speculators 0.7+'s trainer reads them: `seq_len` added, torch format."""
    from datasets import load_from_disk

    from apiaudit.runner.prepare import DATASET_DIR

    dataset = load_from_disk(str(prepare_dir / DATASET_DIR)).with_format(None)
    dataset = dataset.add_column("seq_len", lengths)
    dataset.set_format(type="torch")
    tmp = out.with_name(f".{out.name}.tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    dataset.save_to_disk(str(tmp))
    if out.exists():
        shutil.rmtree(out)
    os.replace(tmp, out)
