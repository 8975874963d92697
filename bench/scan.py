"""Scan speed against named baselines, measured side by side in one run. Prints ratios.

    python bench/scan.py [--consumer speculators==0.3.0] [--provider vllm==0.16.0] [--repeat 3]

Baselines:
- griffe-full-load: Griffe's own static load of the whole provider package (what a
  non-lazy tool would pay before checking one call).
- pyright (only if installed): type-checking the same consumer files against the same provider.
Measured:
- cold scan: a fresh provider index (no index cache; releases already fetched).
- warm scan: the provider index answered from its cache.
- consumer stage: the visitor over every consumer file (parsed once, no cache), this
  engine's interpreter (guards, values) against the flow-insensitive walker of `--before`
  (a git ref, default the commit before the interpreter), as a share of the warm scan.
Targets (issue 2): cold <= 0.25 x griffe-full-load; warm < 0.5 s of work.
Target (issue 8): guard evaluation and value tracking cost <= 20% of the warm scan.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from apiaudit import sources  # noqa: E402
from apiaudit.audit import scan  # noqa: E402


def best_of(fn, repeat: int, clock=time.perf_counter) -> float:
    times = []
    for _ in range(repeat):
        t = clock()
        fn()
        times.append(clock() - t)
    return min(times)


def griffe_full_load(tree) -> None:
    import griffe

    loader = griffe.GriffeLoader(search_paths=[str(tree.root)], allow_inspection=False)
    for package in tree.packages:
        loader.load(package)


BEFORE_REF = "5bde386"  # the flow-insensitive visitor, before guards and values


def visitor_seconds(consumer, provider, repeat: int, before: str | None) -> tuple[float, float | None]:
    """(this visitor, the `before` ref's visitor) over every consumer file, parse excluded."""
    import ast
    import importlib.util

    from apiaudit.consumer import module_name
    from apiaudit.consumer.model import ConsumerOptions
    from apiaudit.consumer.visitor import ModuleVisitor

    options = ConsumerOptions(provider_packages=provider.packages, provider_version=provider.version, provider_distribution=provider.name)
    parsed = []
    for path in consumer.python_files():
        source = path.read_bytes().decode("utf-8", errors="replace")
        module, is_package = module_name(consumer, path)
        parsed.append((source, path.name, module, is_package, ast.parse(source)))

    def run(visitor_cls):
        for source, name, module, is_package, tree in parsed:
            visitor_cls(source, name, module, is_package, options).run(tree)

    cpu = time.process_time  # CPU seconds: a shared, loaded machine inflates wall time unevenly
    if not before:
        return best_of(lambda: run(ModuleVisitor), repeat, cpu), None
    try:
        text = subprocess.run(["git", "show", f"{before}:apiaudit/consumer/visitor.py"], capture_output=True, check=True,
                              cwd=Path(__file__).resolve().parents[1]).stdout
    except (OSError, subprocess.CalledProcessError):
        return best_of(lambda: run(ModuleVisitor), repeat, cpu), None
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "visitor_before.py"
        file.write_bytes(text)
        spec = importlib.util.spec_from_file_location("visitor_before", file)
        old = importlib.util.module_from_spec(spec)
        sys.modules["visitor_before"] = old  # dataclasses look their module up
        spec.loader.exec_module(old)  # apiaudit's own earlier code, not audited code
        # Interleaved, best of each: a loaded machine slows both alike.
        afters, befores = [], []
        for _ in range(max(repeat, 5)):
            afters.append(best_of(lambda: run(ModuleVisitor), 1, cpu))
            befores.append(best_of(lambda: run(old.ModuleVisitor), 1, cpu))
        return min(afters), min(befores)


def modules_loaded(consumer: str, provider: str, cache: Path) -> int:
    """How many provider modules one cold scan reads with Griffe (the registry's model modules
    only where a guard or attribute needs them: an ast pre-check of class bases picks those)."""
    from apiaudit.provider import loader

    loaded: set[str] = set()
    original = loader.ModuleLoader.load

    def counting(self, dotted):
        module = original(self, dotted)
        if module is not None:
            loaded.add(dotted)
        return module

    loader.ModuleLoader.load = counting
    try:
        scan([consumer], provider, cache_dir=cache, use_index_cache=False)
    finally:
        loader.ModuleLoader.load = original
    return len(loaded)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--consumer", default="speculators==0.3.0")
    ap.add_argument("--provider", default="vllm==0.16.0")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cache-dir", type=Path, default=None)
    ap.add_argument("--before", default=BEFORE_REF, help="git ref of the visitor to compare the consumer stage with ('' to skip)")
    args = ap.parse_args()
    cache = args.cache_dir or sources.default_cache_dir()
    provider = sources.resolve(args.provider, cache_dir=cache)
    consumer = sources.resolve(args.consumer, cache_dir=cache)
    print(f"consumer {consumer.name} {consumer.version}, provider {provider.name} {provider.version}; best of {args.repeat}")

    full = best_of(lambda: griffe_full_load(provider), max(1, args.repeat - 1))
    index_dir = Path(tempfile.mkdtemp(prefix="apiaudit-bench-"))
    try:
        def cold():
            shutil.rmtree(index_dir / "index", ignore_errors=True)
            scan([args.consumer], args.provider, cache_dir=cache, use_index_cache=False)

        cold_s = best_of(cold, args.repeat)
        # Warm: one run fills the index cache under a private dir, later runs read it.
        warm_cache = Path(tempfile.mkdtemp(prefix="apiaudit-bench-warm-"))
        (warm_cache / "releases").symlink_to(Path(cache) / "releases", target_is_directory=True)
        scan([args.consumer], args.provider, cache_dir=warm_cache)
        warm_s = best_of(lambda: scan([args.consumer], args.provider, cache_dir=warm_cache), args.repeat)
        warm_cpu = best_of(lambda: scan([args.consumer], args.provider, cache_dir=warm_cache), args.repeat, time.process_time)
        shutil.rmtree(warm_cache, ignore_errors=True)
    finally:
        shutil.rmtree(index_dir, ignore_errors=True)

    print(f"{'griffe-full-load (baseline)':32s} {full:7.2f} s   1.00x")
    print(f"{'apiaudit cold scan':32s} {cold_s:7.2f} s   {cold_s / full:.2f}x of baseline (target <= 0.25x)")
    total = sum(1 for package in provider.packages for _ in (Path(provider.root) / package).rglob("*.py"))
    print(f"{'provider modules loaded (cold)':32s} {modules_loaded(args.consumer, args.provider, cache):7d}     of {total} in {provider.name} {provider.version}")
    print(f"{'apiaudit warm scan':32s} {warm_s:7.2f} s   {warm_s / full:.2f}x of baseline (target < 0.5 s)")
    after, before = visitor_seconds(consumer, provider, args.repeat, args.before)
    # CPU seconds on both sides of the ratio.
    if before is not None:
        extra = after - before
        print(f"{'warm scan, CPU':32s} {warm_cpu:7.3f} s")
        print(f"{'consumer stage before (' + args.before + ')':32s} {before:7.3f} s CPU")
        print(f"{'consumer stage after':32s} {after:7.3f} s CPU   guards + values cost {extra:+.3f} s = {extra / warm_cpu:.0%} of the warm scan (target <= 20%)")
    else:
        print(f"{'consumer stage':32s} {after:7.3f} s CPU   = {after / warm_cpu:.0%} of the warm scan")
    pyright = shutil.which("pyright")
    if pyright:
        files = [str(p) for p in consumer.python_files()]
        env_path = str(provider.root)

        def run_pyright():
            subprocess.run([pyright, "--pythonpath", sys.executable, *files], capture_output=True, env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"})

        py_s = best_of(run_pyright, 1)
        print(f"{'pyright on the same files':32s} {py_s:7.2f} s   apiaudit cold is {py_s / cold_s:.1f}x faster")
    else:
        print("pyright not installed: skipped (pip install pyright to compare)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
