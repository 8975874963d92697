"""`apiaudit fix` end to end with the real engine: overlay, apply/revert, idempotence, read-only targets."""

from __future__ import annotations

import py_compile
import shutil
import stat

import pytest
from click.testing import CliRunner

from apiaudit.audit import scan
from apiaudit.cli import cli
from apiaudit.findings import Severity

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
