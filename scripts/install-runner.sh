#!/usr/bin/env bash
# Install the runner extra (torch, transformers, datasets, speculators) into the Python
# that runs this script (or $PYTHON), without letting pip resolve speculators' own torch pin.
#   RUNNER_TORCH        torch requirement (default torch==2.13.0, the CPU build on this machine's disk)
#   RUNNER_SPECULATORS  speculators requirement (default speculators==0.4.0; the runner supports 0.3-0.4)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="${PYTHON:-python3}"
torch_spec="${RUNNER_TORCH:-torch==2.13.0}"
speculators_spec="${RUNNER_SPECULATORS:-speculators==0.4.0}"

"$python" -m pip install -q "$torch_spec"
"$python" -m pip install -q -r "$here/runner-requirements.txt"
# --no-deps: its declared torch/transformers ranges are what the pins above satisfy,
# except torch, which stays the one installed first.
"$python" -m pip install -q --no-deps "$speculators_spec"
"$python" - <<'PY'
import importlib.metadata as m
print("runner extra:", ", ".join(f"{n} {m.version(n)}" for n in ("torch", "transformers", "datasets", "speculators")))
PY
