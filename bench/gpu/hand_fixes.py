"""The three edits `apiaudit fix` had no recipe for when speculators 0.3.0 first ran on vLLM 0.20.0,
applied by hand to an overlay copy. `fix` makes them now; this stays as an independent check of
its overlay (tests/fixes/test_fix_speculators_vllm_0_20.py).

    python bench/gpu/hand_fixes.py OVERLAY_DIR OUT_DIR [--only EDIT,...]   (EDIT: sample-tokens, reply, cache-config)

Shows what speculators 0.3.0 needs on vLLM 0.20.0 beyond `apiaudit fix` (bench/gpu/results/):
* vllm-execute-model-needs-sample-tokens: after `R.execute_model(ARGS)` as a statement,
  `R.sample_tokens(None)` (vLLM's engine core does the same when there is no grammar);
* vllm-collective-rpc-unique-reply-rank-single-value: `N = R.collective_rpc(..., unique_reply_rank=K)`
  followed by `X = N[0]` becomes `X = N`;
* vllm-cache-config-no-prefix-caching (a recipe whose finding scan cannot make yet,
  fixtures/runtime/prefix_cache_default/): `CacheConfig(` opened on its own line and not
  passing enable_prefix_caching gets `enable_prefix_caching=False` as its first argument.
Line-based on purpose: a stand-in for the codemods, not one of them.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

EXECUTE = re.compile(r"^(?P<indent>\s*)(?P<receiver>[\w.]+)\.execute_model\((?P<args>.*)\)\s*$")
RPC_ASSIGN = re.compile(r"^\s*(?P<name>\w+)\s*=\s*[\w.]+\.collective_rpc\(")
INDEX_ZERO = r"^(?P<lead>\s*\w+\s*=\s*){name}\[0\]\s*$"
CACHE_CONFIG = re.compile(r"^(?P<indent>\s*)\w+\s*=\s*CacheConfig\(\s*$")


EDITS = ("sample-tokens", "reply", "cache-config")


def fix_text(text: str, edits: tuple[str, ...] = EDITS) -> tuple[str, list[str]]:
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    done: list[str] = []
    rpc_names: set[str] = set()
    pending_rpc: str | None = None
    for number, line in enumerate(lines, 1):
        out.append(line)
        opened = CACHE_CONFIG.match(line.rstrip("\n"))
        if "cache-config" in edits and opened and not _passes(lines[number:], "enable_prefix_caching"):
            out.append(f"{opened['indent']}    enable_prefix_caching=False,\n")
            done.append(f"{number}: CacheConfig(enable_prefix_caching=False)")
        match = EXECUTE.match(line.rstrip("\n"))
        if "sample-tokens" in edits and match and "=" not in line.split("execute_model", 1)[0]:
            out.append(f"{match['indent']}{match['receiver']}.sample_tokens(None)\n")
            done.append(f"{number}: sample_tokens after execute_model")
        assign = RPC_ASSIGN.match(line)
        if assign:
            pending_rpc = assign["name"]
        if pending_rpc and "unique_reply_rank" in line:
            rpc_names.add(pending_rpc)
        if pending_rpc and line.strip().startswith(")"):
            pending_rpc = None
        for name in rpc_names:
            indexed = re.match(INDEX_ZERO.format(name=re.escape(name)), line.rstrip("\n"))
            if indexed and "reply" in edits:
                out[-1] = f"{indexed['lead']}{name}\n"
                done.append(f"{number}: {name}[0] -> {name}")
    return "".join(out), done


def _passes(rest: list[str], keyword: str) -> bool:
    """Whether the call opened just above passes `keyword` before its closing parenthesis."""
    for line in rest:
        if line.strip().startswith(")"):
            return False
        if line.strip().startswith(f"{keyword}="):
            return True
    return False


def main(overlay: Path, target: Path, edits: tuple[str, ...] = EDITS) -> int:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(overlay, target)
    for path in sorted(target.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "execute_model" not in text and "unique_reply_rank" not in text:
            continue
        fixed, done = fix_text(text, edits)
        if done:
            path.write_text(fixed, encoding="utf-8")
            for entry in done:
                print(f"{path.relative_to(target)}:{entry}")
    return 0


if __name__ == "__main__":
    only = tuple(sys.argv[4].split(",")) if len(sys.argv) > 4 and sys.argv[3] == "--only" else EDITS
    raise SystemExit(main(Path(sys.argv[1]), Path(sys.argv[2]), only))
