"""`apiaudit fix` end to end with the real engine: overlay, apply/revert, idempotence, read-only targets."""

from __future__ import annotations

import os
import py_compile
import re
import shlex
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from apiaudit.audit import scan
from apiaudit.cli.group import cli
from apiaudit.findings import Severity

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixes"))
from fix_helpers import (  # noqa: E402
    JOB_SOURCE,
    build_wheel,
    error_lines,
    make_package,
    make_provider,
    snapshot,
)

GENERATOR = "speculators/data_generation/vllm_hidden_states_generator.py"


def invoke(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.network
def test_fix_into_overlay_then_scan_is_clean_in_data_generation(released, release_cache, tmp_path):
    installed = released("speculators==0.3.0")
    before = {p: p.read_bytes() for p in (installed.root / "speculators").rglob("*.py")}
    overlay = tmp_path / "overlay"
    code, diff, err = invoke("fix", "--consumer", "speculators==0.3.0", "--provider", "vllm==0.16.0",
                             "--cache-dir", release_cache, "--into", overlay, "--no-progress")  # fmt: skip
    assert "PYTHONPATH=" in err and str(overlay) in err
    # Only the affected calls and imports: every changed line is one of the fixes.
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert sorted(changed) == sorted([
        "-            kv_cache_specs=kv_cache_spec,",
        "+            block_size=VLLM_BLOCK_SIZE,",
        "+                is_encoder_decoder=False,",
        "-            else self.get_input_embeddings(input_ids)",
        "+            else self.embed_input_ids(input_ids)",
        "+            enable_prefix_caching=False,",
        "+            self.executor.sample_tokens(None)",
        "-        aux_hidden_states = captured_states_list[0]",
        "+        aux_hidden_states = captured_states_list",
    ])  # fmt: skip
    for path in (overlay / "speculators").rglob("*.py"):
        py_compile.compile(str(path), doraise=True, cfile=str(tmp_path / "x.pyc"))
    after = scan([str(overlay / "speculators")], "vllm==0.16.0", cache_dir=release_cache)
    assert [f for f in after.findings if f.severity is Severity.ERROR and f.path.startswith("speculators/data_generation/")] == []
    assert before == {p: p.read_bytes() for p in (installed.root / "speculators").rglob("*.py")}, "--into must not touch the source"


@pytest.fixture
def small_project(tmp_path):
    prov = tmp_path / "prov" / "tinyprov"
    prov.mkdir(parents=True)
    (prov / "__init__.py").write_text("def make(a, *, b):\n    return a\n")
    cons = tmp_path / "cons" / "mypkg"
    cons.mkdir(parents=True)
    (cons / "__init__.py").write_text("")
    (cons / "job.py").write_text(
        "from tinyprov import make\n\nb = 3\nmake(\n    1,\n    c=2,  # old keyword\n)\n"
    )
    return prov, cons, tmp_path / "cache"


def test_apply_twice_then_revert_restores_bytes(small_project):
    prov, cons, cache = small_project
    original = (cons / "job.py").read_bytes()
    args = ("fix", "--consumer", cons, "--provider", prov, "--cache-dir", cache, "--no-progress")
    code, diff, err = invoke(*args)
    assert "-    c=2,  # old keyword" in diff and "+    b=b," in diff
    assert (cons / "job.py").read_bytes() == original, "plain `fix` changes nothing"
    invoke(*args, "--apply")
    patched = (cons / "job.py").read_bytes()
    assert patched != original
    assert [f.rule for f in scan([str(cons)], str(prov), cache_dir=cache).findings if f.severity is Severity.ERROR] == []
    code, diff, err = invoke(*args, "--apply")
    assert diff == "" and (cons / "job.py").read_bytes() == patched
    invoke("fix", "--consumer", cons, "--provider", prov, "--cache-dir", cache, "--revert")
    assert (cons / "job.py").read_bytes() == original


def test_the_undo_command_apply_prints_works_as_printed_from_anywhere(small_project, tmp_path, monkeypatch):
    prov, cons, cache = small_project
    original = (cons / "job.py").read_bytes()
    monkeypatch.chdir(cons.parent)  # the consumer given relative to here, as a user types it
    code, diff, err = invoke("fix", "--consumer", "mypkg", "--provider", prov, "--cache-dir", cache, "--no-progress", "--apply")
    assert (cons / "job.py").read_bytes() != original
    (printed,) = re.findall(r"undo with `([^`]+)`", err)
    words = shlex.split(printed)
    assert words[:3] == ["apiaudit", "fix", "--revert"] and "--consumer" in words
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, _, err = invoke(*words[1:])
    assert code == 0, err
    assert (cons / "job.py").read_bytes() == original
    # A file edited since the apply is left, and the --force command printed for it works as printed too.
    monkeypatch.chdir(cons.parent)
    invoke("fix", "--consumer", "mypkg", "--provider", prov, "--cache-dir", cache, "--no-progress", "--apply")
    (cons / "job.py").write_bytes((cons / "job.py").read_bytes() + b"# edited\n")
    monkeypatch.chdir(elsewhere)
    code, _, err = invoke(*words[1:])
    assert code == 1 and (cons / "job.py").read_bytes() != original
    (forced,) = re.findall(r"`(apiaudit fix --revert --force [^`]+)` restores", err)
    code, _, err = invoke(*shlex.split(forced)[1:])
    assert code == 0, err
    assert (cons / "job.py").read_bytes() == original


def test_read_only_target_suggests_into(small_project):
    prov, cons, cache = small_project
    job = cons / "job.py"
    job.chmod(stat.S_IRUSR | stat.S_IRGRP)
    cons.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        code, _, err = invoke("fix", "--consumer", cons, "--provider", prov, "--cache-dir", cache, "--apply", "--no-progress")
    finally:
        cons.chmod(stat.S_IRWXU)
        job.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert code == 2
    lines = [line for line in err.splitlines() if line.startswith("apiaudit: error")]
    assert len(lines) == 1 and "--into" in lines[0]


# --- a released consumer lives in the shared cache: never edited in place ---------------------------

@pytest.fixture
def released_consumer(tmp_path, monkeypatch):
    """`relcons==1.0`, a wheel served to the real pip from a local folder (no index)."""
    links = tmp_path / "links"
    build_wheel(links, "relcons", "1.0", {"relcons/__init__.py": "", "relcons/job.py": JOB_SOURCE})
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    return make_provider(tmp_path), tmp_path / "cache"


def test_apply_on_a_release_is_refused_and_into_still_works(released_consumer, tmp_path):
    provider, cache = released_consumer
    args = ("fix", "--consumer", "relcons==1.0", "--provider", provider, "--cache-dir", cache, "--no-progress")
    code, _, err = invoke(*args)  # fetches and caches the release
    assert code == 0, err
    cached = snapshot(cache / "releases")
    assert any(key.endswith("relcons/job.py") for key in cached)
    code, _, err = invoke(*args, "--apply")
    assert code == 2 and len(error_lines(err)) == 1 and "--into DIR" in error_lines(err)[0], err
    assert snapshot(cache / "releases") == cached, "the shared release cache is never patched"
    code, _, err = invoke(*args, "--into", tmp_path / "overlay")
    assert code == 0, err
    assert (tmp_path / "overlay" / "relcons" / "job.py").read_text() != JOB_SOURCE
    assert "b=b" in (tmp_path / "overlay" / "relcons" / "job.py").read_text()
    assert snapshot(cache / "releases") == cached


def test_an_overlay_of_a_release_keeps_the_releases_version_whatever_its_code_says(tmp_path, monkeypatch):
    """As speculators 0.3.0, whose version.py still says 0.2.0: the overlay of relcons==1.0 is
    relcons 1.0 when it is scanned or preflighted, not the stale literal's 0.9."""
    from apiaudit.sources import resolve

    links = tmp_path / "links"
    build_wheel(links, "relcons", "1.0", {"relcons/__init__.py": '__version__ = "0.9"  # never bumped\n', "relcons/job.py": JOB_SOURCE})
    for key, value in {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(links)}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    provider, cache, overlay = make_provider(tmp_path), tmp_path / "cache", tmp_path / "overlay"
    code, _, err = invoke("fix", "--consumer", "relcons==1.0", "--provider", provider, "--cache-dir", cache, "--into", overlay, "-q")
    assert code == 0, err
    assert resolve(str(overlay / "relcons")).version == "1.0"
    assert resolve(str(overlay)).version == "1.0"
    code, out, err = invoke("preflight", "--consumer", overlay / "relcons", "--provider", provider, "--cache-dir", cache, "--no-progress")
    assert code == 0, err
    assert "(relcons 1.0 -> tinyprov" in out, out
    # A later overlay of another package into the same folder keeps the first one's release.
    other = make_package(tmp_path / "src", "other")
    code, _, err = invoke("fix", "--consumer", other, "--provider", provider, "--cache-dir", cache, "--into", overlay, "-q")
    assert code == 0, err
    assert resolve(str(overlay / "relcons")).version == "1.0"


# --- --into says what it did not copy ----------------------------------------------------------------

def test_into_names_each_symlink_it_did_not_copy(tmp_path):
    provider, cache = make_provider(tmp_path), tmp_path / "cache"
    package = make_package(tmp_path / "cons", "mypkg")
    (tmp_path / "outside").mkdir()
    (package / "data").symlink_to(tmp_path / "outside", target_is_directory=True)
    code, _, err = invoke("fix", "--consumer", package, "--provider", provider, "--cache-dir", cache,
                          "--into", tmp_path / "overlay", "--no-progress")  # fmt: skip
    assert code == 0, err
    skipped = [line for line in err.splitlines() if "not copied" in line]
    assert len(skipped) == 1 and "mypkg/data" in skipped[0] and "symlink" in skipped[0], err
    assert not (tmp_path / "overlay" / "mypkg" / "data").exists()


# --- exit codes: what --help and docs/fix.md say is what the command returns -------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs" / "fix.md"


def _documented_codes(text: str, line_pattern: str) -> dict[int, str]:
    return {int(m.group(1)): m.group(2) for m in re.finditer(line_pattern, text, re.MULTILINE)}


def test_help_and_docs_document_the_same_exit_codes_and_force():
    _, help_text, _ = invoke("fix", "--help")
    in_help = _documented_codes(help_text, r"^\s+([0-3])\s{2,}(\S.*)$")
    docs = DOCS.read_text()
    section = docs[docs.index("## Exit codes"):]
    in_docs = _documented_codes(section, r"^\| `?([0-9])`? \| (.+) \|$")
    assert sorted(in_help) == sorted(in_docs) == [0, 1, 2, 3]
    assert "--force" in help_text and "--revert --force" in docs
    assert "## Safety" in docs


def test_each_documented_exit_code_is_what_the_command_returns(tmp_path, monkeypatch):
    provider, cache = make_provider(tmp_path), tmp_path / "cache"
    base = ("fix", "--provider", provider, "--cache-dir", cache, "--no-progress")
    clean = make_package(tmp_path / "a", "fixable")
    assert invoke(*base, "--consumer", clean)[0] == 0  # 0: every finding has a fix
    assert invoke(*base, "--consumer", clean, "--apply")[0] == 0
    assert invoke(*base, "--consumer", clean, "--revert")[0] == 0  # 0: every file restored
    stuck = make_package(tmp_path / "b", "unfixable", {"job.py": "from tinyprov import make\n\nmake(1)\n"})
    assert invoke(*base, "--consumer", stuck)[0] == 1  # 1: a finding without a fix (b: nothing in scope)
    assert invoke(*base, "--consumer", clean, "--apply")[0] == 0
    (clean / "job.py").write_text("edited after the apply\n")
    assert invoke(*base, "--consumer", clean, "--revert")[0] == 1  # 1: a file left, --force restores it
    assert invoke(*base, "--consumer", clean, "--revert", "--force")[0] == 0
    assert invoke(*base, "--consumer", clean, "--apply", "--revert")[0] == 2  # 2: bad input
    assert invoke(*base, "--consumer", clean, "--force")[0] == 2  # --force goes with --revert
    assert invoke(*base, "--consumer", tmp_path / "missing")[0] == 2

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("apiaudit.cli.fix.plan_fixes", broken)
    code, _, err = invoke(*base, "--consumer", clean)
    assert code == 3 and "internal error" in err  # 3: a bug
