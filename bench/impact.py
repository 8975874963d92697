"""Impact and atlas speed on real releases (issue 38): prints the figures and their targets.

    python bench/impact.py --cache-dir CACHE [--downstreams 20] [--releases 25]
                           [--old vllm==0.16.0] [--new vllm==0.17.0] [--cold-size 4x6]
                           [--fetch vllm==0.17.0] [--skip impact,atlas,cold,fetch]

CACHE is a release cache holding the provider's releases and the downstreams (the test cache
does); nothing is fetched except by `--fetch`. The downstreams are the first `--downstreams`
entries of the bundled list (rules/vllm.downstream.toml) whose release is in CACHE; the
releases are the newest `--releases` final releases of the provider in CACHE.

- impact OLD NEW over the downstreams, as a whole process (`python -m apiaudit impact
  --offline`, the default local pool): cold = a private cache whose releases are CACHE's (so
  already downloaded) and with no index, consumer or whole-scan cache; then warm = the same
  again. Targets: warm <= 5 s, cold <= 120 s. The two reports must be the same.
- atlas downstreams x releases, warm, as a whole process (one untimed run first fills CACHE's
  index and whole-scan caches). Target: <= 30 s.
- cold atlas of `--cold-size` (downstreams x releases) with 2 workers against 1 (each from its
  own private cache as above; every scan on one CPU, APIAUDIT_JOBS=1, so that one worker is one
  CPU: a lone scan would otherwise split a large consumer's files over both). Target: >= 1.7x. Then the per-pair costs from the 1-worker
  cache: scans again with the index kept (whole-scan and consumer caches dropped), and warm:
  cold per pair, scan per pair with a warm index, index build per release (the difference),
  warm per pair. Every atlas of one size must be the same grid.
- `--fetch NAME==VERSION`: one release fetched into an empty cache (network), the fetch figure.

Every timing is a whole process (its wall and CPU seconds); the machine's load average is
printed with each, since a loaded machine slows every figure.
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
sys.path.insert(0, str(Path(__file__).parent))

from scan import clean_env, private_cache, run_process  # noqa: E402

# What a cold run must not find: every cache a scan fills, the releases aside.
_SCAN_CACHES = ("index", "consumer", "patterns", "results", "exact-fixes", "sarif")
_INDEX = "index"


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def cached_downstreams(cache: Path, count: int) -> list[str]:
    from apiaudit.infra.tomlcompat import tomllib
    from apiaudit.sources import cache as release_cache

    with open(REPO / "rules" / "vllm.downstream.toml", "rb") as handle:
        listed = tomllib.load(handle)["downstream"]
    specs = [e if isinstance(e, str) else e["spec"] for e in listed]
    found = [s for s in specs if "==" in s and release_cache.marker_stamp(release_cache.entry_dir(cache, *s.split("==", 1)))]
    return found[:count]


def cached_releases(cache: Path, name: str, count: int) -> list[str]:
    from packaging.version import Version

    from apiaudit.policy.offline import cached_versions

    finals = [v for v in cached_versions(cache, name) if not Version(v).is_prerelease]
    return sorted(finals, key=Version)[-count:]


def write_list(path: Path, specs: list[str]) -> Path:
    path.write_text("replace-bundled = true\ndownstream = [" + ", ".join(f'"{s}"' for s in specs) + "]\n", encoding="utf-8")
    return path


def fresh_cache(base: Path, shared: Path) -> Path:
    if base.exists():
        shutil.rmtree(base)
    return private_cache(base, shared)


def forget(cache: Path, keep_index: bool = False) -> None:
    for name in _SCAN_CACHES:
        if not (keep_index and name == _INDEX):
            shutil.rmtree(cache / name, ignore_errors=True)


def impact_run(old: str, new: str, listed: Path, cache: Path, out: Path, work: Path):
    argv = [sys.executable, "-m", "apiaudit", "impact", old, new, "--downstream", str(listed), "--cache-dir", str(cache),
            "--offline", "--format", "json", "-o", str(out), "--no-progress"]  # fmt: skip
    run = run_process(argv, env=clean_env(str(REPO)), cwd=work, timeout=3600)
    if run.returncode not in (0, 1):
        raise SystemExit(f"impact exited {run.returncode}: {' '.join(argv)}")
    return run


def atlas_run(name: str, releases: list[str], listed: Path, cache: Path, out: Path, work: Path, workers: int,
              one_cpu_a_scan: bool = False):  # fmt: skip
    """The atlas as a whole process (in-process `run_atlas` with the releases given: nothing listed).
    `one_cpu_a_scan`: no scan splits a consumer's files over processes (APIAUDIT_JOBS=1), so that
    one worker is one CPU (a pool's tasks use one each anyway)."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--child-atlas", name, ",".join(releases), str(listed),
            str(cache), str(out), str(workers)]  # fmt: skip
    env = clean_env(str(REPO))
    if one_cpu_a_scan:
        env["APIAUDIT_JOBS"] = "1"
    run = run_process(argv, env=env, cwd=work, timeout=3600)
    if run.returncode != 0:
        raise SystemExit(f"atlas child exited {run.returncode}: {' '.join(argv)}")
    return run


