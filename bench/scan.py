"""Scan speed against named baselines: whole processes, measured side by side in one run.

    python bench/scan.py [--consumer speculators==0.3.0] [--provider vllm==0.16.0] [--repeat 5]
                         [--install-baselines] [--scaling-from vllm==0.12.0] [--skip-scaling]

Every timing is a whole process (interpreter start, imports, report written), run in one
interleaved loop so a loaded machine slows every contender alike; the best of `--repeat`
rounds is kept, in wall seconds and in CPU seconds (user + system of that process; prefer
CPU where the machine is shared). Each ratio is printed against its baseline:

- warm scan (index and consumer caches filled) vs mypy's warm run (its cache filled) on the
  same consumer files, the provider on its search path. Target (issue 12): <= 0.5x.
- `apiaudit --version` vs `python -c pass`. Target: <= 4x.
- warm hits (issue 26): the plain `apiaudit scan --consumer X --provider Y` run again with
  nothing changed (answered by `apiaudit.cache.replay` before click is imported) vs
  `python -c pass`, for each input form: `NAME==VERSION` (the seed pair), paths (the seed
  pair's cached release folders: the consumer's package, the provider's folder beside its
  dist-info) and installed distributions (markdown-it-py against mdurl, which apiaudit's own
  dependency rich installs into this interpreter: nothing is installed for the bench).
  Median of `--hit-repeat` interleaved rounds, wall and CPU. Target: <= 4x.
- cold scan (no index or consumer cache; releases already fetched) vs pyright on the same
  files. Target: <= 0.2x.
- scaling: a consumer built from the `--scaling-from` release's .py files under another
  top-level name (its `import vllm...` statements kept, so they are provider uses), cut to
  7 / 44 / 200 / 1,000 files and scanned against `--provider`: cold, warm, peak RSS and
  seconds per 1,000 calls checked. Targets at 1,000 files: cold <= 15 s, warm <= 1.5 s,
  RSS <= 300 MB.
- plugin contract (in process): the provider call-site lookup for the methods a plugin-style
  consumer overrides, as a share of its cold scan (issue 25: <= 20%): cold scans interleaved
  with and without it (`--plugin-repeat`); its cost is the difference, the time inside it is
  printed beside (it loads provider modules the checks would load anyway).
- consumer stage (in process): this visitor against the flow-insensitive one of `--before`
  (a git ref), CPU seconds on both sides, as a share of the warm scan (issue 8: <= 20%).

Findings must be identical cold and warm: the bench compares the JSON reports and exits 1
when they differ. `--install-baselines` makes a private venv with mypy and pyright in it;
without it, the mypy and pyright found next to this interpreter or on PATH are used (and
skipped with a line when there are none).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from apiaudit import sources  # noqa: E402


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float
    rss_mb: float
    returncode: int


def run_process(argv: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 1800,
                stdout: Path | None = None) -> Run:  # fmt: skip
    """One child process: its wall time, its own CPU time and peak RSS (os.wait4); its stdout to `stdout` if given."""
    started = time.perf_counter()
    with open(os.devnull, "wb") as sink, open(stdout or os.devnull, "wb") as out:
        child = subprocess.Popen(argv, stdout=out, stderr=sink, env=env, cwd=cwd)
        deadline = started + timeout
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                child.kill()
                pid, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.002)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, child.returncode)


class Best:
    """Best-of wall and CPU (independently) over rounds, and the largest RSS seen."""

    def __init__(self) -> None:
        self.wall = self.cpu = float("inf")
        self.rss = 0.0
        self.rounds = 0

    def add(self, run: Run) -> None:
        self.wall, self.cpu, self.rss = min(self.wall, run.wall), min(self.cpu, run.cpu), max(self.rss, run.rss_mb)
        self.rounds += 1


class Median:
    """Every round's wall and CPU seconds; the median of each."""

    def __init__(self) -> None:
        self.walls: list[float] = []
        self.cpus: list[float] = []

    def add(self, run: Run) -> None:
        self.walls.append(run.wall)
        self.cpus.append(run.cpu)

    @property
    def wall(self) -> float:
        return statistics.median(self.walls)

    @property
    def cpu(self) -> float:
        return statistics.median(self.cpus)


