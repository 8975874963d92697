"""The pipeline on a GPU with a model large enough that each stage takes seconds.

Not a pytest test (CI has no GPU): run on a CUDA machine as
    python tests/runner/gpu_pipeline.py WORKDIR [--samples N] [--hidden H] [--layers L]
It builds a random Llama (hidden 2048, 16 layers by default) and synthetic conversations
from the fixture's words, runs all four stages (hf backend on CUDA), runs them again (all
skipped), loads the draft back on the GPU, and prints the per-stage times as JSON.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from tiny_llama import words_of  # noqa: E402

FIXTURE = HERE.parents[1] / "fixtures" / "runner" / "conversations.jsonl"


def synthetic_conversations(path: Path, count: int, seed: int = 0) -> None:
    words = [w for w in words_of(FIXTURE) if w.isalpha() and "_" not in w]
    rng = random.Random(seed)

    def sentence(low: int, high: int) -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(low, high))) + "."

    with path.open("w", encoding="utf-8") as out:
        for _ in range(count):
            turns = []
            for _ in range(rng.randint(1, 3)):
                turns.append({"from": "human", "value": sentence(8, 40)})
                turns.append({"from": "gpt", "value": " ".join(sentence(10, 30) for _ in range(rng.randint(2, 6)))})
            out.write(json.dumps({"conversations": turns}) + "\n")


def padded_inputs(sample: dict, device: str):
    """A sample as the draft's forward takes it on CUDA: padded like the trainer's batches.

    speculators' block mask on CUDA covers whole 128-token blocks, so a sequence is padded
    to a multiple of 128 with speculators' own `slice_and_pad_to_length`.
    """
    import torch
    from speculators.train.data import slice_and_pad_to_length

    length = -(-sample["input_ids"].shape[0] // 128) * 128
    hidden = slice_and_pad_to_length(torch.cat(sample["hidden_states"][:-1], dim=-1), length)
    input_ids = slice_and_pad_to_length(sample["input_ids"], length)
    return hidden[None].to(device, torch.float32), input_ids[None].to(device)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--device", default="cuda", help="cpu: a quick check of this script without a GPU")
    args = parser.parse_args()

    import torch
    from tiny_llama import build_model_dir

    from apiaudit.runner import load_config
    from apiaudit.runner.draft import load_draft
    from apiaudit.runner.pipeline import run_pipeline
    from apiaudit.runner.progress import ConsoleReporter

    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    conversations = work / "conversations.jsonl"
    synthetic_conversations(conversations, args.samples)
    started = time.monotonic()
    model = build_model_dir(
        work / "model", conversations, hidden_size=args.hidden, num_layers=args.layers,
        num_heads=args.hidden // 128, num_kv_heads=max(1, args.hidden // 256),
        intermediate_size=int(args.hidden * 2.75), vocab_size=32000, dtype="bfloat16", device=args.device,
    )
    build_s = time.monotonic() - started
    config_path = work / "gpu.toml"
    config_path.write_text(
        f'run_dir = "run"\n[model]\npath = "{model}"\n'
        f'[data]\nconversations = "{conversations}"\nseq_length = 1024\n'
        f'[extract]\nbackend = "hf"\ndevice = "{args.device}"\ndtype = "bfloat16"\nbatch_size = 16\n'
        f'[vocab]\ndraft_vocab_size = 8192\n'
        f'[train]\ndevice = "{args.device}"\nepochs = {args.epochs}\ntotal_seq_len = 2048\nnum_workers = 2\n'
    )
    config = load_config(config_path)
    first = run_pipeline(config, reporter=ConsoleReporter(interval_s=10))
    second = run_pipeline(config, reporter=ConsoleReporter(interval_s=10))

    checkpoint = json.loads((config.run_dir / "train" / "manifest.json").read_text())["counts"]["checkpoint"]
    draft = load_draft(checkpoint, device=args.device)
    sample = torch.load(config.run_dir / "extract" / "samples" / "data_0.pt", weights_only=True)
    hidden, input_ids = padded_inputs(sample, args.device)
    with torch.no_grad():
        tokens = draft(hidden_states=hidden, input_ids=input_ids, ttt_steps=3)
    result = {
        "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else None,
        "torch": torch.__version__,
        "model": {"hidden": args.hidden, "layers": args.layers, "vocab": 32000, "build_s": round(build_s, 1)},
        "samples": args.samples,
        "preflight": first.preflight.extras if first.preflight else None,
        "first_run_s": {s.stage: round(s.duration_s, 2) for s in first.stages},
        "first_run": {s.stage: s.summary for s in first.stages},
        "second_run": {s.stage: s.status for s in second.stages},
        "draft_forward_tokens": [list(t.shape) for t in tokens],
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