def child_atlas(name: str, releases: str, listed: str, cache: str, out: str, workers: str) -> None:
    from apiaudit.impact.atlas import run_atlas
    from apiaudit.impact.atlas_page import atlas_to_dict
    from apiaudit.impact.executors import open_executor

    versions = releases.split(",")
    with open_executor("local", workers=int(workers)) as executor:
        atlas = run_atlas(f"{name}>={versions[0]},<={versions[-1]}", downstream_files=[Path(listed)], cache_dir=Path(cache),
                          available=versions, executor=executor)  # fmt: skip
    data = atlas_to_dict(atlas)
    data.pop("duration_s", None)
    Path(out).write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")


def counts(out: Path) -> str:
    data = json.loads(out.read_text(encoding="utf-8"))
    outcomes: dict[str, int] = {}
    for row in data.get("rows", data.get("downstreams", [])):
        for cell in row.get("cells", [row]):
            outcomes[cell["outcome"]] = outcomes.get(cell["outcome"], 0) + 1
    return ", ".join(f"{n} {k}" for k, n in sorted(outcomes.items()))


def same(a: Path, b: Path, what: str) -> bool:
    left, right = (json.loads(p.read_text(encoding="utf-8")) for p in (a, b))
    for data in (left, right):
        data.pop("duration_s", None)
    if left != right:
        print(f"  !! {what}: the reports differ ({a.name} vs {b.name})")
        return False
    return True


def line(label: str, wall: float, cpu: float, target: str = "") -> None:
    print(f"  {label:44s} {wall:7.1f} s wall {cpu:7.1f} s cpu  {target}  [{load()}]", flush=True)


def bench_impact(args, shared: Path, work: Path, downstreams: list[str]) -> bool:
    listed = write_list(work / "impact-downstreams.toml", downstreams)
    cache = fresh_cache(work / "impact-cache", shared)
    print(f"impact {args.old} -> {args.new} over {len(downstreams)} downstreams (releases already downloaded)")
    cold = impact_run(args.old, args.new, listed, cache, work / "impact-cold.json", work)
    line("cold (no index, consumer or whole-scan cache)", cold.wall, cold.cpu, f"target <= 120 s: {'met' if cold.wall <= 120 else 'MISSED'}")
    warm = impact_run(args.old, args.new, listed, cache, work / "impact-warm.json", work)
    line("warm", warm.wall, warm.cpu, f"target <= 5 s: {'met' if warm.wall <= 5 else 'MISSED'}")
    print(f"  downstreams: {counts(work / 'impact-warm.json')}")
    return same(work / "impact-cold.json", work / "impact-warm.json", "impact cold vs warm")


def bench_atlas(args, shared: Path, work: Path, downstreams: list[str], releases: list[str]) -> bool:
    listed = write_list(work / "atlas-downstreams.toml", downstreams)
    print(f"atlas {len(downstreams)} downstreams x {len(releases)} releases ({releases[0]} .. {releases[-1]}), warm, in {shared}")
    started = time.perf_counter()
    atlas_run(args.provider, releases, listed, shared, work / "atlas-fill.json", work, args.workers)
    print(f"  {'filling the caches (untimed)':44s} {time.perf_counter() - started:7.1f} s", flush=True)
    warm = atlas_run(args.provider, releases, listed, shared, work / "atlas-warm.json", work, args.workers)
    line("warm", warm.wall, warm.cpu, f"target <= 30 s: {'met' if warm.wall <= 30 else 'MISSED'}")
    print(f"  cells: {counts(work / 'atlas-warm.json')}")
    return same(work / "atlas-fill.json", work / "atlas-warm.json", "atlas fill vs warm")


