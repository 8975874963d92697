"""Whole-scan results cached (apiaudit/cache/scans.py): unchanged inputs answer without the index;
any changed input, consumer or provider, scans afresh; policy is applied on every run."""

from __future__ import annotations

import pytest

from apiaudit import engine
from apiaudit.audit import scan
from apiaudit.errors import InputError
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


_RULE = (
    '[provider]\nname = "tinyprov"\n[[pattern]]\nid = "tiny-make-without-d"\nseverity = "warning"\nversions = ">=0"\n'
    'kind = "call-without-keyword"\nsymbol = "tinyprov.core.make"\nkeyword = "d"\nmessage = "{message}"\n'
)


def _rules_dir(tmp_path, message="make() is watched"):
    rules = tmp_path / "rules"
    rules.mkdir(exist_ok=True)
    (rules / "tiny.toml").write_text(_RULE.format(message=message))
    return rules


def test_unchanged_rules_are_not_parsed_again(pair, tmp_path, monkeypatch):
    prov, cons, cache = pair
    rules = _rules_dir(tmp_path)
    cold = scan([str(cons)], str(prov), cache_dir=cache, rules_dirs=[rules])
    from apiaudit.recipes import loader

    def refuse(*args, **kwargs):
        raise AssertionError("unchanged rule files must be known by their bytes, not parsed")

    monkeypatch.setattr(loader, "load_rule_file", refuse)
    _no_index(monkeypatch)
    # The settings may name a pattern rule's id: it is known without the rules being parsed.
    warm = scan([str(cons)], str(prov), cache_dir=cache, rules_dirs=[rules], settings=Settings(ignore=("tiny-make-without-d",)))
    assert _rules(warm) == [rule for rule in _rules(cold) if rule[0] != "tiny-make-without-d"]


def test_a_changed_rule_file_scans_afresh(pair, tmp_path):
    prov, cons, cache = pair
    rules = _rules_dir(tmp_path)
    first = scan([str(cons)], str(prov), cache_dir=cache, rules_dirs=[rules])
    assert [f.message for f in first.findings if f.rule == "tiny-make-without-d"] == ["make() is watched"]
    _rules_dir(tmp_path, message="make() is watched closely")
    again = scan([str(cons)], str(prov), cache_dir=cache, rules_dirs=[rules])
    assert [f.message for f in again.findings if f.rule == "tiny-make-without-d"] == ["make() is watched closely"]
    # Another provider's rule file is read too: its rules could name this provider's ids.
    (rules / "other.toml").write_text('[provider]\nname = "otherprov"\n')
    assert scan([str(cons)], str(prov), cache_dir=cache, rules_dirs=[rules]).findings == again.findings


def test_after_a_warm_scan_a_broken_rule_file_or_an_unknown_rule_id_is_still_an_error(pair, tmp_path):
    prov, cons, cache = pair
    rules = _rules_dir(tmp_path)
    scan([str(cons)], str(prov), cache_dir=cache, rules_dirs=[rules])
    with pytest.raises(InputError, match="unknown rule id 'no-such-rule'"):
        scan([str(cons)], str(prov), cache_dir=cache, rules_dirs=[rules], settings=Settings(ignore=("no-such-rule",)))
    (rules / "tiny.toml").write_text("[provider\n")
    with pytest.raises(InputError, match="tiny.toml: not valid TOML"):
        scan([str(cons)], str(prov), cache_dir=cache, rules_dirs=[rules])


def _sources(tmp_path, name):
    root = tmp_path / name
    (root / "stage").mkdir(parents=True)
    (root / "a.py").write_text("A = 1\n")
    (root / "stage" / "b.py").write_text("B = 2\n")
    (root / "runner").mkdir()
    (root / "runner" / "r.py").write_text("R = 3\n")  # the runner is not what a scan runs
    return root


def test_the_engine_is_known_by_its_content_its_files_read_once(tmp_path, monkeypatch):
    from apiaudit.cache import scans

    cache, one, two = tmp_path / "cache", _sources(tmp_path, "one"), _sources(tmp_path, "two")
    first = scans._source_digests(str(one), cache)
    assert [rel for rel, _ in first] == ["a.py", "stage/b.py"]
    # Another install of the same code: the same digests, so the same caches.
    assert scans._source_digests(str(two), cache) == first

    def no_reading(*args, **kwargs):
        raise AssertionError("a module whose stat is unchanged was read again")

    with monkeypatch.context() as patched:
        patched.setattr(scans, "open", no_reading, raising=False)
        assert scans._source_digests(str(one), cache) == first
    (one / "a.py").write_text("A = 9\n")  # the same size, a new mtime
    assert scans._source_digests(str(one), cache) != first
    (one / "stage" / "c.py").write_text("")
    assert [rel for rel, _ in scans._source_digests(str(one), cache)] == ["a.py", "stage/b.py", "stage/c.py"]


def test_how_a_consumer_was_given_is_part_of_the_key(tmp_path):
    """A fetched release's folder given as a path is the same files at the same root as the
    release given by name; the report names the two differently, so they are two entries."""
    from apiaudit.cache.scans import ConsumerInput, scan_key
    from apiaudit.sources.base import CodeTree

    provider = CodeTree("prov", "1.0", tmp_path, ("prov",))
    files = (("cons/__init__.py", "0" * 64),)
    by_name = ConsumerInput("cons", "1.0", str(tmp_path), "cons 1.0", files, "release")
    by_path = ConsumerInput("cons", "1.0", str(tmp_path), "cons 1.0", files, "path")
    assert scan_key(provider, "r", "", (3, 11), (by_name,)) != scan_key(provider, "r", "", (3, 11), (by_path,))
