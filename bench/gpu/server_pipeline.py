"""The server line on the GPU machine: prepare, `vllm serve` + extract, vocab, train, load.

    python bench/gpu/server_pipeline.py stack WORK --trainer-python P      # versions: runner, server, trainer
    python bench/gpu/server_pipeline.py model WORK                         # a random Llama (~440 MB bf16) + conversations
    python bench/gpu/server_pipeline.py pipeline WORK NAME --backend hf|vllm-server [--trainer-python P]
    python bench/gpu/server_pipeline.py compare WORK HF_RUN SERVER_RUN     # the server's states vs the hf backend's
    python bench/gpu/server_pipeline.py load WORK NAME --trainer-python P  # the checkpoint loads and runs a forward
    python bench/gpu/server_pipeline.py all WORK --trainer-python P        # all of the above, in order

Each prints one `RESULT {json}` line (per-stage times in `pipeline`, the verdict against
the tolerance in `compare`). The runner's environment is the stack's (speculators 0.4.0 for
prepare and vocab); `--trainer-python` is the second environment, an interpreter whose
speculators is 0.7+ (on the device: a wrapper that puts the 0.7 target first on
PYTHONPATH); the server is `python -m vllm.entrypoints.cli.main serve` of the runner's
interpreter unless `--server-command` (a JSON list) names another. Nothing comes from a
model hub.

On a CPU, `--server-command '["python", "tests/runner/stub_vllm_server.py"]'` with
BENCH_DEVICE=cpu BENCH_HIDDEN=64 BENCH_LAYERS=4 BENCH_VOCAB=512 walks the same steps
against the stub (its states are not the model's: `compare` then fails, as it should).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "runner"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # device_check: the comparison's statistics

DEVICE = os.environ.get("BENCH_DEVICE", "cuda")
MODEL = {"hidden": int(os.environ.get("BENCH_HIDDEN", "1024")), "layers": int(os.environ.get("BENCH_LAYERS", "12")),
         "vocab": int(os.environ.get("BENCH_VOCAB", "32000"))}
# Auxiliary layers: speculators' default for the model's depth, [2, n/2, n-3].
LAYERS = [2, MODEL["layers"] // 2, MODEL["layers"] - 3] if MODEL["layers"] >= 6 else [0, 1, 2]
# docs/runner.md, "vLLM on a GPU": per layer, cosine >= 0.9995 on every token and max |a - b|
# within 6 bf16 steps at the layer's largest value.
MIN_COSINE = 0.9995
MAX_BF16_STEPS = 6


def emit(result: dict) -> None:
    print("RESULT " + json.dumps(result, sort_keys=True), flush=True)


def cmd_stack(args) -> dict:
    import importlib.metadata as metadata

    from apiaudit.runner.server_train import probe_interpreter

    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "absent"

    runner = {name: version(name) for name in ("torch", "transformers", "speculators", "vllm", "openai")}
    trainer = probe_interpreter(args.trainer_python) if args.trainer_python else None
    gpu = None
    if DEVICE == "cuda":
        import torch

        gpu = torch.cuda.get_device_name(0)
    return {"runner": runner, "trainer": trainer, "gpu": gpu, "python": sys.version.split()[0]}


def cmd_model(args) -> dict:
    from device_check import build_bench_model

    started = time.monotonic()
    model = build_bench_model(args.work, args.samples, hidden=MODEL["hidden"], layers=MODEL["layers"],
                              vocab=MODEL["vocab"], device=DEVICE)
    size = sum(p.stat().st_size for p in model.iterdir() if p.name.endswith(".safetensors"))
    return {"model": MODEL, "layers": LAYERS, "samples": args.samples, "weights_mb": round(size / 2**20),
            "build_s": round(time.monotonic() - started, 1)}


def config_text(args, name: str) -> str:
    work = args.work
    extract = f'backend = "{args.backend}"\nlayers = {LAYERS}\ndtype = "bfloat16"\n'
    if args.backend == "hf":
        extract += f'device = "{DEVICE}"\nbatch_size = 16\n'
    else:
        extract += "gpu_memory_utilization = 0.5\n"
    text = (
        f'run_dir = "{work / name}"\n[model]\npath = "{work / "model"}"\n'
        f'[data]\nconversations = "{work / "conversations.jsonl"}"\nseq_length = 1024\n'
        f"[extract]\n{extract}"
        f"[vocab]\ndraft_vocab_size = {min(8192, MODEL['vocab'])}\n"
        f'[train]\nepochs = 1\ntotal_seq_len = 2048\nnum_workers = 2\nhidden_states_dtype = "bfloat16"\n'
    )
    if args.backend == "vllm-server":
        if args.trainer_python:
            text += f'python = "{args.trainer_python}"\n'
        if args.trainer_flags:
            text += f"trainer_flags = {json.dumps(json.loads(args.trainer_flags))}\n"
        text += "[server]\nstartup_timeout_s = 900\nextra_args = [\"--enforce-eager\"]\n"
        if args.server_command:
            text += f"command = {json.dumps(json.loads(args.server_command))}\n"
    return text


def cmd_pipeline(args) -> dict:
    from device_check import run_recorded

    # The hf run is the reference for `compare`: its hidden states are all it needs.
    stages = args.stages or (["prepare", "extract"] if args.backend == "hf" else None)
    result: dict = {"name": args.name, "backend": args.backend, "stages_run": stages or "all"}
    if run_recorded(args.work, args.name, config_text(args, args.name), result, only=stages) is None:
        return result
    extract = json.loads((args.work / args.name / "extract" / "manifest.json").read_text())["counts"]
    if isinstance(extract.get("server"), dict):
        server = extract["server"]
        result["server"] = {k: server.get(k) for k in ("ready_s", "version", "client", "launch_findings")}
        result["server_argv"] = server.get("argv")
    return result


def bf16_step(value: float) -> float:
    """The spacing of bfloat16 numbers at `value` (8 significant bits)."""
    import math

    return 2.0 ** (math.floor(math.log2(value)) - 7) if value > 0 else 0.0


def cmd_compare(args) -> dict:
    """Per captured layer, over all samples: the largest |hf - server|, the smallest cosine per token."""
    import torch
    from device_check import add_layer_pair, finish_layers
    from safetensors.torch import load_file

    hf_dir = args.work / args.hf_run / "extract" / "samples"
    server_dir = args.work / args.server_run / "extract" / "hidden_states"
    files = sorted(hf_dir.glob("data_*.pt"), key=lambda p: int(p.stem.split("_")[1]))
    layers: list[dict] = []
    tokens_equal = True
    for file in files:
        index = int(file.stem.split("_")[1])
        reference = torch.load(file, weights_only=True)
        served = load_file(str(server_dir / f"hs_{index}.safetensors"))
        tokens_equal &= reference["input_ids"].tolist() == served["token_ids"].tolist()
        for i, x in enumerate(reference["hidden_states"]):
            add_layer_pair(layers, i, x, served["hidden_states"][:, i])
    finish_layers(layers)
    within = tokens_equal and bool(files)
    for entry in layers:
        entry["bf16_steps"] = entry["max_abs"] / bf16_step(entry["max_ref_abs"]) if entry["max_ref_abs"] else None
        entry["within"] = (entry["shape_ok"] and entry["min_cos"] >= MIN_COSINE
                           and entry["bf16_steps"] is not None and entry["bf16_steps"] <= MAX_BF16_STEPS)
        within &= entry["within"]
    names = [f"layer {n}" for n in LAYERS] + ["last layer"]
    return {"a": args.hf_run, "b": args.server_run, "samples": len(files), "tokens_equal": tokens_equal,
            "tolerance": {"min_cos": MIN_COSINE, "max_bf16_steps": MAX_BF16_STEPS}, "within_tolerance": within,
            "layers": dict(zip(names, layers))}


LOAD = """
import json, sys, torch
from pathlib import Path
from speculators.model import SpeculatorModel
from speculators.models.eagle3.data import shift_batch
from speculators.train.data import ArrowDataset, CollateFn
try:
    from speculators._vendor.hs_connectors import FileTransfer
