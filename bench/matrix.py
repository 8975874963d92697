"""A second matrix run over the same range against the first one. Prints the ratio.

    python bench/matrix.py [--consumer speculators==0.4.0] [--provider 'vllm>=0.11,<=0.17'] [--cache-dir DIR]

The first run starts from an empty cache (a fresh temporary folder unless --cache-dir
is given), so it fetches every release of the range; the second run reuses the release
and provider-index caches and must fetch nothing. Target (issue 5): second < 0.2 x first.
Both runs list the releases on the package index; that listing is part of both times.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from apiaudit.matrix.matrix import run_matrix  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--consumer", default="speculators==0.4.0")
    parser.add_argument("--provider", default="vllm>=0.11,<=0.17")
    parser.add_argument("--cache-dir", type=Path, help="start from this cache instead of an empty temporary one")
    args = parser.parse_args()
    scratch = None
    cache_dir = args.cache_dir
    if cache_dir is None:
        scratch = Path(tempfile.mkdtemp(prefix="apiaudit-bench-matrix-"))
        cache_dir = scratch
    try:
        runs = []
        for label in ("first", "second"):
            started = time.perf_counter()
            result = run_matrix([args.consumer], args.provider, cache_dir=cache_dir)
            elapsed = time.perf_counter() - started
            fetched = sum(1 for r in result.rows if r.fetched)
            runs.append((elapsed, fetched, result))
            compatible, _ = result.compatible_range
            print(f"{label:6} run: {len(result.rows)} releases, {fetched} fetched, compatible {compatible or 'none'}, {elapsed:.1f} s")
        (first, _, first_result), (second, second_fetched, second_result) = runs
        ratio = second / first
        same = [r.rules for r in first_result.rows] == [r.rules for r in second_result.rows]
        print(f"second / first = {ratio:.3f} (target < 0.2); second run fetched {second_fetched}; same rows: {same}")
        return 0 if ratio < 0.2 and second_fetched == 0 and same else 1
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
