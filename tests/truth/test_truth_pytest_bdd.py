"""Held-out truth (issue 8, done-means 2): pytest-bdd (consumer) x pytest (provider).

The truth in tests/truth/pytest_bdd/truth.toml was written from the consumer's own test suite run
against each provider release and from a reading of both sides' sources, before apiaudit was run
on the pair (tests/truth/pytest_bdd/EVIDENCE.md). Each pair is scanned from the real released
wheels, fetched once into the shared test cache; only the errors inside `scope` are judged.

A pair is right when every truth break is reported (same path, line and an accepted rule) and no
other error is. Pairs the current engine gets wrong are listed in known_gaps.toml and run as
strict xfails: fixing the engine turns them into failures until the gap is removed from the list.
Never edit truth.toml to match the engine.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from apiaudit.audit import scan
from apiaudit.findings import Finding, Severity

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

HERE = Path(__file__).parent / "pytest_bdd"
TRUTH = tomllib.loads((HERE / "truth.toml").read_text(encoding="utf-8"))
GAPS = tomllib.loads((HERE / "known_gaps.toml").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Site:
    """One consumer call site that breaks at run time on the pair (from truth.toml)."""

    path: str
    line: int
    rules: frozenset[str]
    name: str


@dataclass(frozen=True)
class PairScore:
    consumer: str
    provider: str
    expected: tuple[Site, ...]
    found: tuple[Site, ...]
    missed: tuple[Site, ...]
    false_errors: tuple[tuple[str, int, str, str], ...]  # (path, line, rule, callee)
    must_not_flag_hit: tuple[tuple[str, int, str], ...]  # (path, line, rule)

    @property
    def right(self) -> bool:
        return not self.missed and not self.false_errors


def _pairs() -> list[tuple[str, str]]:
    return [(c, p) for c in TRUTH["consumer_versions"] for p in TRUTH["provider_versions"]]


def _expected(consumer: str, provider: str) -> tuple[Site, ...]:
    return tuple(
        Site(b["path"], b["line"], frozenset([b["rule"], *b.get("also", [])]), b["name"])
        for b in TRUTH["break"]
        if b["consumer"] == consumer and provider in b["providers"]
    )


def _must_not_flag(consumer: str, provider: str) -> set[tuple[str, int]]:
    return {
        (m["path"], line)
        for m in TRUTH["must_not_flag"]
        if m["consumer"] == consumer and provider in m["providers"]
        for line in m["lines"]
    }


@functools.lru_cache(maxsize=None)
def _errors(consumer: str, provider: str, cache_dir: Path) -> tuple[Finding, ...]:
    report = scan([f"{TRUTH['consumer']}=={consumer}"], f"{TRUTH['provider']}=={provider}", cache_dir=cache_dir)
    scope = set(TRUTH["scope"][consumer])
    return tuple(f for f in report.findings if f.severity is Severity.ERROR and f.path in scope)


def score(consumer: str, provider: str, cache_dir: Path) -> PairScore:
    expected = _expected(consumer, provider)
    errors = _errors(consumer, provider, cache_dir)
    found = tuple(s for s in expected if any(f.path == s.path and f.line == s.line and f.rule in s.rules for f in errors))
    explained = {(s.path, s.line, r) for s in expected for r in s.rules}
    false_errors = tuple(
        sorted({(f.path, f.line, f.rule, f.callee or "") for f in errors if (f.path, f.line, f.rule) not in explained})
    )
    guarded = _must_not_flag(consumer, provider)
    return PairScore(
        consumer=consumer,
        provider=provider,
        expected=expected,
        found=found,
        missed=tuple(s for s in expected if s not in found),
        false_errors=false_errors,
        must_not_flag_hit=tuple((p, line, r) for p, line, r, _ in false_errors if (p, line) in guarded),
    )


def _known_gap(consumer: str, provider: str) -> str | None:
    for gap in GAPS.get("gap", []):
        if gap["consumer"] == consumer and gap["provider"] == provider:
            return gap["why"]
    return None


def _params():
    for consumer, provider in _pairs():
        why = _known_gap(consumer, provider)
        marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
        yield pytest.param(consumer, provider, marks=marks, id=f"{consumer}-x-{provider}")


def test_truth_is_well_formed():
    """Every entry names a known consumer/provider release and a scoped file (no network)."""
    consumers, providers = set(TRUTH["consumer_versions"]), set(TRUTH["provider_versions"])
    for entry in [*TRUTH["break"], *TRUTH["must_not_flag"], *TRUTH.get("not_static", [])]:
        assert entry["consumer"] in consumers
        assert set(entry["providers"]) <= providers
        assert entry["path"] in TRUTH["scope"][entry["consumer"]]
    for gap in GAPS.get("gap", []):
        assert (gap["consumer"], gap["provider"]) in set(_pairs())


@pytest.mark.network
@pytest.mark.parametrize("consumer, provider", list(_params()))
def test_pair_matches_truth(consumer, provider, release_cache):
    result = score(consumer, provider, release_cache)
    assert result.missed == () and result.false_errors == (), (
        f"missed {[(s.path, s.line, sorted(s.rules)) for s in result.missed]}; false errors {list(result.false_errors)}"
    )


@pytest.mark.network
def test_scores(release_cache, capsys):
    """Recall, false errors and clean pairs over the whole matrix, printed as one table (`-s`)."""
    results = [score(c, p, release_cache) for c, p in _pairs()]
    expected = sum(len(r.expected) for r in results)
    found = sum(len(r.found) for r in results)
    clean = [r for r in results if not r.expected]
    lines = [f"{'pair':<20} {'truth':>5} {'found':>5} {'false':>5}  wrong"]
    for r in results:
        wrong = [f"missed {s.path}:{s.line}" for s in r.missed] + [f"false {p}:{n} {rule} {c}" for p, n, rule, c in r.false_errors]
        lines.append(f"{r.consumer + ' x ' + r.provider:<20} {len(r.expected):>5} {len(r.found):>5} {len(r.false_errors):>5}  {'; '.join(wrong)}")
    lines.append(
        f"recall {found}/{expected}; false errors {sum(len(r.false_errors) for r in results)}"
        f" ({sum(len(r.must_not_flag_hit) for r in results)} on must_not_flag lines);"
        f" clean pairs cleared {sum(1 for r in clean if not r.false_errors)}/{len(clean)}"
    )
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    # The table and the per-pair verdicts agree: exactly the known gaps are wrong.
    assert {(r.consumer, r.provider) for r in results if not r.right} == {
        (g["consumer"], g["provider"]) for g in GAPS.get("gap", [])
    }
