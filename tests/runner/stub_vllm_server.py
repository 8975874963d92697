"""A stand-in for `vllm serve` with hidden-state extraction, for the server line's CPU tests.

Started by the runner as the server's command (`[server] command = [python, this file, ...]`),
it takes the flags the runner passes to vLLM (MODEL --host --port --speculative-config
--kv-transfer-config ...) and serves what the runner and speculators' client read:

* GET /health, GET /v1/models, GET /version;
* POST /v1/completions with token ids as the prompt: writes one safetensors file per
  request into the kv-transfer config's `shared_storage_path` (`hidden_states` [tokens,
  layers, hidden] float32, `token_ids` int64, written byte by byte: no numpy or torch) and
  answers with `choices[0].prompt_token_ids` and `kv_transfer_params.hidden_states_path`.

Its own options say how it misbehaves: --mode die (exits during start-up after a few log
lines), hang (never healthy), no-kv / no-path / no-file / bad-shape (replies or files that
lack what the client reads); --spawn-child (a child process in its group, like vLLM's
engine core), --ignore-sigterm, --pid-dir (writes server.pid and child.pid),
--requests-log FILE (one line per completion request), --request-delay S.
This is not vLLM and claims nothing about vLLM: it speaks the contract the runner reads.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import struct
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def safetensors_bytes(tensors: dict[str, tuple[str, list[int], bytes]]) -> bytes:
    """The safetensors format: an 8-byte header size, a JSON header, then the raw data."""
    header: dict = {}
    offset = 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(data for _dtype, _shape, data in tensors.values())


def hidden_states_for(token_ids: list[int], layer_ids: list[int], hidden: int) -> bytes:
    """Deterministic states: a function of the token, its position, the layer and the dimension."""
    values = [
        (token % 97) * 0.01 + position * 0.001 + layer + dim * 1e-4
        for position, token in enumerate(token_ids) for layer in layer_ids for dim in range(hidden)
    ]
    return struct.pack(f"<{len(values)}f", *values)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--speculative-config", required=True)
    parser.add_argument("--kv-transfer-config", required=True)
    parser.add_argument("--mode", default="ok",
                        choices=("ok", "die", "hang", "no-kv", "no-path", "no-file", "bad-shape"))
    parser.add_argument("--startup-delay", type=float, default=0.2)
    parser.add_argument("--request-delay", type=float, default=0.0)
    parser.add_argument("--spawn-child", action="store_true")
    parser.add_argument("--ignore-sigterm", action="store_true")
    parser.add_argument("--pid-dir", type=Path, default=None)
    parser.add_argument("--requests-log", type=Path, default=None)
    args, vllm_flags = parser.parse_known_args()

    print(f"stub vllm serve {args.model} on {args.host}:{args.port}; other flags: {vllm_flags}", flush=True)
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.pid_dir is not None:
        args.pid_dir.mkdir(parents=True, exist_ok=True)
        (args.pid_dir / "server.pid").write_text(str(os.getpid()))
    if args.spawn_child:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        if args.pid_dir is not None:
            (args.pid_dir / "child.pid").write_text(str(child.pid))

    speculative = json.loads(args.speculative_config)
    kv_transfer = json.loads(args.kv_transfer_config)
    layer_ids = speculative["draft_model_config"]["hf_config"]["eagle_aux_hidden_state_layer_ids"]
    storage = Path(kv_transfer["kv_connector_extra_config"]["shared_storage_path"])
    hidden = int(json.loads((Path(args.model) / "config.json").read_text())["hidden_size"])

    time.sleep(args.startup_delay)
    if args.mode == "die":
        print("INFO loading weights", flush=True)
        print("ERROR stub: CUDA out of memory (pretend)", file=sys.stderr, flush=True)
        return 3

    counter = itertools.count()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *values):  # noqa: D401 - into the server's log, as vLLM's access log
            print("stub: " + fmt % values, flush=True)

        def _json(self, status: int, body) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802
            if self.path == "/health":
                if args.mode == "hang":
                    self._json(503, {"error": "loading"})
                else:
                    self.send_response(200)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
            elif self.path == "/v1/models":
                self._json(200, {"object": "list", "data": [
                    {"id": args.model, "object": "model", "created": 0, "owned_by": "vllm"}]})
            elif self.path == "/version":
                self._json(200, {"version": "stub"})
            else:
                self._json(404, {"error": self.path})

        def do_POST(self):  # noqa: N802
            if self.path != "/v1/completions":
                self._json(404, {"error": self.path})
                return
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            token_ids = [int(t) for t in body["prompt"]]
            if args.requests_log is not None:
                with lock, args.requests_log.open("a") as log:
                    log.write(json.dumps(token_ids) + "\n")
            time.sleep(args.request_delay)
            number = next(counter)
            path = storage / f"stub-req-{number}.safetensors"
            if args.mode != "no-file":
                layers = layer_ids[:-1] if args.mode == "bad-shape" else layer_ids
                storage.mkdir(parents=True, exist_ok=True)
                path.write_bytes(safetensors_bytes({
                    "hidden_states": ("F32", [len(token_ids), len(layers), hidden],
                                      hidden_states_for(token_ids, layers, hidden)),
                    "token_ids": ("I64", [len(token_ids)], struct.pack(f"<{len(token_ids)}q", *token_ids)),
                }))
            reply = {
                "id": f"cmpl-{number}", "object": "text_completion", "created": int(time.time()), "model": args.model,
                "choices": [{"index": 0, "text": "x", "finish_reason": "length", "logprobs": None,
                             "prompt_token_ids": token_ids, "token_ids": [token_ids[-1]]}],
                "usage": {"prompt_tokens": len(token_ids), "completion_tokens": 1, "total_tokens": len(token_ids) + 1},
            }
            if args.mode == "no-path":
                reply["kv_transfer_params"] = {"do_remote_decode": False}
            elif args.mode != "no-kv":
                reply["kv_transfer_params"] = {"hidden_states_path": str(path)}
            self._json(200, reply)

    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    print("INFO stub: application startup complete", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
