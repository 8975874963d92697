"""Honesty on large real code: error counts and a seeded sample of errors to verify by hand.

    python bench/real_code.py [--pair transformers:torch --pair pandas:numpy] [--sample 30] [--seed 13]
                              [--venv /tmp/apiaudit-real] [--json out.json]

The consumers and providers are distributions installed in a Python. Without `--venv` that is
the running interpreter; with `--venv DIR` the bench builds DIR (CPU torch, transformers,
pandas, numpy; pip runs isolated, from a private working directory) if it does not exist
yet and re-runs itself with DIR's interpreter, this checkout first on its path. apiaudit never
imports what it audits; the venv only holds the installed files it reads.

Prints, per pair: files scanned, findings by rule, the error count, and `--sample` errors
drawn with `random.Random(seed)` from the errors sorted by (path, line, column, rule), each as
`path:line  rule  message`. bench/results/real_code.md records the verdicts.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

VENV_PACKAGES = ("torch==2.13.0", "transformers==4.57.6", "pandas", "numpy")


def build_venv(venv: Path) -> Path:
    """A private venv with the audited distributions; pip runs isolated from a temp cwd."""
    python = venv / "bin" / "python"
    if python.exists():
        return python
    work = Path(tempfile.mkdtemp(prefix="apiaudit-venv-build-"))
    subprocess.run([sys.executable, "-I", "-m", "venv", str(venv)], check=True, cwd=work)
    # --index-url stays the user's configured one; torch==2.13.0 resolves to the CPU build.
    subprocess.run([str(python), "-I", "-m", "pip", "install", "-q", *VENV_PACKAGES], check=True, cwd=work)
    return python


def main() -> int:
    sys.stdout.reconfigure(line_buffering=True)  # progress is visible when piped to a file
    ap = argparse.ArgumentParser()
    ap.add_argument("--pair", action="append", help="CONSUMER:PROVIDER (installed distributions)")
    ap.add_argument("--sample", type=int, default=30)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--venv", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None, help="write every finding here")
    args = ap.parse_args()
    pairs = args.pair or ["transformers:torch", "pandas:numpy"]

    if args.venv is not None and Path(sys.prefix).resolve() != args.venv.resolve():
        python = build_venv(args.venv)
        env = dict(os.environ, PYTHONPATH=str(REPO))
        argv = [a for a in sys.argv[1:]]
        return subprocess.run([str(python), str(Path(__file__).resolve()), *argv], env=env).returncode

    from apiaudit.audit import scan

    everything: dict[str, list[dict]] = {}
    for pair in pairs:
        consumer, _, provider = pair.partition(":")
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="apiaudit-real-") as cache:
            report = scan([consumer], provider, cache_dir=Path(cache), use_index_cache=False)
        elapsed = time.perf_counter() - started
        rules = Counter((f.severity.value, f.rule) for f in report.findings)
        errors = sorted(
            (f for f in report.findings if f.severity.value == "error"),
            key=lambda f: (f.path, f.line, f.column, f.rule),
        )
        print(f"== {consumer} x {provider} ({report.provider.version}): {report.files_scanned} files, {elapsed:.0f} s")
        for (severity, rule), n in sorted(rules.items()):
            print(f"   {severity:7s} {rule:28s} {n}")
        print(f"   errors: {len(errors)}")
        sample = random.Random(args.seed).sample(errors, min(args.sample, len(errors)))
        for i, f in enumerate(sample, 1):
            print(f"   {i:2d}. {f.path}:{f.line}  {f.rule}  {f.message}  [{f.provider_location or f.callee}]")
        everything[pair] = [
            {
                "path": f.path,
                "line": f.line,
                "rule": f.rule,
                "severity": f.severity.value,
                "message": f.message,
                "callee": f.callee,
                "signature": f.signature,
                "provider_location": f.provider_location,
                "source": f.source,
            }
            for f in report.findings
        ]
    if args.json:
        from apiaudit.infra.atomic import atomic_write

        atomic_write(args.json, json.dumps(everything, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
