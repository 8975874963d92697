"""The engine against hand-verified truth from real consumers of vLLM's internal API (issue 8, done-means 2).

Each pair of tests/truth/<consumer>/truth.toml is scanned (real released wheels, fetched once
into the shared test cache) and must match its table exactly: every expected break found at
its path, line and rule, no unconditional error elsewhere in the table's scope, no error on a
must_not_flag line. Pairs the engine gets wrong today are listed in known_gaps.toml with the
exact gaps; they run as strict xfails that fail the moment the gaps change, in either
direction, so the list can only shrink deliberately.
"""

from __future__ import annotations

from functools import cache

import pytest
from truth_tables import KNOWN_GAPS, Pair, Score, load_known_gaps, load_pairs, score

from apiaudit import scan

PAIRS = load_pairs()
GAPS = load_known_gaps()


class TruthMismatch(AssertionError):
    """The scan differs from the table exactly as known_gaps.toml says (the expected failure)."""


def _param(pair: Pair):
    known = GAPS.get(pair.id)
    marks = [pytest.mark.xfail(strict=True, raises=TruthMismatch, reason=known.reason)] if known else []
    return pytest.param(pair, id=pair.id, marks=marks)


@pytest.fixture(scope="module")
def scored(release_cache):
    @cache
    def run(pair: Pair) -> Score:
        report = scan([pair.consumer], pair.provider, cache_dir=release_cache)
        return score(pair, report.findings)

    return run


@pytest.mark.network
@pytest.mark.parametrize("pair", [_param(p) for p in PAIRS])
def test_scan_matches_the_truth_table(pair: Pair, scored):
    result = scored(pair)
    known = GAPS.get(pair.id)
    if known is None:
        assert result.gaps == frozenset(), _explain(result)
        return
    new = result.gaps - known.gaps
    assert not new, f"new gaps on {pair.id}, not in {KNOWN_GAPS.name}: {sorted(new)}"
    closed = known.gaps - result.gaps
    assert not closed, f"gaps closed on {pair.id}: remove {sorted(closed)} from {KNOWN_GAPS.name}"
    raise TruthMismatch(_explain(result))


def test_every_known_gap_names_a_pair():
    assert set(GAPS) <= {p.id for p in PAIRS}


def test_tables_cover_two_consumers_two_releases_five_providers_each():
    by_consumer: dict[str, dict[str, set[str]]] = {}
    for pair in PAIRS:
        by_consumer.setdefault(pair.consumer_name, {}).setdefault(pair.consumer, set()).add(pair.provider)
    assert len(by_consumer) >= 2
    for releases in by_consumer.values():
        assert len(releases) >= 2
        assert all(len(providers) >= 5 for providers in releases.values())


def _explain(result: Score) -> str:
    lines = [f"{result.pair.id}: recall {len(result.found)}/{len(result.pair.breaks)}"]
    lines += [f"  missed    {b.key}  ({b.evidence})" for b in result.missed]
    lines += [f"  false     {key}" for key in result.false_errors]
    lines += [f"  violation {key}" for key in result.violations]
    return "\n".join(lines)