def clean_env(extra_path: str | None = None) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8"}
    if extra_path:
        env["PYTHONPATH"] = extra_path
    return env


class Apiaudit:
    """`python -m apiaudit scan` of this checkout, in a scratch working directory (no config found)."""

    def __init__(self, cache: Path, workdir: Path):
        self.cache, self.workdir = cache, workdir
        self.env = clean_env(str(REPO))
        self.env["APIAUDIT_CACHE_DIR"] = str(cache)

    def scan_argv(self, consumer: str, provider: str, report: Path, extra: tuple[str, ...] = ()) -> list[str]:
        return [sys.executable, "-m", "apiaudit", "scan", "--consumer", consumer, "--provider", provider,
                "--cache-dir", str(self.cache), "--format", "json", "-o", str(report), "--fail-on", "never", *extra]  # fmt: skip

    def scan(self, consumer: str, provider: str, report: Path, extra: tuple[str, ...] = ()) -> Run:
        return run_process(self.scan_argv(consumer, provider, report, extra), env=self.env, cwd=self.workdir)

    def forget(self) -> None:
        """Cold: drop the index, consumer and whole-scan results caches, keep the fetched releases."""
        for name in ("index", "consumer", "patterns", "results"):
            shutil.rmtree(self.cache / name, ignore_errors=True)


def findings_of(report: Path) -> list:
    data = json.loads(report.read_text(encoding="utf-8"))
    return [{k: v for k, v in f.items() if k != "duration_s"} for f in data.get("findings", [])]


def private_cache(base: Path, shared: Path) -> Path:
    """A cache of our own whose releases are the shared, already fetched ones."""
    base.mkdir(parents=True, exist_ok=True)
    link = base / "releases"
    if not link.exists():
        link.symlink_to((shared / "releases").resolve(), target_is_directory=True)
    return base


def find_tool(name: str, venv: Path | None) -> str | None:
    if venv is not None:
        candidate = venv / "bin" / name
        return str(candidate) if candidate.exists() else None
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else shutil.which(name)


