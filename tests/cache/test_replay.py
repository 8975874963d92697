"""A warm scan replayed before click is imported (`apiaudit.cache.replay`): the same bytes and
exit code as the scan it stands for, for each input form and format; every input that the scan
read, changed, makes it scan again; anything it does not know falls back to the scan."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from apiaudit.cache import replay

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
FORMATS = ("table", "json", "sarif", "github", "markdown", "junit", "gitlab")
# Runs main() as `python -m apiaudit` does (the working directory off sys.path), then lists
# every module the process imported.
WRAPPER = textwrap.dedent("""\
    import os, sys
    sys.path[:] = [p for p in sys.path if p]
    from apiaudit.cli.main import main
    sys.argv[0] = "apiaudit"
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    sys.stdout.flush()
    with open(os.environ["REPLAY_TEST_MODULES"], "w") as out:
        out.write("\\n".join(sorted(sys.modules)))
    raise SystemExit(code)
""")
# The one thing a replay says differently: how long this run took.
_DURATIONS = [
    (re.compile(rb'"duration_s": [0-9.e-]+'), b'"duration_s": D'),
    (re.compile(rb"\d+\.\d\d s(\x1b\[0m)?$", re.M), b"D s"),
    (re.compile(rb'time="[0-9.]+"'), b'time="D"'),
    (re.compile(rb"\| \d+\.\d\d s \|"), b"| D s |"),
]


def without_duration(data: bytes) -> bytes:
    for pattern, replacement in _DURATIONS:
        data = pattern.sub(replacement, data)
    return data


@dataclass
class Run:
    code: int
    out: bytes
    err: bytes
    modules: set[str]

    @property
    def replayed(self) -> bool:
        return "click" not in self.modules


class Scanner:
    """`apiaudit scan` in a process of its own, in `cwd`, with a cache of its own."""

    def __init__(self, tmp_path: Path, cache: Path, cwd: Path | None = None, **env: str):
        self.cwd = cwd or tmp_path
        self.modules = tmp_path / "modules.txt"
        self.env = {**os.environ, "APIAUDIT_CACHE_DIR": str(cache), "REPLAY_TEST_MODULES": str(self.modules), **env}

    def run(self, *args: str) -> Run:
        done = subprocess.run(
            [sys.executable, "-c", WRAPPER, "scan", *args], capture_output=True, cwd=self.cwd, env=self.env, timeout=900
        )
        modules = set(self.modules.read_text().split())
        self.modules.unlink()
        run = Run(done.returncode, done.stdout, done.stderr, modules)
        assert b"Traceback" not in run.err, run.err.decode()
        if run.replayed:
            # Answered from one file: none of the command line, engine or source machinery loaded.
            assert not {m.split(".")[0] for m in modules} & {"click", "griffe", "_griffe", "libcst", "rich"}
            assert not modules & {"apiaudit.audit", "apiaudit.sources", "apiaudit.findings", "json", "pathlib"}
        return run


def assert_same(slow: Run, fast: Run) -> None:
    assert not slow.replayed and fast.replayed
    assert (fast.code, without_duration(fast.out), fast.err) == (slow.code, without_duration(slow.out), slow.err)


@pytest.fixture
def project(tmp_path: Path):
    """A provider package, a consumer package using it (one finding), run from `tmp_path` by relative paths."""
    (tmp_path / "prov" / "tinyprov").mkdir(parents=True)
    (tmp_path / "prov" / "tinyprov" / "__init__.py").write_text("def make(a, *, b):\n    return a\n")
    (tmp_path / "cons" / "app").mkdir(parents=True)
    (tmp_path / "cons" / "app" / "__init__.py").write_text("")
    (tmp_path / "cons" / "app" / "use.py").write_text("from tinyprov import make\nmake(1, b=2)\nmake(1, c=2)\n")
    return Scanner(tmp_path, tmp_path / "cache")


TINY = ("--consumer", "cons/app", "--provider", "prov/tinyprov", "--format", "json")


def findings(run: Run) -> list[tuple[str, str]]:
    return [(f["rule"], f["path"]) for f in json.loads(run.out)["findings"]]


# --- the same output, for each input form and format ---------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_paths_replay_the_scans_bytes_in_every_format(tmp_path, fmt):
    scanner = Scanner(tmp_path, tmp_path / "cache")
    args = ("--consumer", str(FIXTURES / "consumers" / "driver" / "driver"), "--provider", str(FIXTURES / "providers" / "engine_v2" / "engine"),
            "--rules", str(FIXTURES / "providers"), "--format", fmt)  # fmt: skip
    slow = scanner.run(*args)
    assert slow.code == 1 and slow.out
    assert_same(slow, scanner.run(*args))


def test_an_output_file_is_written_alike_with_the_same_line_and_mode(project, tmp_path):
    report = tmp_path / "out" / "report.sarif"
    report.parent.mkdir()
    slow = project.run(*TINY[:4], "-o", "out/report.sarif")
    written, mode = report.read_bytes(), report.stat().st_mode
    report.unlink()
    fast = project.run(*TINY[:4], "-o", "out/report.sarif")
    assert_same(slow, fast)
    assert fast.err == b"apiaudit: wrote sarif output to out/report.sarif\n"
    assert (report.read_bytes(), report.stat().st_mode) == (written, mode)


@pytest.fixture
def release_pair(release_cache, tmp_path):
    """speculators 0.3.0 and vLLM 0.16.0 in a cache of the test's own: their entries hard-linked
    from the shared one (a marker rewritten here is this cache's alone)."""
    from apiaudit.sources import resolve

    cache = tmp_path / "cache"
    for spec in ("speculators==0.3.0", "vllm==0.16.0"):
        tree = resolve(spec, cache_dir=release_cache)
        shutil.copytree(tree.root, cache / "releases" / tree.root.name, copy_function=os.link)
    return Scanner(tmp_path, cache), cache / "releases"


@pytest.mark.network
@pytest.mark.parametrize("fmt", ["json", "table", "junit"])
def test_releases_replay_the_scans_bytes(release_pair, fmt):
    scanner, _ = release_pair
    args = ("--consumer", "speculators==0.3.0", "--provider", "vllm==0.16.0", "--format", fmt)
    slow = scanner.run(*args)
    assert slow.code == 1
    assert_same(slow, scanner.run(*args))


@pytest.mark.network
def test_a_release_fetched_again_scans_again(release_pair):
    scanner, releases = release_pair
    args = ("--consumer", "speculators==0.3.0", "--provider", "vllm==0.16.0", "--format", "json")
    scanner.run(*args)
    assert scanner.run(*args).replayed
    marker = releases / "vllm-0.16.0" / "complete.json"
    fresh = marker.with_name("fresh.json")
    fresh.write_bytes(marker.read_bytes())
    os.replace(fresh, marker)  # what publishing a fetched entry does: a new file in its place
    assert not scanner.run(*args).replayed
    assert scanner.run(*args).replayed


@pytest.mark.network
def test_release_paths_replay_the_scans_bytes(release_pair):
    scanner, releases = release_pair
    args = ("--consumer", str(releases / "speculators-0.3.0" / "speculators"), "--provider", str(releases / "vllm-0.16.0"),
            "--format", "json")  # fmt: skip
    slow = scanner.run(*args)
    assert slow.code == 1 and json.loads(slow.out)["provider"]["version"] == "0.16.0"
    assert_same(slow, scanner.run(*args))


def test_a_release_of_the_provider_fetched_beside_it_scans_again(tmp_path):
    """The provider's other releases in the cache are an input (`checks.hooks` reads them):
    one published since makes the scan run again, and judge the plugin's hook with it."""
    from tests.checks.test_hooks import CONSUMER, publish_poolkit

    cache = tmp_path / "cache"
    publish_poolkit(cache, "2.0")
    scanner = Scanner(tmp_path, cache)
    args = ("--consumer", str(CONSUMER), "--provider", "poolkit==2.0", "--format", "json")
    assert "hook-not-called" not in {rule for rule, _ in findings(scanner.run(*args))}
    assert scanner.run(*args).replayed
    publish_poolkit(cache, "1.0")
    again = scanner.run(*args)
    assert not again.replayed and ("hook-not-called", "poolplug/policy.py") in findings(again)


@pytest.mark.parametrize("fmt", ["json", "table"])
def test_installed_distributions_replay_the_scans_bytes(tmp_path, fmt):
    # Installed with apiaudit itself (rich needs them): markdown-it-py calls mdurl.
    scanner = Scanner(tmp_path, tmp_path / "cache")
    args = ("--consumer", "markdown-it-py", "--provider", "mdurl", "--format", fmt)
    slow = scanner.run(*args)
    assert slow.code == 0
    assert_same(slow, scanner.run(*args))


def test_a_terminal_gets_its_colours_and_width_back(tmp_path):
    """Both streams on a real terminal (tmux), the same pane: the replayed table is the one the scan drew."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (.ci/run installs it)")
    args = ("--consumer", str(FIXTURES / "consumers" / "driver" / "driver"), "--provider", str(FIXTURES / "providers" / "engine_v2" / "engine"),
            "--rules", str(FIXTURES / "providers"))  # fmt: skip
    command = " ".join(shlex.quote(p) for p in (sys.executable, "-c", WRAPPER, "scan", *args))
    modules, go = tmp_path / "modules.txt", tmp_path / "go"
    script = tmp_path / "run.sh"
    script.write_text(
        f"cd {shlex.quote(str(tmp_path))}\nunset COLUMNS LINES\n"
        f"export APIAUDIT_CACHE_DIR={tmp_path / 'cache'} REPLAY_TEST_MODULES={modules}\n"
        + "".join(f"{command}; touch done{n}\nwhile [ ! -e {go}{n} ]; do sleep 0.1; done\nclear\n" for n in range(3))
        + "sleep 60\n"
    )  # fmt: skip
    session = f"apiaudit-{uuid.uuid4().hex[:8]}"
    subprocess.run(["tmux", "-f", "/dev/null", "new-session", "-d", "-s", session, "-x", "100", "-y", "80", f"bash {script}"], check=True)
    screens, replayed = [], []
    try:
        for attempt in range(3):
            done, deadline = tmp_path / f"done{attempt}", time.monotonic() + 120
            while not done.exists() and time.monotonic() < deadline:
                time.sleep(0.2)
            assert done.exists(), "scan did not finish in the terminal"
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-e", "-t", session], capture_output=True, text=True, check=True).stdout
            screens.append(without_duration(screen.strip().encode()))
            replayed.append("click" not in modules.read_text().split())
            Path(f"{go}{attempt}").touch()
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False)
    # The first run draws progress bars while it fills the caches: what it drew is not repeated.
    assert replayed == [False, False, True]
    assert b"\x1b[" in screens[0] and b"unexpected-keyword" in screens[0]
    assert screens[2] == screens[1] == screens[0]


# --- what makes it scan again ----------------------------------------------------------------


def _edit_consumer(tmp_path):
    (tmp_path / "cons" / "app" / "use.py").write_text("from tinyprov import make\nmake(1, c=2)\nmake(1, d=2)\n")


def _add_consumer_file(tmp_path):
    (tmp_path / "cons" / "app" / "more.py").write_text("from tinyprov import make\nmake(1, e=2)\n")


def _add_consumer_folder(tmp_path):
    (tmp_path / "cons" / "app" / "sub").mkdir()
    (tmp_path / "cons" / "app" / "sub" / "__init__.py").write_text("from tinyprov import make\nmake(1, e=2)\n")


def _remove_consumer_file(tmp_path):
    (tmp_path / "cons" / "app" / "use.py").unlink()
    (tmp_path / "cons" / "app" / "other.py").write_text("from tinyprov import make\nmake(1, b=2)\n")


def _edit_provider(tmp_path):
    (tmp_path / "prov" / "tinyprov" / "__init__.py").write_text("def make(a, *, b, c=None):\n    return a\n")


def _add_config(tmp_path):
    (tmp_path / "apiaudit.toml").write_text('ignore = ["unexpected-keyword"]\n')


@pytest.mark.parametrize(
    "change",
    [_edit_consumer, _add_consumer_file, _add_consumer_folder, _remove_consumer_file, _edit_provider, _add_config],
)
def test_a_changed_input_scans_again_and_says_what_changed(project, tmp_path, change):
    first = project.run(*TINY)
    assert project.run(*TINY).replayed
    change(tmp_path)
    again = project.run(*TINY)
    assert not again.replayed
    assert findings(again) != findings(first)
    assert_same(again, project.run(*TINY))  # recorded afresh


def test_a_config_ignore_with_a_last_day_holds_the_entry_until_then(project, tmp_path):
    today = time.strftime("%Y-%m-%d")
    (tmp_path / "apiaudit.toml").write_text(
        f'[[ignores]]\nrule = "unexpected-keyword"\nreason = "r"\nuntil = {today}\n'
        '[[ignores]]\nrule = "missing-required"\nreason = "r"\nuntil = 2000-01-01\n'
    )
    first = project.run(*TINY)
    assert [rule for rule, _ in findings(first)] == ["missing-required"]  # the one ignore expired, the other holds today
    assert_same(first, project.run(*TINY))
    (entry,) = (tmp_path / "cache" / "results" / "replay").iterdir()
    raw = entry.read_bytes()
    assert replay.decode(raw, replay._unpack(raw.partition(b"\n")[2])[0]).until == today


def test_a_changed_option_is_another_command_line(project):
    project.run(*TINY)
    assert project.run(*TINY).replayed
    other = project.run(*TINY, "--fail-on", "never")
    assert (other.replayed, other.code) == (False, 0)
    for args in (TINY, (*TINY, "--fail-on", "never")):
        assert project.run(*args).replayed


def test_a_changed_environment_or_folder_is_another_invocation(project, tmp_path):
    project.run(*TINY)
    assert project.run(*TINY).replayed
    project.env["COLUMNS"] = "61"
    assert not project.run(*TINY).replayed
    assert project.run(*TINY).replayed
    assert len(list((tmp_path / "cache" / "results" / "replay").iterdir())) == 1  # the other environment's replaced
    project.env.pop("COLUMNS")
    (tmp_path / "sub").mkdir()
    project.cwd = tmp_path / "sub"
    assert not project.run("--consumer", "../cons/app", "--provider", "../prov/tinyprov", "--format", "json").replayed


def test_a_changed_rule_file_scans_again(project, tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    shutil.copy(FIXTURES / "providers" / "engine.toml", rules)
    args = (*TINY, "--rules", "rules")
    project.run(*args)
    assert project.run(*args).replayed
    with open(rules / "engine.toml", "a") as handle:
        handle.write("# edited\n")
    assert not project.run(*args).replayed
    assert project.run(*args).replayed
    shutil.copy(FIXTURES / "providers" / "shim.toml", rules)  # a rule file added
    assert not project.run(*args).replayed


def test_a_changed_baseline_scans_again(project, tmp_path):
    project.run(*TINY, "--write-baseline", "base.json")
    args = (*TINY, "--baseline", "base.json")
    first = project.run(*args)
    assert first.code == 0 and not findings(first)
    assert project.run(*args).replayed
    document = json.loads((tmp_path / "base.json").read_text())
    document["entries"] = []
    (tmp_path / "base.json").write_text(json.dumps(document))
    again = project.run(*args)
    assert (again.replayed, again.code) == (False, 1) and findings(again)


def test_a_changed_engine_scans_again(project, tmp_path):
    engine = tmp_path / "engine"
    shutil.copytree(REPO / "apiaudit", engine / "apiaudit", ignore=shutil.ignore_patterns("__pycache__"))
    project.env["PYTHONPATH"] = str(engine)
    project.run(*TINY)
    assert project.run(*TINY).replayed
    with open(engine / "apiaudit" / "report" / "json_format.py", "a") as handle:
        handle.write("# edited\n")
    assert not project.run(*TINY).replayed
    assert project.run(*TINY).replayed


def test_a_changed_installed_distribution_scans_again(tmp_path):
    site = tmp_path / "site"
    (site / "tinyprov").mkdir(parents=True)
    (site / "tinyprov" / "__init__.py").write_text("def make(a, *, b):\n    return a\n")
    info = site / "tinyprov-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tinyprov\nVersion: 1.0\n")
    (info / "top_level.txt").write_text("tinyprov\n")
    (info / "RECORD").write_text("tinyprov/__init__.py,,\ntinyprov-1.0.dist-info/METADATA,,\ntinyprov-1.0.dist-info/RECORD,,\n")
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "job.py").write_text("from tinyprov import make\nmake(1, c=2)\n")
    scanner = Scanner(tmp_path, tmp_path / "cache", PYTHONPATH=str(site))
    args = ("--consumer", "jobs", "--provider", "tinyprov", "--format", "json")
    first = scanner.run(*args)
    assert json.loads(first.out)["provider"]["version"] == "1.0"
    assert scanner.run(*args).replayed
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tinyprov\nVersion: 1.1\n")
    again = scanner.run(*args)
    assert not again.replayed and json.loads(again.out)["provider"]["version"] == "1.1"
    assert scanner.run(*args).replayed
    (site / "tinyprov" / "__init__.py").write_text("def make(a, *, b, c=None):\n    return a\n")
    again = scanner.run(*args)
    assert not again.replayed and findings(again) == [f for f in findings(first) if f[0] != "unexpected-keyword"]


# --- what it leaves to the scan -----------------------------------------------------------------


def test_an_option_it_does_not_know_falls_back_to_the_scan(project):
    project.run(*TINY)
    for extra in (("--no-index-cache",), ("--help",), ("--bogus",)):
        slow = project.run(*TINY, *extra)
        assert not slow.replayed and not project.run(*TINY, *extra).replayed
    assert project.run(*TINY, "--bogus").code == 2
    assert project.run(*TINY).replayed


def test_bad_input_is_never_recorded(project):
    args = ("--consumer", "cons/app", "--provider", "prov/nothing", "--format", "json")
    for _ in range(2):
        run = project.run(*args)
        assert (run.replayed, run.code) == (False, 2)


def test_a_cache_folder_a_config_file_chose_records_nothing(project, tmp_path):
    (tmp_path / "apiaudit.toml").write_text('cache-dir = "elsewhere"\n')
    del project.env["APIAUDIT_CACHE_DIR"]
    project.env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    for _ in range(2):
        assert not project.run(*TINY).replayed
    assert (tmp_path / "elsewhere" / "results").is_dir() and not (tmp_path / "xdg").exists()


def test_a_damaged_entry_is_not_trusted(project, tmp_path):
    project.run(*TINY)
    (entry,) = (tmp_path / "cache" / "results" / "replay").iterdir()
    data = entry.read_bytes()
    entry.write_bytes(data.replace(b"unexpected-keyword", b"unexpected-keywore"))
    run = project.run(*TINY)
    assert not run.replayed and b"unexpected-keyword" in run.out
    assert project.run(*TINY).replayed


# --- the pieces, in process ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, values",
    [
        (["scan"], {}),
        (["scan", "--consumer", "a", "--consumer=b", "-o", "r.json", "--strict"], {"--consumer": "b", "--output": "r.json"}),
        (["scan", "--output", "x", "-o", "y"], {"--output": "y"}),
        (["scan", "--format"], None),  # no value: click says so
        (["scan", "--strict=1"], None),
        (["scan", "-or.json"], None),
        (["scan", "--consumer", "-x"], None),
        (["scan", "--model", "m"], None),
        (["scan", "--against", "vllm==0.15.0"], None),
        (["scan", "--", "x"], None),
        (["fix", "--consumer", "a"], None),
    ],
)
def test_only_a_plain_scan_command_line_is_parsed(argv, values):
    assert replay.parse(argv) == values


@pytest.mark.parametrize(
    "env",
    [{}, {"APIAUDIT_CACHE_DIR": "~/c"}, {"XDG_CACHE_HOME": "/x"}, {"XDG_CACHE_HOME": "/x", "APIAUDIT_CACHE_DIR": "rel"}],
)
def test_the_cache_folder_is_the_scans(monkeypatch, env):
    from apiaudit.sources.cache import default_cache_dir

    for name in ("APIAUDIT_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert replay.cache_dir_named({}) == os.path.abspath(default_cache_dir())
    assert replay.cache_dir_named({"--cache-dir": "~/d"}) == os.path.expanduser("~/d")


def test_the_invocation_names_the_folder_and_the_environment(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    first = replay.Invocation.of(["scan"])
    assert (replay.Invocation.of(["scan"]).name, replay.Invocation.of(["scan"]).key) == (first.name, first.key)
    monkeypatch.setenv("SOMETHING_ELSE", "1")
    other = replay.Invocation.of(["scan"])
    assert other.name == first.name and other.key != first.key  # the same file, holding another run's
    monkeypatch.chdir(tmp_path.parent)
    assert replay.Invocation.of(["scan"]).name != first.name


def test_an_entry_past_its_day_is_not_replayed(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("APIAUDIT_CACHE_DIR", str(tmp_path))
    invocation = replay.Invocation.of(["scan"])
    os.makedirs(os.path.dirname(invocation.entry))
    for until, answered in (("", 1), ("2999-12-31", 1), (time.strftime("%Y-%m-%d"), 1), ("2000-01-01", None)):
        entry = replay.Entry(1, "", "", ["report\n"], [], until, [("c", str(tmp_path / "gone"), "!2")])
        Path(invocation.entry).write_bytes(replay.encode(invocation.key, entry))
        assert invocation.answer() == answered
        assert capsys.readouterr().out == ("report\n" if answered else "")


def test_the_duration_is_found_however_each_format_writes_it():
    def render(seconds: float) -> str:
        return f'{{"duration_s": {seconds!r}}}\n{seconds:.2f} s, time="{seconds:.3f}" v0.7.3 4.600\n'

    pieces, holes = replay.template(render(7.3), render(4.6))
    assert holes == ["r", "2f", "3f"]
    assert replay.fill(pieces, holes, 0.042) == render(0.042)
    assert replay.template(render(7.3), render(4.6).replace("v0.7.3", "v0.7.4")) is None


def test_the_duration_is_found_in_a_long_report_wherever_it_falls():
    # The texts are compared a block at a time: a duration across a block's edge, in the last
    # block, and a difference in the very last character are each found.
    block = replay._BLOCK
    for at in (block - 2, 3 * block + 5, 0):

        def render(seconds: float, at: int = at) -> str:
            return "x" * at + f"{seconds:.3f}" + "é" * (4 * block - at)

        pieces, holes = replay.template(render(7.3), render(4.6))
        assert holes == ["3f"] and replay.fill(pieces, holes, 12.5) == render(12.5)
    long = "y" * (2 * block)
    assert replay.template(long + "a", long + "b") is None
    assert replay.template(long, long) == ([long], [])


def test_the_template_of_utf8_bytes_is_the_template_of_the_text():
    # What a scan records: its sentinels' texts as bytes (emoji and a lone surrogate included).
    def render(seconds: float) -> str:
        return f"🎵 {seconds:.3f} \ud800 é {seconds!r}\n"

    def encoded(text: str) -> bytes:
        return text.encode("utf-8", "surrogatepass")

    pieces, holes = replay.template(encoded(render(7.3)), encoded(render(4.6)))
    assert holes == ["3f", "r"]
    assert [p.decode("utf-8", "surrogatepass") for p in pieces] == replay.template(render(7.3), render(4.6))[0]
    assert replay.fill(pieces, holes, 0.5) == encoded(render(0.5))
    assert replay.output_digest(render(0.5)) == replay.output_digest(render(0.5).rstrip("\n"))


def test_an_entry_reads_back_and_a_changed_byte_or_key_is_refused():
    entry = replay.Entry(1, "", "apiaudit: wrote x\n", ["a", "b\n"], ["2f"], "2026-01-02", [("c", "/p", "f" * 64), ("l", "/ü\udcff", "!2")])
    raw = replay.encode("k" * 64, entry)
    back = replay.decode(raw, "k" * 64)
    assert back is not None
    assert (back.code, back.stderr, back.pieces, back.holes, back.until, back.probes) == (1, entry.stderr, entry.pieces, entry.holes, entry.until, entry.probes)
    assert replay.decode(raw, "j" * 64) is None
    assert replay.decode(raw[:-1] + b"x", "k" * 64) is None
    assert replay.decode(b"", "k" * 64) is None


def test_probes_see_content_listing_and_absence(tmp_path):
    (tmp_path / "a.py").write_text("x")
    seen = {kind: replay.probe(kind, str(tmp_path / "a.py")) for kind in "cs"}
    listing = replay.probe("l", str(tmp_path))
    (tmp_path / "__pycache__").mkdir()
    assert replay.probe("l", str(tmp_path)) == listing  # never source
    (tmp_path / "a.py").write_text("y")
    assert replay.probe("c", str(tmp_path / "a.py")) != seen["c"]
    assert replay.probe("c", str(tmp_path / "gone")) == "!2"
    (tmp_path / "b").mkdir()
    assert replay.probe("l", str(tmp_path)) != listing