except ImportError:
    from hs_connectors import FileTransfer
checkpoint, model_path, data, hidden_states, device = sys.argv[1:6]
draft = SpeculatorModel.from_pretrained(checkpoint, verifier=model_path).to(device)
dataset = ArrowDataset(max_len=2048, datapath=data, transfer=FileTransfer(Path(hidden_states)), on_missing="raise",
                       hidden_states_dtype=torch.bfloat16)
hidden = draft.config.transformer_layer_config.hidden_size
batch = CollateFn(2048, hidden, num_target_layers=len(draft.target_layer_ids), dtype=torch.bfloat16,
                  preprocess=shift_batch)([dataset[0]])
batch = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
with torch.no_grad(), torch.autocast(device, dtype=torch.bfloat16):
    tokens, loss, metrics = draft(**batch, ttt_steps=3)
print(json.dumps({"class": type(draft).__name__, "loss": float(loss),
                  "draft_tokens": [list(t.shape) for t in tokens] if isinstance(tokens, (list, tuple)) else str(type(tokens))}))
"""


def cmd_load(args) -> dict:
    run = args.work / args.name
    checkpoint = json.loads((run / "train" / "manifest.json").read_text())["counts"]["checkpoint"]
    started = time.monotonic()
    done = subprocess.run(
        [args.trainer_python or sys.executable, "-c", LOAD, checkpoint, str(args.work / "model"),
         str(run / "extract" / "data"), str(run / "extract" / "hidden_states"), DEVICE],
        capture_output=True, text=True, cwd=args.work,
    )
    result: dict = {"checkpoint": checkpoint, "load_s": round(time.monotonic() - started, 1)}
    if done.returncode != 0:
        result["failed"] = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
        result["traceback"] = done.stderr[-4000:]
        return result
    result["forward"] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def cmd_all(args) -> dict:
    """model, the hf reference, the server line, compare, load: one RESULT line each, then a summary."""
    results = {}
    steps = [("model", cmd_model, {}),
             ("hf", cmd_pipeline, {"name": "hf", "backend": "hf"}),
             ("server", cmd_pipeline, {"name": "server", "backend": "vllm-server"}),
             ("compare", cmd_compare, {"hf_run": "hf", "server_run": "server"}),
             ("load", cmd_load, {"name": "server"})]
    for label, command, overrides in steps:
        step_args = argparse.Namespace(**{**vars(args), "stages": None, **overrides})
        result = command(step_args)
        emit({"command": label, **result})
        results[label] = result
        if "failed" in result:
            break
    return {"ok": all("failed" not in r for r in results.values()) and len(results) == len(steps),
            "stage_s": results.get("server", {}).get("stage_s"),
            "server_ready_s": (results.get("server", {}).get("server") or {}).get("ready_s"),
            "within_tolerance": results.get("compare", {}).get("within_tolerance")}


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("stack", "model", "pipeline", "compare", "load", "all"):
        p = sub.add_parser(name)
        p.add_argument("work", type=Path)
        p.add_argument("--trainer-python", default=None)
        p.add_argument("--server-command", default=None, help="a JSON list: the server's launcher (default: vLLM's CLI)")
        p.add_argument("--samples", type=int, default=256)
        p.add_argument("--trainer-flags", default=None, help="a JSON list: [train] trainer_flags (the server line)")
        if name in ("pipeline", "load"):
            p.add_argument("name")
        if name == "pipeline":
            p.add_argument("--backend", choices=("hf", "vllm-server"), required=True)
            p.add_argument("--stages", nargs="+", default=None)
        if name == "compare":
            p.add_argument("hf_run")
            p.add_argument("server_run")
    args = parser.parse_args()
    args.work = args.work.resolve()
    result = globals()[f"cmd_{args.command}"](args)
    emit({"command": args.command, **result})
    return 1 if "failed" in result or result.get("ok") is False or result.get("within_tolerance") is False else 0


if __name__ == "__main__":
    raise SystemExit(main())