def install_baselines(where: Path) -> Path:
    """A private venv with mypy and pyright (from the package index, nothing from this tree)."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    subprocess.run([str(where / "bin" / "python"), "-m", "pip", "install", "--isolated", "-q", "mypy", "pyright"],
                   check=True, cwd=where)  # fmt: skip
    return where


def ratio_line(label: str, value: Best, baseline: Best | None, baseline_name: str, target: float | None) -> str:
    text = f"{label:34s} {value.wall:7.3f} s wall {value.cpu:7.3f} s CPU"
    if baseline is not None and baseline.rounds:
        wall_ratio, cpu_ratio = value.wall / baseline.wall, value.cpu / max(baseline.cpu, 1e-9)
        verdict = ""
        if target is not None:
            verdict = f" (target <= {target}x: {'met' if min(wall_ratio, cpu_ratio) <= target else 'MISSED'})"
        text += f"   {wall_ratio:.2f}x wall, {cpu_ratio:.2f}x CPU of {baseline_name}{verdict}"
    return text


def seed_pair(args, cache: Path, scratch: Path, venv: Path | None) -> tuple[bool, float]:
    provider = sources.resolve(args.provider, cache_dir=cache)
    consumer = sources.resolve(args.consumer, cache_dir=cache)
    print(f"seed pair: consumer {consumer.name} {consumer.version} ({len(consumer.python_files())} files), "
          f"provider {provider.name} {provider.version}; best of {args.repeat} interleaved rounds")  # fmt: skip
    cold_tool = Apiaudit(private_cache(scratch / "cold-cache", cache), scratch)
    warm_tool = Apiaudit(private_cache(scratch / "warm-cache", cache), scratch)
    warm_tool.scan(args.consumer, args.provider, scratch / "warm-fill.json")
    mypy, pyright = find_tool("mypy", venv), find_tool("pyright", venv)
    packages = [p for p in consumer.packages]
    mypy_cache = scratch / "mypy-cache"
    mypy_argv = None
    if mypy:
        mypy_argv = [mypy, "--cache-dir", str(mypy_cache), "--ignore-missing-imports", "--no-error-summary",
                     *sum((["-p", p] for p in packages), [])]  # fmt: skip
        mypy_env = clean_env()
        mypy_env["MYPYPATH"] = f"{consumer.root}{os.pathsep}{provider.root}"
        fill = run_process(mypy_argv, env=mypy_env, cwd=scratch)
        print(f"{'mypy cold (fills its cache)':34s} {fill.wall:7.3f} s wall {fill.cpu:7.3f} s CPU   {fill.rss_mb:.0f} MB")
    pyright_argv = None
    if pyright:
        pyright_argv = [pyright, "--pythonpath", sys.executable, *map(str, consumer.python_files())]
        pyright_env = clean_env(str(provider.root))
    results = {name: Best() for name in ("warm", "mypy", "version", "pass", "cold", "pyright")}
    cold_report, warm_report = scratch / "cold.json", scratch / "warm.json"
    for _ in range(args.repeat):
        results["warm"].add(warm_tool.scan(args.consumer, args.provider, warm_report))
        if mypy_argv:
            results["mypy"].add(run_process(mypy_argv, env=mypy_env, cwd=scratch))
        results["version"].add(run_process([sys.executable, "-m", "apiaudit", "--version"], env=warm_tool.env, cwd=scratch))
        results["pass"].add(run_process([sys.executable, "-c", "pass"], env=warm_tool.env, cwd=scratch))
        cold_tool.forget()
        results["cold"].add(cold_tool.scan(args.consumer, args.provider, cold_report))
        if pyright_argv and results["pyright"].rounds < args.pyright_repeat:
            results["pyright"].add(run_process(pyright_argv, env=pyright_env, cwd=scratch))
    print(ratio_line("apiaudit warm scan", results["warm"], results["mypy"], "mypy warm", 0.5))
    if not mypy_argv:
        print("mypy not found: warm ratio skipped (--install-baselines to compare)")
    else:
        print(ratio_line("mypy warm (baseline)", results["mypy"], None, "", None))
    print(ratio_line("apiaudit --version", results["version"], results["pass"], "python -c pass", 4))
    print(ratio_line("python -c pass (baseline)", results["pass"], None, "", None))
    print(ratio_line("apiaudit cold scan", results["cold"], results["pyright"], "pyright", 0.2) + f"   {results['cold'].rss:.0f} MB")
    if pyright_argv:
        print(ratio_line("pyright (baseline)", results["pyright"], None, "", None) + f"   {results['pyright'].rss:.0f} MB")
    else:
        print("pyright not found: cold ratio skipped (--install-baselines to compare)")
    same = findings_of(cold_report) == findings_of(warm_report)
    print(f"findings cold vs warm: {'identical' if same else 'DIFFERENT'} ({len(findings_of(cold_report))} findings)")
    return same, results["warm"].cpu


def hit_forms(args, cache: Path) -> list[tuple[str, str, str]]:
    """(form, consumer, provider) for each input form a warm hit is measured with."""
    from importlib import metadata

    consumer = sources.resolve(args.consumer, cache_dir=cache)
    provider = sources.resolve(args.provider, cache_dir=cache)
    forms = [
        ("NAME==VERSION", args.consumer, args.provider),
        ("paths", str(Path(consumer.root) / consumer.packages[0]), str(provider.root)),
    ]
    try:
        metadata.distribution("markdown-it-py")
        metadata.distribution("mdurl")
    except metadata.PackageNotFoundError:
        print("markdown-it-py or mdurl is not installed here: the installed form is skipped")
    else:
        forms.append(("installed", "markdown-it-py", "mdurl"))
    return forms


def warm_hits(args, cache: Path, scratch: Path) -> bool:
    """The plain scan command line run again with nothing changed, against `python -c pass`."""
    forms = hit_forms(args, cache)
    print(f"\nwarm hits: `python -m apiaudit scan --consumer X --provider Y` again, nothing changed (stdout a file); "
          f"median of {args.hit_repeat} interleaved rounds")  # fmt: skip
    tool = Apiaudit(private_cache(scratch / "hit-cache", cache), scratch)
    ok = True
    argvs = {}
    for form, consumer, provider in forms:
        # JSON asked for: the default is the table everywhere, a file included (issue 36, item 3)
        argv = [sys.executable, "-m", "apiaudit", "scan", "--consumer", consumer, "--provider", provider, "--format", "json"]
        slow = scratch / f"hit-slow-{len(argvs)}.json"
        # The first run fills the caches, the second (a warm scan) records what it wrote.
        for fill in range(2):
            run_process(argv, env=tool.env, cwd=scratch, stdout=slow if fill else None)
        argvs[form] = (argv, slow)
    results = {form: Median() for form in argvs}
    bare = Median()
    for _ in range(args.hit_repeat):
        for form, (argv, _) in argvs.items():
            results[form].add(run_process(argv, env=tool.env, cwd=scratch, stdout=scratch / "hit.json"))
        bare.add(run_process([sys.executable, "-c", "pass"], env=tool.env, cwd=scratch))
    for form, (argv, slow) in argvs.items():
        replayed = scratch / "hit.json"
        run_process(argv, env=tool.env, cwd=scratch, stdout=replayed)
        same = findings_of(slow) == findings_of(replayed)
        ok &= same
        wall, cpu = results[form].wall / bare.wall, results[form].cpu / max(bare.cpu, 1e-9)
        print(f"{'warm hit, ' + form:34s} {results[form].wall:7.3f} s wall {results[form].cpu:7.3f} s CPU   "
              f"{wall:.2f}x wall, {cpu:.2f}x CPU of python -c pass (target <= 4x: {'met' if min(wall, cpu) <= 4 else 'MISSED'}); "
              f"findings {'identical' if same else 'DIFFERENT'} to the scan's")  # fmt: skip
    print(f"{'python -c pass (baseline)':34s} {bare.wall:7.3f} s wall {bare.cpu:7.3f} s CPU")
    return ok


def build_consumer(source_tree, count: int, where: Path, new_name: str) -> Path:
    """`count` .py files of a provider release under the package name `new_name`.

    Files keep their text, so absolute `import vllm...` statements stay provider uses and
    relative imports stay inside the new package. Every package's __init__.py on the way
    down is kept so the copy is importable-shaped (nothing is ever imported).
    """
    package = source_tree.packages[0]
    base = Path(source_tree.root) / package
    files = sorted(p for p in base.rglob("*.py") if "__pycache__" not in p.parts)
    step = max(1, len(files) // count)
    chosen = files[::step][:count]
    target = where / new_name
    shutil.rmtree(target, ignore_errors=True)
    for path in chosen:
        out = target / path.relative_to(base)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, out)
    return target


def scaling(args, cache: Path, scratch: Path) -> bool:
    old = sources.resolve(args.scaling_from, cache_dir=cache)
    print(f"\nscaling: consumer from {old.name} {old.version} renamed, scanned against {args.provider}; "
          f"best of {args.scaling_repeat}")  # fmt: skip
    ok = True
    for count in args.sizes:
        root = build_consumer(old, count, scratch / f"consumer-{count}", args.scaling_name)
        tool = Apiaudit(private_cache(scratch / f"scaling-cache-{count}", cache), scratch)
        cold, first_warm, warm, edited = Best(), Best(), Best(), Best()
        cold_report, warm_report = scratch / f"scale-cold-{count}.json", scratch / f"scale-warm-{count}.json"
        one_file = sorted(root.rglob("*.py"))[0]
        for _ in range(args.scaling_repeat):
            tool.forget()
            cold.add(tool.scan(str(root), args.provider, cold_report))
            # The first run after a cold one, then the steady state (every cache as a warm run leaves it).
            first_warm.add(tool.scan(str(root), args.provider, warm_report))
            warm.add(tool.scan(str(root), args.provider, warm_report))
            # One file edited: the whole-scan results miss, every other cache still answers.
            original = one_file.read_bytes()
            one_file.write_bytes(original + b"\n# edited\n")
            edited.add(tool.scan(str(root), args.provider, scratch / f"scale-edited-{count}.json"))
            one_file.write_bytes(original)
        data = json.loads(cold_report.read_text(encoding="utf-8"))
        summary = data.get("summary", {})
        calls, files = summary.get("calls_checked", 0), summary.get("files_scanned", 0)
        same = findings_of(cold_report) == findings_of(warm_report)
        ok &= same
        per = 1000 / max(calls, 1)
        print(f"{files:5d} files {calls:6d} calls: cold {cold.wall:6.2f} s wall {cold.cpu:6.2f} s CPU "
              f"({cold.cpu * per:5.2f} s CPU/1k calls), warm {warm.wall:5.2f} s wall {warm.cpu:5.2f} s CPU "
              f"({warm.cpu * per:5.3f} s CPU/1k calls; first warm after cold {first_warm.cpu:5.2f} s CPU; "
              f"one file edited {edited.wall:5.2f} s wall {edited.cpu:5.2f} s CPU), "
              f"peak RSS {max(cold.rss, warm.rss, first_warm.rss):4.0f} MB, "
              f"findings cold vs warm {'identical' if same else 'DIFFERENT'}")  # fmt: skip
        if count == max(args.sizes):
            # The same cold scan in one process (--jobs 1): the shared one must find exactly the same.
            tool.forget()
            alone_report = scratch / f"scale-alone-{count}.json"
            alone = tool.scan(str(root), args.provider, alone_report, ("--jobs", "1"))
            alike = findings_of(alone_report) == findings_of(cold_report)
            ok &= alike
            print(f"  cold in one process (--jobs 1): {alone.wall:6.2f} s wall {alone.cpu:6.2f} s CPU, "
                  f"findings {'identical' if alike else 'DIFFERENT'} to the shared run's ({os.cpu_count()} CPUs)")  # fmt: skip
            print(f"  targets at {count} files: cold <= 15 s ({'met' if min(cold.wall, cold.cpu) <= 15 else 'MISSED'}), "
                  f"warm <= 1.5 s ({'met' if min(warm.wall, warm.cpu) <= 1.5 else 'MISSED'}), "
                  f"RSS <= 300 MB ({'met' if max(cold.rss, warm.rss) <= 300 else 'MISSED'}); "
                  f"warm with one file edited {min(edited.wall, edited.cpu):.2f} s")  # fmt: skip
    return ok


BEFORE_REF = "9a6e9e2"  # the visitor before the walk was split (after the layout change, whose module names it imports)


def _cpu_best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.process_time()  # CPU seconds: a shared, loaded machine inflates wall time unevenly
        fn()
        times.append(time.process_time() - t)
    return min(times)


def visitor_seconds(consumer, provider, repeat: int, before: str | None) -> tuple[float, float | None]:
    """(this visitor, the `before` ref's visitor) over every consumer file, parse excluded."""
    import ast

    from apiaudit.consumer import module_name
    from apiaudit.consumer.records import ConsumerOptions
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

    if not before:
        return _cpu_best(lambda: run(ModuleVisitor), repeat), None
    with tempfile.TemporaryDirectory() as tmp:
        try:
            old = _visitor_at(before, Path(tmp))
        except (OSError, subprocess.CalledProcessError):
            return _cpu_best(lambda: run(ModuleVisitor), repeat), None
        afters, befores = [], []  # interleaved, best of each: a loaded machine slows both alike
        for _ in range(max(repeat, 10)):
            afters.append(_cpu_best(lambda: run(ModuleVisitor), 1))
            befores.append(_cpu_best(lambda: run(old.ModuleVisitor), 1))
        return min(afters), min(befores)


def _visitor_at(ref: str, tmp: Path):
    """The consumer visitor at `ref`, loaded beside this tree's as the package `visitor_before`:
    its visitor.py and, once the walk was split into parts, those parts (consumer/walk/), their
    imports of one another renamed to match. The other consumer modules it imports are this tree's."""
    import importlib

    def show(path: str) -> bytes:
        return subprocess.run(["git", "show", f"{ref}:{path}"], capture_output=True, check=True, cwd=REPO).stdout

    parts = subprocess.run(
        ["git", "ls-tree", "--name-only", ref, "apiaudit/consumer/walk/"], capture_output=True, check=True, cwd=REPO, text=True
    ).stdout.split()
    package = tmp / "visitor_before"
    (package / "walk").mkdir(parents=True)
    (package / "__init__.py").write_bytes(show("apiaudit/consumer/visitor.py").replace(b"apiaudit.consumer.walk", b"visitor_before.walk"))
    for path in parts:
        (package / "walk" / Path(path).name).write_bytes(show(path).replace(b"apiaudit.consumer.walk", b"visitor_before.walk"))
    sys.path.insert(0, str(tmp))
    try:
        earlier = importlib.import_module("visitor_before")  # apiaudit's own earlier code, not audited code
    finally:
        sys.path.remove(str(tmp))
    from apiaudit.consumer.records import ConsumerFile

    def earlier_file(**fields):
        # The earlier visitor kept a file's lines (`lines=`, split as it ran); the record now
        # keeps the text (`source=`): the lines are dropped, their splitting stays in its cost.
        fields.pop("lines", None)
        return ConsumerFile(**fields)

    if "lines" not in {f.name for f in dataclasses.fields(ConsumerFile)}:
        earlier.ConsumerFile = earlier_file
    return earlier


def consumer_stage(args, cache: Path, warm_cpu: float | None) -> None:
    provider = sources.resolve(args.provider, cache_dir=cache)
    consumer = sources.resolve(args.consumer, cache_dir=cache)
    after, before = visitor_seconds(consumer, provider, args.repeat, args.before)
    print()
    if before is not None:
        extra = after - before
        print(f"{'consumer stage before (' + args.before + ')':34s} {before:7.3f} s CPU")
        share = f" = {extra / warm_cpu:.0%} of the warm scan's CPU (target <= 20%)" if warm_cpu else ""
        print(f"{'consumer stage after':34s} {after:7.3f} s CPU   guards + values cost {extra:+.3f} s{share}")
    else:
        print(f"{'consumer stage':34s} {after:7.3f} s CPU")
    total = sum(1 for package in provider.packages for _ in (Path(provider.root) / package).rglob("*.py"))
    loaded = modules_loaded(args.consumer, args.provider, cache)
    print(f"{'provider modules loaded (cold)':34s} {loaded:7d}     of {total} in {provider.name} {provider.version}")


def modules_loaded(consumer: str, provider: str, cache: Path) -> int:
    """How many provider modules one cold scan reads with Griffe (the registry's model modules
    only where a guard or attribute needs them: an ast pre-check of class bases picks those)."""
    from apiaudit.audit import scan
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


def plugin_contract(args, cache: Path, scratch: Path) -> None:
    """The provider-calls-consumer lookup (issue 25) as a share of a cold scan of a plugin-style
    consumer: the provider's call sites of every method the consumer overrides, read from the
    release in one pass. Target: <= 20%. In process, cold scans (fresh index and results caches,
    the releases already fetched), interleaved with and without the lookup: its cost is what a
    scan with it spends beyond one without it (the provider modules it loads are partly ones the
    checks load anyway); the time spent inside it is printed too."""
    from apiaudit.audit import scan
    from apiaudit.policy.config import Settings
    from apiaudit.provider import callsites

    found = callsites.find_calls
    spent = [0.0]

    def timed(index, methods, **options):
        started = time.perf_counter()
        try:
            return found(index, methods, **options)
        finally:
            spent[0] += time.perf_counter() - started

    def skipped(index, methods, **options):
        return {name: () for name in set(methods)}

    sources.resolve(args.plugin, cache_dir=cache)
    sources.resolve(args.plugin_provider, cache_dir=cache)
    runs: dict[str, list[float]] = {"with": [], "without": []}
    inside: list[float] = []
    contract = 0
    try:
        for _ in range(max(1, args.plugin_repeat)):
            for mode in ("with", "without"):
                # the bench's own measurement hook, not the engine's code
                callsites.find_calls = timed if mode == "with" else skipped
                spent[0] = 0.0
                started = time.perf_counter()
                report = scan([args.plugin], args.plugin_provider, cache_dir=cache, settings=Settings(), use_index_cache=False)
                runs[mode].append(time.perf_counter() - started)
                if mode == "with":
                    inside.append(spent[0])
                    contract = sum(f.rule in CONTRACT_RULES for f in report.findings)
    finally:
        callsites.find_calls = found
    total, without = min(runs["with"]), min(runs["without"])
    marginal = max(0.0, total - without)
    print()
    print(f"plugin contract: {args.plugin} x {args.plugin_provider}: cold scan {total:.2f} s (best of {len(runs['with'])}), "
          f"{without:.2f} s without the provider call-site lookup: it costs {marginal:.2f} s = {marginal / total:.0%} "
          f"(target <= 20%); {min(inside):.2f} s = {min(inside) / total:.0%} spent inside it (modules the checks load "
          f"anyway included); {contract} contract finding(s)")


CONTRACT_RULES = {"override-incompatible", "constructor-incompatible", "abstract-unimplemented", "replacement-incompatible", "patch-target-missing"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--consumer", default="speculators==0.3.0")
    ap.add_argument("--provider", default="vllm==0.16.0")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--pyright-repeat", type=int, default=2, help="pyright rounds (it is slow; fewer than --repeat)")
    ap.add_argument("--cache-dir", type=Path, default=None, help="where the releases are already fetched")
    ap.add_argument("--install-baselines", action="store_true", help="install mypy and pyright into a private venv")
    ap.add_argument("--scaling-from", default="vllm==0.12.0", help="the release the scaling consumer is built from")
    ap.add_argument("--scaling-name", default="oldvllm", help="the scaling consumer's top-level package name")
    ap.add_argument("--sizes", type=int, nargs="+", default=[7, 44, 200, 1000])
    ap.add_argument("--scaling-repeat", type=int, default=2)
    ap.add_argument("--skip-scaling", action="store_true")
    ap.add_argument("--skip-seed", action="store_true")
    ap.add_argument("--plugin", default="lmcache==0.5.6", help="a plugin-style consumer for the call-site lookup's share")
    ap.add_argument("--plugin-repeat", type=int, default=3, help="interleaved cold scans with and without the lookup")
    ap.add_argument("--plugin-provider", default="vllm==0.20.0")
    ap.add_argument("--skip-plugin", action="store_true")
    ap.add_argument("--skip-hits", action="store_true", help="skip the warm hits against `python -c pass`")
    ap.add_argument("--hit-repeat", type=int, default=15, help="warm-hit rounds (the median is kept)")
    ap.add_argument("--before", default=BEFORE_REF, help="git ref of the visitor to compare the consumer stage with ('' to skip)")
    args = ap.parse_args()
    cache = args.cache_dir or sources.default_cache_dir()
    scratch = Path(tempfile.mkdtemp(prefix="apiaudit-bench-"))
    ok, warm_cpu = True, None
    try:
        print(f"machine: {os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        venv = install_baselines(scratch / "baselines") if args.install_baselines else None
        if not args.skip_seed:
            same, warm_cpu = seed_pair(args, cache, scratch, venv)
            ok &= same
        if not args.skip_hits:
            ok &= warm_hits(args, cache, scratch)
        if not args.skip_scaling:
            ok &= scaling(args, cache, scratch)
        if args.before != "" and not args.skip_seed:
            consumer_stage(args, cache, warm_cpu)
        if not args.skip_plugin:
            plugin_contract(args, cache, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
