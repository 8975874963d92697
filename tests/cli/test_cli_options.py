"""What every command does before and around the work: output paths checked before the scan,
`~` expanded, a full disk reported in one line with nothing left behind, SIGTERM cleaned up."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

import apiaudit.audit as audit_module
import apiaudit.cli.preflight as gate_command
from apiaudit.cli.group import cli
from apiaudit.infra import atomic
from apiaudit.sources import release as release_module

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "sources"))
from wheel_helpers import build_wheel  # noqa: E402


@pytest.fixture
def project(tmp_path):
    prov = tmp_path / "prov" / "tinyprov"
    prov.mkdir(parents=True)
    (prov / "__init__.py").write_text("def make(a, *, b):\n    return a\n")
    job = tmp_path / "job.py"
    job.write_text("from tinyprov import make\nmake(1, c=2)\n")
    return prov, job, tmp_path / "cache"


def invoke(*args, env=None):
    result = CliRunner().invoke(cli, [str(a) for a in args], env=env)
    return result.exit_code, result.stderr, result.stdout


def no_scan(*args, **kwargs):
    raise AssertionError("the scan started before the output path was checked")


def scan_args(project):
    prov, job, cache = project
    return ["scan", "--consumer", job, "--provider", prov, "--cache-dir", cache, "--format", "json"]


# --- -o / --output / --report are checked before any work ------------------------------------


@pytest.mark.parametrize("where", ["a-folder", "under-a-file"])
def test_a_bad_output_path_is_one_line_and_exit_2_before_the_scan(project, tmp_path, monkeypatch, where):
    monkeypatch.setattr(audit_module, "scan", no_scan)
    (tmp_path / "taken").mkdir()
    (tmp_path / "file.txt").write_text("")
    target = tmp_path / "taken" if where == "a-folder" else tmp_path / "file.txt" / "r.json"
    code, err, _ = invoke(*scan_args(project), "-o", target)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("apiaudit: error: --output ")


def test_preflight_report_is_checked_before_the_scan(project, tmp_path, monkeypatch):
    monkeypatch.setattr(gate_command, "preflight", no_scan)
    prov, job, cache = project
    code, err, _ = invoke("preflight", "--consumer", job, "--provider", prov, "--report", tmp_path)
    assert code == 2, err
    # --report is preflight's old name for -o/--output: one option, one message.
    assert err.strip() == f"apiaudit: error: --output {tmp_path} is a folder; give a file name in it"


@pytest.mark.parametrize("command", ["matrix", "explain"])
def test_matrix_and_explain_output_is_checked_before_any_release_is_listed(project, tmp_path, monkeypatch, command):
    monkeypatch.setattr(release_module, "_run_pip", no_scan)
    prov, job, cache = project
    code, err, _ = invoke(command, "--consumer", job, "--provider", "tinyprov", "-o", tmp_path)
    assert code == 2, err
    assert "is a folder" in err and len(err.strip().splitlines()) == 1


@pytest.mark.skipif(not Path("/proc/version").is_file(), reason="no /proc here")
def test_an_existing_file_in_a_folder_that_takes_no_new_file_says_why_before_the_scan(project, monkeypatch):
    monkeypatch.setattr(audit_module, "scan", no_scan)
    code, err, _ = invoke(*scan_args(project), "-o", "/proc/version")
    assert code == 2, err
    assert err.strip().splitlines() == [
        "apiaudit: error: --output /proc/version: cannot create a file in /proc (No such file or directory); "
        "a report is written as a new file beside it, then renamed over it"
    ]


def test_a_pipe_as_output_is_written_into_never_replaced(project, tmp_path):
    # As -o /dev/stdout or -o >(gzip > r.gz) are: a fifo of the test's own, so that a regression
    # replaces nothing but it (renaming a file over /dev/stdout would replace the device link).
    command = [sys.executable, "-m", "apiaudit", *map(str, scan_args(project))]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader is there: the writer's open does not wait
    try:
        done = subprocess.run([*command, "-o", str(fifo)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
        try:
            got = os.read(reader, 1 << 20).decode()
        except BlockingIOError:
            got = ""
    finally:
        os.close(reader)
    assert done.returncode == 1, done.stderr
    assert fifo.is_fifo() and '"unexpected-keyword"' in got


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o077])
def test_a_report_follows_the_umask_like_any_tool(project, tmp_path, mask):
    command = [sys.executable, "-m", "apiaudit", *map(str, scan_args(project)), "-o", str(tmp_path / "r.json")]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, preexec_fn=lambda: os.umask(mask))
    assert done.returncode == 1, done.stderr
    assert (tmp_path / "r.json").stat().st_mode & 0o777 == 0o666 & ~mask


def test_an_output_in_a_missing_folder_is_written_there(project, tmp_path):
    target = tmp_path / "reports" / "nightly" / "r.json"
    code, err, _ = invoke(*scan_args(project), "-o", target)
    assert code == 1, err
    assert '"unexpected-keyword"' in target.read_text()


def test_a_quoted_tilde_in_output_is_the_home_folder(project, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(tmp_path)
    code, err, _ = invoke(*scan_args(project), "-o", "~/r.json")
    assert code == 1, err
    assert (tmp_path / "home" / "r.json").is_file() and not (tmp_path / "~").exists()


# --- ~ in --cache-dir / APIAUDIT_CACHE_DIR -----------------------------------------------------


@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_quoted_tilde_in_the_cache_dir_is_the_home_folder(project, tmp_path, monkeypatch, how):
    prov, job, _ = project
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    args = ["scan", "--consumer", job, "--provider", prov, "--format", "json"]
    env = {"APIAUDIT_CACHE_DIR": "~/apiaudit-cache"} if how == "environment" else None
    if how == "option":
        args += ["--cache-dir", "~/apiaudit-cache"]
    code, err, _ = invoke(*args, env=env)
    assert code == 1, err
    assert (home / "apiaudit-cache" / "index").is_dir()
    assert not (tmp_path / "~").exists(), "a literal ./~ folder was created"


# --- a full disk ---------------------------------------------------------------------------------


def _full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_full_disk_writing_the_report_is_one_line_exit_2_and_no_file(project, tmp_path, monkeypatch):
    target = tmp_path / "out" / "r.json"
    target.parent.mkdir()
    real_write = os.write
    # Only the report's writes fail (the caches written before it still work): the report's
    # temporary file is `.r.json.<random>.apiaudit-tmp` beside it.
    def write(fd, data):
        is_report = os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith(".r.json.")
        return _full() if is_report else real_write(fd, data)

    monkeypatch.setattr(atomic.os, "write", write)
    code, err, _ = invoke(*scan_args(project), "-o", target)
    assert code == 2, err
    assert err.strip().splitlines() == [f"apiaudit: error: no space left on device writing {target}"]
    assert list(target.parent.iterdir()) == [], "no 0-byte report and no temporary file"


def test_a_full_disk_on_the_index_cache_is_one_warning_and_the_scan_still_answers(project, tmp_path, monkeypatch):
    monkeypatch.setattr(atomic.os, "write", _full)
    code, err, out = invoke(*scan_args(project))
    assert code == 1
    assert '"unexpected-keyword"' in out
    assert "no space left on device writing" in err and "not saved" in err
    assert not list((tmp_path / "cache").rglob(f"*{atomic.TEMP_SUFFIX}")) and not list((tmp_path / "cache").rglob("*.tmp"))


@pytest.fixture
def toy_links(tmp_path, monkeypatch):
    links = tmp_path / "links"
    # toyfull: a 2 kB wheel whose 300 kB file deflates well; toybig: a 300 kB wheel, stored.
    big = {"__init__.py": "def f(a): ...\n", "big.py": "x = 1\n" * 50_000}
    build_wheel(links, "toyfull", "1.0", {f"toyfull/{k}": v for k, v in big.items()}, compression=zipfile.ZIP_DEFLATED)
    build_wheel(links, "toybig", "1.0", {f"toybig/{k}": v for k, v in big.items()})
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    return links


def test_a_full_disk_extracting_a_release_is_one_line_and_leaves_no_partial_folder(project, tmp_path, toy_links, monkeypatch):
    _, job, cache = project
    monkeypatch.setattr(atomic.os, "write", _full)  # pip runs in another process and still works
    code, err, _ = invoke("scan", "--consumer", job, "--provider", "toyfull==1.0", "--cache-dir", cache)
    assert code == 2, err
    lines = err.strip().splitlines()
    # Progress notices (plain lines off a terminal) may come first; one error line ends it.
    errors = [line for line in lines if line.startswith("apiaudit: error:")]
    assert errors == lines[-1:] and errors[0].startswith("apiaudit: error: no space left on device writing "), lines
    assert sorted(p.name for p in (cache / "releases").iterdir()) == [], "no partial folder, no entry"


def _can_mount_tmpfs() -> bool:
    if not shutil.which("unshare"):
        return False
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs $d && umount $d"],
        capture_output=True,
    )
    return probe.returncode == 0


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="needs unshare and a mountable tmpfs")
@pytest.mark.parametrize(
    "dist, where", [("toybig", "/download"), ("toyfull", "/tree/toyfull/big.py")], ids=["pip-download", "extraction"]
)
def test_a_really_full_disk_is_one_line_and_leaves_nothing(tmp_path, toy_links, dist, where):
    """A 160 kB tmpfs fills while pip saves toybig's 300 kB wheel, or while toyfull's 300 kB file is extracted."""
    mount = tmp_path / "small-disk"
    mount.mkdir()
    job = tmp_path / "job.py"
    job.write_text(f"from {dist} import f\nf(1, 2)\n")
    script = textwrap.dedent(f"""\
        mount -t tmpfs -o size=160k tmpfs {mount} || exit 99
        "$0" -m apiaudit scan --consumer {job} --provider {dist}==1.0 --cache-dir {mount}/cache --format json
        echo "exit=$?"
        find {mount} -type f | sed 's/^/left: /'
        find {mount} -name '.partial-*' | sed 's/^/partial: /'
    """)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script, sys.executable], capture_output=True, text=True, env=env, timeout=300
    )
    assert "exit=2" in done.stdout, (done.stdout, done.stderr)
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"apiaudit: error: no space left on device writing {mount}/cache/releases/.partial-"), last
    assert last.endswith(where), last
    assert "left: " not in done.stdout and "partial: " not in done.stdout, done.stdout


# --- SIGTERM -------------------------------------------------------------------------------------


class StallingServer:
    """A loopback HTTP listener that accepts pip's request and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.connected = threading.Event()
        self.closed_by_client = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        conn, _ = self.sock.accept()
        self.connected.set()
        conn.settimeout(60)
        try:
            while conn.recv(4096):
                pass
            self.closed_by_client.set()
        except OSError:
            pass


