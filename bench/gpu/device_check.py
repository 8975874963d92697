"""What runs on the GPU machine once bench/gpu/gpu-stack.sh has installed the stack.

    python bench/gpu/device_check.py stack WORK            # import vllm; offline LLM.generate on a random Llama
    python bench/gpu/device_check.py model WORK            # the bench model and conversations
    python bench/gpu/device_check.py pipeline WORK NAME --backend hf|vllm [--overlay DIR]
    python bench/gpu/device_check.py compare WORK RUN_A RUN_B
    python bench/gpu/device_check.py load WORK NAME        # the checkpoint loads back and runs a forward

Each prints one JSON object; `pipeline` also records the traceback of a failing stage.
Nothing comes from a model hub: the models are random, made here with transformers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "runner"))
sys.path.insert(0, str(ROOT))

import os

# DEVICE_CHECK_DEVICE=cpu DEVICE_CHECK_HIDDEN=128 tries this script here before the device runs it.
DEVICE = os.environ.get("DEVICE_CHECK_DEVICE", "cuda")
BENCH_MODEL = {"hidden": int(os.environ.get("DEVICE_CHECK_HIDDEN", "2048")), "layers": 16, "vocab": 32000}
LAYERS = [2, 8, 13]


def emit(result: dict) -> None:
    print("RESULT " + json.dumps(result, sort_keys=True), flush=True)


def cmd_stack(args) -> dict:
    started = time.monotonic()
    import torch
    import vllm
    from gpu_pipeline import FIXTURE
    from tiny_llama import build_model_dir
    from vllm import LLM, SamplingParams

    imported_s = time.monotonic() - started
    model = build_model_dir(args.work / "tiny", FIXTURE, hidden_size=256, num_layers=4, num_heads=4,
                            num_kv_heads=2, intermediate_size=512, vocab_size=512, dtype="bfloat16")
    started = time.monotonic()
    llm = LLM(model=str(model), enforce_eager=True, gpu_memory_utilization=0.3, max_model_len=512)
    prompts = [{"prompt_token_ids": [2, 3, 10 + i, 11 + i, 12 + i]} for i in range(4)]
    outputs = llm.generate(prompts, SamplingParams(max_tokens=8, temperature=0.0))
    return {
        "vllm": vllm.__version__, "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
        "import_s": round(imported_s, 1), "generate_s": round(time.monotonic() - started, 1),
        "generated": [list(o.outputs[0].token_ids) for o in outputs],
    }


def build_bench_model(work: Path, samples: int, *, hidden: int, layers: int, vocab: int, device: str) -> Path:
    """Synthetic conversations and a random bfloat16 Llama of that shape (heads of 128) in WORK/model."""
    from gpu_pipeline import synthetic_conversations
    from tiny_llama import build_model_dir

    work.mkdir(parents=True, exist_ok=True)
    conversations = work / "conversations.jsonl"
    synthetic_conversations(conversations, samples)
    heads = max(1, hidden // 128)
    return build_model_dir(work / "model", conversations, hidden_size=hidden, num_layers=layers, num_heads=heads,
                           num_kv_heads=max(1, heads // 2), intermediate_size=int(hidden * 2.75), vocab_size=vocab,
                           dtype="bfloat16", device=device)


def cmd_model(args) -> dict:
    started = time.monotonic()
    build_bench_model(args.work, args.samples, hidden=BENCH_MODEL["hidden"], layers=BENCH_MODEL["layers"],
                      vocab=BENCH_MODEL["vocab"], device=DEVICE)
    return {"model": BENCH_MODEL, "samples": args.samples, "build_s": round(time.monotonic() - started, 1)}


def config_text(work: Path, name: str, backend: str) -> str:
    extract = f'backend = "{backend}"\nlayers = {LAYERS}\ndtype = "bfloat16"\nbatch_size = 16\n'
    extract += f'device = "{DEVICE}"\n' if backend == "hf" else "gpu_memory_utilization = 0.5\n"
    return (
        f'run_dir = "{work / name}"\n[model]\npath = "{work / "model"}"\n'
        f'[data]\nconversations = "{work / "conversations.jsonl"}"\nseq_length = 1024\n'
        f"[extract]\n{extract}"
        f"[vocab]\ndraft_vocab_size = 8192\n"
        f'[train]\ndevice = "{DEVICE}"\nepochs = 1\ntotal_seq_len = 2048\nnum_workers = 2\n'
    )


def run_recorded(work: Path, name: str, config: str, result: dict, **options):
    """Write WORK/NAME.toml and run the pipeline (forced past preflight); the summary, or None with the
    failure, its traceback (also WORK/NAME.traceback.txt) and the wall time in `result`."""
    from apiaudit.runner import load_config
    from apiaudit.runner.pipeline import run_pipeline
    from apiaudit.runner.progress import ConsoleReporter

    path = work / f"{name}.toml"
    path.write_text(config, encoding="utf-8")
    started = time.monotonic()
    try:
        summary = run_pipeline(load_config(path), force=True, reporter=ConsoleReporter(interval_s=30), **options)
    except BaseException as exc:  # the failure itself is the result
        result["failed"] = f"{type(exc).__name__}: {exc}"
        result["traceback"] = traceback.format_exc()
        (work / f"{name}.traceback.txt").write_text(result["traceback"], encoding="utf-8")
        summary = None
    else:
        result["stage_s"] = {s.stage: round(s.duration_s, 2) for s in summary.stages}
        result["stages"] = {s.stage: s.summary for s in summary.stages}
    result["wall_s"] = round(time.monotonic() - started, 1)
    return summary


def cmd_pipeline(args) -> dict:
    result: dict = {"name": args.name, "backend": args.backend, "overlay": str(args.overlay) if args.overlay else None}
    summary = run_recorded(args.work, args.name, config_text(args.work, args.name, args.backend), result,
                           overlay=args.overlay)
    if summary is not None:
        findings = summary.preflight.findings if summary.preflight is not None else []
        result["preflight"] = [f"{f.severity} {f.rule} {f.path}:{f.line}" for f in findings if f.severity != "info"]
    return result


def add_layer_pair(layers: list[dict], i: int, x, y) -> None:
    """Fold one sample's layer i (reference x, other y; [tokens, hidden]) into the running statistics."""
    import torch

    x, y = x.float(), y.float()
    if len(layers) <= i:
        layers.append({"max_abs": 0.0, "min_cos": 1.0, "sum_cos": 0.0, "rows": 0, "max_ref_abs": 0.0, "shape_ok": True})
    entry = layers[i]
    if x.shape != y.shape:
        entry["shape_ok"] = False
        return
    cos = torch.nn.functional.cosine_similarity(x, y, dim=-1)
    entry["max_abs"] = max(entry["max_abs"], float((x - y).abs().max()))
    entry["max_ref_abs"] = max(entry["max_ref_abs"], float(x.abs().max()))
    entry["min_cos"] = min(entry["min_cos"], float(cos.min()))
    entry["sum_cos"] += float(cos.sum())
    entry["rows"] += int(cos.numel())


