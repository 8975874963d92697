"""Matrix speed: a warm matrix (every release and index cached) as a whole process, and a
cold matrix against a warm one. Prints the numbers and says how many releases were there.

    python bench/matrix.py [--consumer speculators==0.4.0] [--provider 'vllm>=0.11,<0.26']
                           [--cache-dir DIR] [--repeat 5] [--cold]

Warm (issue 12): the releases of the range already in `--cache-dir` (nothing is fetched:
`--offline`), under a private cache whose releases are those; one run fills the provider
index caches, then `python -m apiaudit matrix --offline` is timed, best of `--repeat`, wall
and CPU. Target: 24 releases <= 1.5 s. When fewer than 24 releases are cached, the line
says how many were scanned.
`--cold` (issue 12) also runs a matrix over the `--cold-releases` (12) newest of those releases
from an empty release cache twice, in this process: once reading only the .py files by
HTTP range requests, once downloading whole wheels (`--verify-wheels`); both find the index
answers an untimed first run left (at the same path), so what differs is the fetching.
Target: ranges <= 1/3 of whole wheels;
it says so when the index serves no ranges (network; ~5 GB downloaded for vLLM).
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
from apiaudit.matrix.ranges import parse_provider_range, select_releases  # noqa: E402
from apiaudit.matrix.sweep import run_matrix  # noqa: E402
from apiaudit.policy.offline import cached_versions  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from scan import Best, clean_env, private_cache, run_process  # noqa: E402


def rows_of(report: Path) -> list:
    data = json.loads(report.read_text(encoding="utf-8"))
    return [(r["version"], r["error"], r["warning"], tuple(r.get("rules") or ())) for r in data.get("rows", [])]


def fetched_by(cache: Path) -> tuple[dict[str, int], int]:
    """How the release entries of a cache were filled ({"ranges": n, "download": m}), and the
    bytes fetched from the index to fill them (as their markers record)."""
    counts: dict[str, int] = {}
    fetched = 0
    for marker in (cache / "releases").glob("*/complete.json"):
        data = json.loads(marker.read_text(encoding="utf-8"))
        method = data.get("fetched_by") or "download"
        counts[method] = counts.get(method, 0) + 1
        fetched += data.get("fetched_bytes") or 0
    return counts, fetched


def cold_comparison(args, cached: list[str], kept: Path, warm_rows) -> bool:
    """A cold matrix over `--cold-releases` releases read by range requests against the same matrix
    downloading whole wheels (`verify_wheels`), each from an empty release cache.

    Provider index answers are keyed by where a release lies and verified against its files, so
    one untimed run first fills them at the very path both timed runs extract to (kept with
    `--keep`); then the release entries are set aside before each timed run (and deleted after
    both): what differs between the two is the fetching, the part range requests change. Run in this process with the
    releases given (`available`), so the range holds only those.
    """
    chosen = cached[-args.cold_releases:]
    base = kept / "cold"
    print(f"cold matrix: {args.consumer} against {len(chosen)} releases ({chosen[0]} .. {chosen[-1]}) from an empty "
          f"release cache, index answers kept; target: ranges <= 1/3 of whole wheels")  # fmt: skip
    started = time.perf_counter()
    run_matrix([args.consumer], args.provider, cache_dir=base, available=chosen)
    print(f"{'filling the index answers':34s} {time.perf_counter() - started:7.1f} s (once; untimed)")
    timings: dict[str, float] = {}
    try:
        return _timed_cold_runs(args, chosen, base, warm_rows, timings)
    finally:
        shutil.rmtree(base / "set-aside", ignore_errors=True)


def _timed_cold_runs(args, chosen: list[str], base: Path, warm_rows, timings: dict[str, float]) -> bool:
    same = True
    for label, verify in (("whole wheels (verify_wheels)", True), ("range requests", False)):
        # Set the release entries aside, never delete them here: on ext4, creating a file soon
        # after many were deleted (the last 1-6 minutes) is several times slower, and a new
        # user's cold run has deleted nothing. They are deleted after both timed runs.
        if (base / "releases").exists():
            (base / "set-aside").mkdir(exist_ok=True)
            (base / "releases").rename(base / "set-aside" / f"releases-{time.time_ns()}")
        started, before = time.perf_counter(), os.times()
        result = run_matrix([args.consumer], args.provider, cache_dir=base, available=chosen, verify_wheels=verify)
        timings[label] = time.perf_counter() - started
        after = os.times()
        cpu = sum(after[:4]) - sum(before[:4])  # user and system, of this process and its children (pip too)
        methods, fetched = fetched_by(base)
        rows = [(r.version, r.errors, r.warnings, r.rules) for r in result.rows]
        same &= rows == [r for r in warm_rows or [] if r[0] in chosen]
        print(f"{label:34s} {timings[label]:7.1f} s wall {cpu:7.1f} s CPU (with the workers' and pip's); "
              f"{sum(r.fetched for r in result.rows)} fetched, {fetched / 1e6:,.0f} MB read from the index; "
              f"entries: {', '.join(f'{n} by {m}' for m, n in sorted(methods.items()))}")  # fmt: skip
        if not verify and not methods.get("ranges"):
            print("the package index served no byte ranges: every release was downloaded whole (no comparison)")
            return same
    ratio = timings["range requests"] / timings["whole wheels (verify_wheels)"]
    print(f"ranges / whole wheels = {ratio:.3f} (target <= 0.333: {'met' if ratio <= 1 / 3 else 'MISSED'})")
    print(f"rows the same as the warm run's: {same}")
    return same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--consumer", default="speculators==0.4.0")
    parser.add_argument("--provider", default="vllm>=0.11,<0.26")
    parser.add_argument("--cache-dir", type=Path, default=None, help="where the releases are already fetched")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cold", action="store_true",
                        help="also time a cold matrix read by range requests against one downloading whole wheels (network)")
    parser.add_argument("--cold-releases", type=int, default=12, help="releases in the cold matrices (the newest cached)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="a folder kept between runs for the private cache (its index answers are built once)")
    args = parser.parse_args()
    shared = args.cache_dir or sources.default_cache_dir()
    scratch = Path(tempfile.mkdtemp(prefix="apiaudit-bench-matrix-"))
    kept = args.keep.resolve() if args.keep else scratch
    ok = True
    try:
        print(f"machine: {os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        cache = private_cache(kept / "cache", shared)
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
        run_matrix([args.consumer], args.provider, cache_dir=cache, available=cached)
        print(f"{'warm matrix, in process':34s} {time.perf_counter() - started:7.3f} s wall")
        print(f"rows the same in every warm run: {ok}")
        if args.cold:
            ok &= cold_comparison(args, cached, kept, rows)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
