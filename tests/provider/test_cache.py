"""The provider index cache: a warm scan visits no module; a stale or corrupt entry is rebuilt."""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil
import textwrap
from pathlib import Path

import griffe
import pytest

from apiaudit.audit import scan
from apiaudit.cache import codec
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


def _forget_results(cache):
    """Drop the whole-scan results (apiaudit/cache/scans.py), so the next scan opens the index."""
    shutil.rmtree(cache / "results", ignore_errors=True)


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
    entries = list((cache / "index").glob("*.json"))
    assert len(entries) == 1
    entries[0].write_bytes(b"not a cache file")
    _forget_results(cache)
    again = scan([str(cons)], str(prov), cache_dir=cache)
    assert again.findings == first.findings
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rebuilding" in err[0]


class _Hostile:
    """Unpickling this writes the marker file: proof that a cache entry ran code."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_a_planted_pickle_never_runs_and_the_entry_is_rebuilt(pair, tmp_path, capsys):
    prov, cons, cache = pair
    cold = scan([str(cons)], str(prov), cache_dir=cache)
    entry = next((cache / "index").glob("*.json"))
    marker = tmp_path / "pickle-ran"
    payload = pickle.dumps({"engine": "x", "touched": {}, "memo": {}, "boom": _Hostile(marker)})
    # Where a pickle cache lived and where the data cache lives now.
    entry.with_suffix(".pickle").write_bytes(payload)
    entry.write_bytes(payload)
    capsys.readouterr()
    _forget_results(cache)

    warm = scan([str(cons)], str(prov), cache_dir=cache)

    assert not marker.exists(), "a cache entry ran code"
    assert warm.findings == cold.findings
    assert "rebuilding" in capsys.readouterr().err
    assert codec.read(entry, index_cache.KIND)["engine"] == index_cache._engine_fingerprint()


def _rewrite_payload(entry, edit):
    """Change an entry's payload and, with a valid hash, as a deliberate forger would."""
    header, _, payload = entry.read_bytes().partition(b"\n")
    payload = edit(payload)
    head = json.loads(header)
    head["sha256"] = hashlib.sha256(payload).hexdigest()
    entry.write_bytes(json.dumps(head).encode() + b"\n" + payload)


def test_a_tampered_entry_fails_its_hash_and_is_rebuilt_with_one_line(pair, capsys, monkeypatch):
    prov, cons, cache = pair
    cold = scan([str(cons)], str(prov), cache_dir=cache)
    entry = next((cache / "index").glob("*.json"))
    header, _, payload = entry.read_bytes().partition(b"\n")
    assert b'"b"' in payload
    entry.write_bytes(header + b"\n" + payload.replace(b'"b"', b'"z"'))  # same length, hash not updated
    _forget_results(cache)
    capsys.readouterr()
    visits = []
    real_visit = griffe.visit
    monkeypatch.setattr(griffe, "visit", lambda *a, **k: visits.append(a[0]) or real_visit(*a, **k))

    again = scan([str(cons)], str(prov), cache_dir=cache)

    assert again.findings == cold.findings
    assert visits, "a tampered entry must not be trusted"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not match its hash" in err[0] and "rebuilding" in err[0]


@pytest.mark.parametrize("forged", ["os:system", "subprocess:Popen", "builtins:eval", "pickle:loads"])
def test_a_forged_type_name_selects_nothing_and_runs_nothing(pair, capsys, forged):
    prov, cons, cache = pair
    cold = scan([str(cons)], str(prov), cache_dir=cache)
    entry = next((cache / "index").glob("*.json"))
    name = b"apiaudit.provider.records:Param"
    _rewrite_payload(entry, lambda payload: payload.replace(name, forged.encode(), 1))
    _forget_results(cache)
    capsys.readouterr()
    assert scan([str(cons)], str(prov), cache_dir=cache).findings == cold.findings
    assert "unregistered type" in capsys.readouterr().err


def test_the_cache_key_includes_python_and_griffe_versions(pair, monkeypatch):
    prov, cons, cache = pair
    scan([str(cons)], str(prov), cache_dir=cache)
    monkeypatch.setattr(codec, "environment_key", lambda: "cpython-9.9.9/griffe-0.0")
    visits = []
    real_visit = griffe.visit
    monkeypatch.setattr(griffe, "visit", lambda *a, **k: visits.append(a[0]) or real_visit(*a, **k))
    scan([str(cons)], str(prov), cache_dir=cache)
    assert visits, "an entry written under another Python or Griffe must not be trusted"


def test_the_cache_key_includes_the_engine(pair, monkeypatch):
    prov, cons, cache = pair
    scan([str(cons)], str(prov), cache_dir=cache)
    monkeypatch.setattr(index_cache, "_engine_fingerprint", lambda: "another-engine")
    _forget_results(cache)
    visits = []
    real_visit = griffe.visit
    monkeypatch.setattr(griffe, "visit", lambda *a, **k: visits.append(a[0]) or real_visit(*a, **k))
    scan([str(cons)], str(prov), cache_dir=cache, )
    assert visits, "an entry written by another engine version must not be trusted"


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.mark.parametrize("consumer", ["consumers/driver/driver", "consumers/jobs"])
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_the_fixture_pairs_give_the_same_findings_cold_and_warm(tmp_path, monkeypatch, consumer, version):
    args = dict(
        consumers=[str(FIXTURES / consumer)],
        provider=str(FIXTURES / "providers" / f"engine_{version}" / "engine"),
        rules_dirs=[FIXTURES / "providers"],
    )
    uncached = scan(**args, use_index_cache=False)
    cold = scan(**args, cache_dir=tmp_path)
    assert list((tmp_path / "index").glob("*.json")) and list((tmp_path / "consumer").glob("*.json"))

    def no_visits(*a, **k):
        raise AssertionError("a warm scan must not visit provider modules")

    monkeypatch.setattr(griffe, "visit", no_visits)
    warm = scan(**args, cache_dir=tmp_path)
    assert uncached.findings == cold.findings == warm.findings
    assert uncached.findings, "the fixtures have findings to compare"


def test_a_warm_run_rewrites_no_entry_and_reads_the_definitions_map_only_when_asked(pair, monkeypatch):
    prov, cons, cache = pair
    cold = scan([str(cons)], str(prov), cache_dir=cache)
    entries = sorted((cache / "index").glob("*.json"))
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in entries}
    kinds = []
    real_read = codec.read
    monkeypatch.setattr(codec, "read", lambda path, kind: kinds.append(kind) or real_read(path, kind))
    warm = scan([str(cons)], str(prov), cache_dir=cache)
    assert warm.findings == cold.findings
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted((cache / "index").glob("*.json"))} == before
    assert index_cache.DEFINITIONS_KIND not in kinds, "every answer was cached: the definitions map is not read"


def test_a_lost_definitions_map_is_rebuilt_with_the_same_findings(tmp_path):
    args = dict(
        consumers=[str(FIXTURES / "consumers/driver/driver")],
        provider=str(FIXTURES / "providers" / "engine_v2" / "engine"),
        rules_dirs=[FIXTURES / "providers"],
    )
    cold = scan(**args, cache_dir=tmp_path)
    for side in (tmp_path / "index").glob("*.definitions.json"):
        side.unlink()
    assert scan(**args, cache_dir=tmp_path).findings == cold.findings