def finish_layers(layers: list[dict]) -> None:
    for entry in layers:
        entry["mean_cos"] = entry.pop("sum_cos") / max(1, entry["rows"])


def cmd_compare(args) -> dict:
    """Per captured layer, over all samples: the largest |a - b| and the smallest cosine per token row."""
    import torch

    a_dir, b_dir = (args.work / name / "extract" / "samples" for name in (args.run_a, args.run_b))
    files = sorted(a_dir.glob("data_*.pt"))
    layers: list[dict] = []
    tokens_equal = True
    for file in files:
        a, b = (torch.load(d / file.name, weights_only=True) for d in (a_dir, b_dir))
        tokens_equal &= torch.equal(a["input_ids"], b["input_ids"]) and torch.equal(a["loss_mask"], b["loss_mask"])
        for i, (x, y) in enumerate(zip(a["hidden_states"], b["hidden_states"], strict=True)):
            add_layer_pair(layers, i, x, y)
    finish_layers(layers)
    names = [f"layer {n}" for n in LAYERS] + ["last layer"]
    return {"a": args.run_a, "b": args.run_b, "samples": len(files), "tokens_equal": tokens_equal,
            "layers": dict(zip(names, layers))}


def cmd_load(args) -> dict:
    import torch
    from gpu_pipeline import padded_inputs

    from apiaudit.runner.draft import load_draft

    run = args.work / args.name
    checkpoint = json.loads((run / "train" / "manifest.json").read_text())["counts"]["checkpoint"]
    draft = load_draft(checkpoint, device=DEVICE)
    sample = torch.load(run / "extract" / "samples" / "data_0.pt", weights_only=True)
    hidden, input_ids = padded_inputs(sample, DEVICE)
    with torch.no_grad():
        out = draft(hidden_states=hidden, input_ids=input_ids, ttt_steps=3)
    shapes = [list(t.shape) for t in out] if isinstance(out, (list, tuple)) else str(type(out))
    return {"checkpoint": str(checkpoint), "forward": shapes}


def main() -> int:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("stack", "model", "pipeline", "compare", "load"):
        p = sub.add_parser(name)
        p.add_argument("work", type=Path)
        if name == "model":
            p.add_argument("--samples", type=int, default=256)
        if name in ("pipeline", "load"):
            p.add_argument("name")
        if name == "pipeline":
            p.add_argument("--backend", choices=("hf", "vllm"), required=True)
            p.add_argument("--overlay", type=Path, default=None)
        if name == "compare":
            p.add_argument("run_a")
            p.add_argument("run_b")
    args = parser.parse_args()
    result = globals()[f"cmd_{args.command}"](args)
    emit({"command": args.command, **result})
    return 1 if "failed" in result else 0  # a failed stage stops the comparisons chained after it


if __name__ == "__main__":
    raise SystemExit(main())
