"""Whole-scan results cached (apiaudit/scan_cache.py): unchanged inputs answer without the index;
any changed input, consumer or provider, scans afresh; policy is applied on every run."""

from __future__ import annotations

from apiaudit import engine
from apiaudit.audit import scan
from apiaudit.policy.config import Settings
from tests.provider.test_cache import _rules, pair  # noqa: F401 - pair: the fixture, a provider and a consumer


def _no_index(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("unchanged inputs must be answered without opening the index")

    monkeypatch.setattr(engine, "prepare", refuse)  # what `scan` readies a release with, on a miss


def test_unchanged_inputs_answer_from_the_results(pair, monkeypatch):
    prov, cons, cache = pair
    cold = scan([str(cons)], str(prov), cache_dir=cache)
    assert _rules(cold) == [("missing-required", "b"), ("unexpected-keyword", "c")]
    assert list((cache / "results").glob("*.json"))
    _no_index(monkeypatch)
    warm = scan([str(cons)], str(prov), cache_dir=cache)
    assert warm.findings == cold.findings
    assert (warm.files_scanned, warm.calls_checked, warm.extras) == (cold.files_scanned, cold.calls_checked, cold.extras)


def test_a_changed_consumer_file_scans_afresh(pair):
    prov, cons, cache = pair
    scan([str(cons)], str(prov), cache_dir=cache)
    (cons / "job.py").write_text("from tinyprov import make\nmake(1, b=2)\n")
    assert _rules(scan([str(cons)], str(prov), cache_dir=cache)) == []


def test_a_changed_provider_file_scans_afresh(pair):
    prov, cons, cache = pair
    scan([str(cons)], str(prov), cache_dir=cache)
    (prov / "core.py").write_text("def make(a, *, c):\n    return a\n")
    assert _rules(scan([str(cons)], str(prov), cache_dir=cache)) == []


def test_policy_is_applied_afresh_to_a_cached_scan(pair, monkeypatch):
    prov, cons, cache = pair
    scan([str(cons)], str(prov), cache_dir=cache)
    _no_index(monkeypatch)
    quiet = scan([str(cons)], str(prov), cache_dir=cache, settings=Settings(ignore=("unexpected-keyword",)))
    assert _rules(quiet) == [("missing-required", "b")]
    assert [s.finding.rule for s in quiet.suppressed] == ["unexpected-keyword"]


def test_a_corrupt_entry_is_one_line_and_the_scan_runs(pair, capsys):
    prov, cons, cache = pair
    cold = scan([str(cons)], str(prov), cache_dir=cache)
    entry = next((cache / "results").glob("*.json"))
    entry.write_bytes(b"not a cache file")
    capsys.readouterr()
    assert scan([str(cons)], str(prov), cache_dir=cache).findings == cold.findings
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "scan results cache" in err[0] and "afresh" in err[0]


def test_without_the_index_cache_nothing_is_stored(pair):
    prov, cons, cache = pair
    scan([str(cons)], str(prov), cache_dir=cache, use_index_cache=False)
    assert not (cache / "results").exists()