def bench_cold(args, shared: Path, work: Path, downstreams: list[str], releases: list[str]) -> bool:
    across, down = (int(x) for x in args.cold_size.split("x"))
    chosen, versions = downstreams[:across], releases[-down:]
    pairs = len(chosen) * len(versions)
    listed = write_list(work / "cold-downstreams.toml", chosen)
    print(f"cold atlas {len(chosen)} downstreams x {len(versions)} releases ({versions[0]} .. {versions[-1]}) = {pairs} pairs, "
          "each run from its own cache (releases already downloaded)")  # fmt: skip
    runs = {}
    for workers in (1, 2):
        cache = fresh_cache(work / f"cold-cache-{workers}", shared)
        runs[workers] = atlas_run(args.provider, versions, listed, cache, work / f"cold-{workers}.json", work, workers, True)
        line(f"cold, {workers} worker(s)", runs[workers].wall, runs[workers].cpu)
    ratio = runs[1].wall / runs[2].wall
    print(f"  2 workers vs 1: {ratio:.2f}x  target >= 1.7x: {'met' if ratio >= 1.7 else 'MISSED'}")
    ok = same(work / "cold-1.json", work / "cold-2.json", "cold atlas, 1 vs 2 workers")
    one = work / "cold-cache-1"
    forget(one, keep_index=True)
    indexed = atlas_run(args.provider, versions, listed, one, work / "cold-indexed.json", work, 1, True)
    line("1 worker, index kept (scans cold)", indexed.wall, indexed.cpu)
    warm = atlas_run(args.provider, versions, listed, one, work / "cold-warm.json", work, 1, True)
    line("1 worker, warm", warm.wall, warm.cpu)
    ok = same(work / "cold-1.json", work / "cold-indexed.json", "cold vs index kept") and ok
    ok = same(work / "cold-1.json", work / "cold-warm.json", "cold vs warm") and ok
    print("  per pair (1 worker, whole process over the pairs; includes the process start):")
    print(f"    cold pair                  {runs[1].wall / pairs:6.2f} s wall {runs[1].cpu / pairs:6.2f} s cpu")
    print(f"    pair with the index warm   {indexed.wall / pairs:6.2f} s wall {indexed.cpu / pairs:6.2f} s cpu")
    print(f"    index build per release    {(runs[1].wall - indexed.wall) / len(versions):6.2f} s wall "
          f"{(runs[1].cpu - indexed.cpu) / len(versions):6.2f} s cpu  (cold minus index-warm, over {len(versions)} releases)")  # fmt: skip
    print(f"    warm pair                  {warm.wall / pairs:6.3f} s wall {warm.cpu / pairs:6.3f} s cpu")
    return ok


def bench_fetch(spec: str, work: Path) -> None:
    cache = work / "fetch-cache"
    shutil.rmtree(cache, ignore_errors=True)
    code = f"from apiaudit import sources; from pathlib import Path; sources.resolve({spec!r}, cache_dir=Path({str(cache)!r}))"
    run = run_process([sys.executable, "-c", code], env=clean_env(str(REPO)), cwd=work, timeout=1800)
    marker = next((cache / "releases").glob("*/complete.json"), None)
    fetched = json.loads(marker.read_text(encoding="utf-8")).get("fetched_bytes", 0) if marker else 0
    print(f"fetch {spec} into an empty cache (network)")
    line(f"fetched ({fetched / 1e6:.1f} MB read)", run.wall, run.cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, required=True)
    parser.add_argument("--provider", default="vllm")
    parser.add_argument("--old", default="vllm==0.16.0")
    parser.add_argument("--new", default="vllm==0.17.0")
    parser.add_argument("--downstreams", type=int, default=20)
    parser.add_argument("--releases", type=int, default=25)
    parser.add_argument("--workers", type=int, default=2, help="the local pool's workers for the warm atlas")
    parser.add_argument("--cold-size", default="4x6", help="downstreams x releases of the cold atlas")
    parser.add_argument("--fetch", default=None, metavar="NAME==VERSION")
    parser.add_argument("--skip", default="", help="comma-separated: impact, atlas, cold")
    parser.add_argument("--keep", type=Path, default=None, help="keep the scratch folder here")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    shared = args.cache_dir.expanduser().resolve()
    downstreams = cached_downstreams(shared, args.downstreams)
    releases = cached_releases(shared, args.provider, args.releases)
    print(f"{len(downstreams)} downstreams, {len(releases)} {args.provider} releases in {shared}; {os.cpu_count()} CPUs; {load()}")
    work = args.keep or Path(tempfile.mkdtemp(prefix="apiaudit-bench-impact-"))
    work.mkdir(parents=True, exist_ok=True)
    ok = True
    try:
        if "impact" not in skip:
            ok = bench_impact(args, shared, work, downstreams) and ok
        if "atlas" not in skip:
            ok = bench_atlas(args, shared, work, downstreams, releases) and ok
        if "cold" not in skip:
            ok = bench_cold(args, shared, work, downstreams, releases) and ok
        if args.fetch:
            bench_fetch(args.fetch, work)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child-atlas":
        child_atlas(*sys.argv[2:8])
        sys.exit(0)
    sys.exit(main())
