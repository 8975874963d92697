"""The provider index cache: a warm scan visits no module; a stale or corrupt entry is rebuilt."""

from __future__ import annotations

import textwrap

import griffe
import pytest

from apiaudit.audit import scan
from apiaudit.provider import cache as index_cache


@pytest.fixture
def pair(tmp_path):
    prov = tmp_path / "prov" / "tinyprov"
    prov.mkdir(parents=True)
    (prov / "__init__.py").write_text("from tinyprov.core import make\n")
    (prov / "core.py").write_text("def make(a, *, b):\n    return a\n")
    cons = tmp_path / "cons"
    cons.mkdir()
    (cons / "job.py").write_text(textwrap.dedent("""
        from tinyprov import make
        make(1, c=2)
    """))
    return prov, cons, tmp_path / "cache"


def _rules(report):
    return sorted((f.rule, f.param) for f in report.findings)


def test_warm_scan_answers_from_the_cache_without_visiting_modules(pair, monkeypatch):
    prov, cons, cache = pair
    cold = scan([str(cons)], str(prov), cache_dir=cache)
    assert _rules(cold) == [("missing-required", "b"), ("unexpected-keyword", "c")]

    def no_visits(*args, **kwargs):
        raise AssertionError("a warm scan must not visit provider modules")

    monkeypatch.setattr(griffe, "visit", no_visits)
    warm = scan([str(cons)], str(prov), cache_dir=cache)
    assert warm.findings == cold.findings


def test_a_changed_provider_file_invalidates_the_entry(pair):
    prov, cons, cache = pair
    scan([str(cons)], str(prov), cache_dir=cache)
    (prov / "core.py").write_text("def make(a, *, c):\n    return a\n")
    assert _rules(scan([str(cons)], str(prov), cache_dir=cache)) == []


def test_a_corrupt_entry_is_rebuilt_with_one_line(pair, capsys):
    prov, cons, cache = pair
    first = scan([str(cons)], str(prov), cache_dir=cache)
    entries = list((cache / "index").glob("*.pickle"))
    assert len(entries) == 1
    entries[0].write_bytes(b"not a pickle")
    again = scan([str(cons)], str(prov), cache_dir=cache)
    assert again.findings == first.findings
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rebuilding" in err[0]


def test_the_cache_key_includes_the_engine(pair, monkeypatch):
    prov, cons, cache = pair
    scan([str(cons)], str(prov), cache_dir=cache)
    monkeypatch.setattr(index_cache, "_engine_fingerprint", lambda: "another-engine")
    visits = []
    real_visit = griffe.visit
    monkeypatch.setattr(griffe, "visit", lambda *a, **k: visits.append(a[0]) or real_visit(*a, **k))
    scan([str(cons)], str(prov), cache_dir=cache, )
    assert visits, "an entry written by another engine version must not be trusted"