def test_sigterm_mid_fetch_cleans_up_and_exits_143(tmp_path):
    server = StallingServer()
    cache = tmp_path / "cache"
    job = tmp_path / "job.py"
    job.write_text("import toypkg\n")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_"))},
        "PYTHONPATH": str(REPO), "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": f"http://127.0.0.1:{server.port}/links/", "PIP_TIMEOUT": "60",
    }  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "apiaudit", "scan", "--consumer", str(job), "--provider", "toypkg==1.0",
         "--cache-dir", str(cache)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.connected.wait(120), "pip never asked the listener"
        partials = list((cache / "releases").glob(".partial-*"))
        assert partials, "the fetch had started its partial folder"
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 143, err
    assert err.strip().splitlines()[-1] == "apiaudit: terminated"
    assert not list((cache / "releases").glob(".partial-*")), "a .partial-* folder was left"
    assert server.closed_by_client.wait(30), "pip (the child) was left running"


def test_a_dead_runs_partial_folder_is_removed_and_a_live_ones_kept(tmp_path):
    from apiaudit.sources import cache as release_cache

    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid, live_pid = int(finished.stdout), os.getppid()
    host = release_cache._owner_tag().rsplit("-", 1)[0]
    base = release_cache.releases_dir(tmp_path)
    dead = base / f".partial-{host}-{dead_pid}-abc"
    live = base / f".partial-{host}-{live_pid}-abc"
    other_host = base / ".partial-elsewhere-1-abc"
    for folder in (dead, live, other_host):
        (folder / "tree").mkdir(parents=True)
    time.sleep(0.01)
    fresh = release_cache.new_partial_dir(tmp_path)
    assert not dead.exists()
    assert live.exists() and other_host.exists() and fresh.exists()


