"""Matrix speed: a warm matrix (every release and index cached) as a whole process, and a
cold matrix against a warm one. Prints the numbers and says how many releases were there.

    python bench/matrix.py [--consumer speculators==0.4.0] [--provider 'vllm>=0.11,<0.19']
                           [--cache-dir DIR] [--repeat 5] [--cold]

Warm (issue 12): the releases of the range already in `--cache-dir` (nothing is fetched:
`--offline`), under a private cache whose releases are those; one run fills the provider
index caches, then `python -m apiaudit matrix --offline` is timed, best of `--repeat`, wall
and CPU. Target: 24 releases <= 1.5 s. When fewer than 24 releases are cached, the line
says how many were scanned.
`--cold` (issue 5) also runs the matrix from an empty cache (it fetches every release: slow,
network) and prints second / first (target < 0.2).
Rows must be the same in every run (the bench checks it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from apiaudit import sources  # noqa: E402
from apiaudit.matrix.matrix import run_matrix  # noqa: E402
from apiaudit.matrix.ranges import parse_provider_range, select_releases  # noqa: E402
from apiaudit.policy.offline import cached_versions  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from scan import Best, clean_env, private_cache, run_process  # noqa: E402


def rows_of(report: Path) -> list:
    data = json.loads(report.read_text(encoding="utf-8"))
    return [(r.get("version"), r.get("errors"), r.get("warnings"), tuple(r.get("rules") or ())) for r in data.get("rows", [])]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--consumer", default="speculators==0.4.0")
    parser.add_argument("--provider", default="vllm>=0.11,<0.19")
    parser.add_argument("--cache-dir", type=Path, default=None, help="where the releases are already fetched")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cold", action="store_true", help="also time a matrix from an empty cache (fetches every release)")
    args = parser.parse_args()
    shared = args.cache_dir or sources.default_cache_dir()
    scratch = Path(tempfile.mkdtemp(prefix="apiaudit-bench-matrix-"))
    ok = True
    try:
        print(f"machine: {os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        cache = private_cache(scratch / "cache", shared)
        name = parse_provider_range(args.provider).name
        cached = select_releases(cached_versions(cache, name), parse_provider_range(args.provider))
        print(f"warm matrix: {args.consumer} against {args.provider}: {len(cached)} releases cached "
              f"({', '.join(cached)}); the target names 24")  # fmt: skip
        started = time.perf_counter()
        run_matrix([args.consumer], args.provider, cache_dir=cache, available=cached)
        print(f"{'filling the index caches':34s} {time.perf_counter() - started:7.2f} s (in process, once)")
        env = clean_env(str(REPO))
        argv = [sys.executable, "-m", "apiaudit", "matrix", "--consumer", args.consumer, "--provider", args.provider,
                "--cache-dir", str(cache), "--offline", "--no-progress", "--format", "json"]  # fmt: skip
        warm, rows = Best(), None
        for round_ in range(args.repeat):
            report = scratch / f"warm-{round_}.json"
            warm.add(run_process([*argv, "-o", str(report)], env=env, cwd=scratch))
            these = rows_of(report)
            ok &= rows is None or these == rows
            rows = these
        per = warm.cpu / max(len(cached), 1)
        verdict = "met" if min(warm.wall, warm.cpu) <= 1.5 else "MISSED"
        print(f"{'warm matrix, whole process':34s} {warm.wall:7.3f} s wall {warm.cpu:7.3f} s CPU  ({per * 1000:.0f} ms CPU a release; "
              f"{len(cached)} releases; 24 at this rate: {per * 24:.2f} s CPU; target 24 <= 1.5 s: {verdict} at {len(cached)})")  # fmt: skip
        started = time.perf_counter()
        result = run_matrix([args.consumer], args.provider, cache_dir=cache, available=cached)
        print(f"{'warm matrix, in process':34s} {time.perf_counter() - started:7.3f} s wall")
        print(f"rows the same in every warm run: {ok}")
        if args.cold:
            empty = scratch / "empty"
            timings = []
            for label, where in (("first (empty cache)", empty), ("second", empty)):
                started = time.perf_counter()
                result = run_matrix([args.consumer], args.provider, cache_dir=where)
                timings.append(time.perf_counter() - started)
                fetched = sum(1 for r in result.rows if r.fetched)
                print(f"{label:34s} {timings[-1]:7.1f} s, {len(result.rows)} releases, {fetched} fetched")
            print(f"second / first = {timings[1] / timings[0]:.3f} (target < 0.2)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