# --- --quiet: no progress, no notes; the report and the findings still print -------------------


def test_quiet_scan_says_nothing_on_stderr_but_writes_the_report(tmp_path, toy_links):
    job = tmp_path / "uses_toy.py"
    job.write_text("from toyfull import f\nf(1, 2)\n")
    args = ["scan", "--consumer", job, "--provider", "toyfull==1.0", "--format", "json"]
    code, err, out = invoke(*args, "--cache-dir", tmp_path / "loud", "-o", tmp_path / "loud.json")
    assert code == 1 and "fetching toyfull==1.0" in err and "wrote json output" in err, err
    code, err, out = invoke(*args, "--cache-dir", tmp_path / "quiet", "-o", tmp_path / "quiet.json", "--quiet")
    assert code == 1 and err == "" and out == ""
    assert '"too-many-positional"' in (tmp_path / "quiet.json").read_text()
    code, err, out = invoke(*args, "--cache-dir", tmp_path / "quiet", "-q")
    assert code == 1 and err == "" and '"too-many-positional"' in out  # the report itself still prints


def test_quiet_fix_prints_the_diff_and_no_notes(project, tmp_path):
    prov, _, cache = project
    job = tmp_path / "fixable.py"
    job.write_text("from tinyprov import make\nmake(1, b=1, c=2)\n")
    args = ["fix", "--consumer", job, "--provider", prov, "--cache-dir", cache]
    code, err, out = invoke(*args)
    assert code == 0 and "1 fix in 1 file (" in err, err
    code, err, quiet_out = invoke(*args, "-q")
    assert code == 0 and err == "" and quiet_out == out and "-make(1, b=1, c=2)" in out


def test_quiet_preflight_prints_its_one_line(project, tmp_path):
    prov, job, cache = project
    code, err, out = invoke("preflight", "--consumer", job, "--provider", prov, "--cache-dir", cache, "-o", tmp_path / "r.json", "-q")
    assert code == 1 and err == ""
    assert out.strip().splitlines()[-1].startswith("preflight FAILED")


def test_fix_no_progress_has_help_text():
    result = CliRunner().invoke(cli, ["fix", "--help"])
    line = next(line for line in result.output.splitlines() if "--no-progress" in line)
    assert line.strip() != "--no-progress" and "progress bars" in line
