"""The engine against hand-verified truth from real consumers of a provider's internal API (issue 8, done-means 2).

The one truth harness: every table (README.md's layout) is read by truth_tables.py. Each pair
of tests/truth/<consumer>/truth.toml is scanned (real released wheels, fetched once
into the shared test cache) and must match its table exactly: every expected break found at
its path, line and rule, no unconditional error elsewhere in the table's scope, no error on a
must_not_flag line. Pairs the engine gets wrong today are listed in known_gaps.toml with the
exact gaps; they run as strict xfails that fail the moment the gaps change, in either
direction, so the list can only shrink deliberately.
"""

from __future__ import annotations

from functools import cache

import pytest
from truth_tables import (
    KNOWN_GAPS,
    TRUTH_DIR,
    ExpectedBreak,
    MustNotFlag,
    NotFlagKind,
    Pair,
    Score,
    load_known_gaps,
    load_pairs,
    score,
)

from apiaudit import scan
from apiaudit.findings import Finding, Severity

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


def test_every_table_is_read_in_the_one_layout():
    tables = {path.parent.name for path in TRUTH_DIR.glob("*/truth.toml")}
    assert {"lm_eval", "openrlhf", "pytest_bdd", "trl"} <= tables
    assert {p.consumer_name for p in PAIRS} >= {"lm-eval", "openrlhf", "pytest-bdd", "trl"}
    assert not list(TRUTH_DIR.glob("*/known_gaps.toml")), "one known_gaps.toml, beside the harness"


def test_tables_cover_two_consumers_two_releases_five_providers_each():
    by_consumer: dict[str, dict[str, set[str]]] = {}
    for pair in PAIRS:
        by_consumer.setdefault(pair.consumer_name, {}).setdefault(pair.consumer, set()).add(pair.provider)
    # Issue 8's bar: two consumers with two releases each; a table added later may hold one release.
    assert sum(len(releases) >= 2 for releases in by_consumer.values()) >= 2
    for releases in by_consumer.values():
        assert all(len(providers) >= 5 for providers in releases.values())


def _explain(result: Score) -> str:
    lines = [f"{result.pair.id}: recall {len(result.found)}/{len(result.pair.breaks)}"]
    lines += [f"  missed    {b.key}  ({b.evidence})" for b in result.missed]
    lines += [f"  false     {key}" for key in result.false_errors]
    lines += [f"  violation {key}" for key in result.violations]
    return "\n".join(lines)


# The scoring itself, on hand-made findings (no scan): what counts as found, false, a violation.


def _finding(path: str, line: int, rule: str, *, conditional: bool = False, severity: Severity = Severity.ERROR):
    return Finding(
        rule=rule, severity=severity, consumer="c", path=path, line=line, column=0,
        callee=None, param=None, message="", conditional=conditional,
    )  # fmt: skip


def _pair(kind: NotFlagKind = NotFlagKind.FINE) -> Pair:
    expected = ExpectedBreak("pkg/a.py", 10, "import-missing", "prov.x", "x", "prov/x.py:1")
    quiet = MustNotFlag("pkg/a.py", 20, kind, "guarded")
    return Pair("c", "c==1", "prov==2", ("pkg/a.py",), (expected,), (quiet,))


def test_an_expected_break_counts_only_as_an_unconditional_error_at_its_line_and_rule():
    pair = _pair()
    assert score(pair, [_finding("pkg/a.py", 10, "import-missing")]).recall == 1.0
    assert score(pair, [_finding("pkg/a.py", 10, "import-missing", conditional=True)]).recall == 0.0
    assert score(pair, [_finding("pkg/a.py", 11, "import-missing")]).recall == 0.0
    assert score(pair, [_finding("pkg/a.py", 10, "attribute-missing")]).recall == 0.0


def test_false_errors_are_unconditional_errors_in_scope_the_table_does_not_expect():
    result = score(
        _pair(),
        [
            _finding("pkg/a.py", 30, "rpc-missing"),
            _finding("pkg/a.py", 31, "rpc-missing", conditional=True),
            _finding("pkg/a.py", 32, "cannot-judge", severity=Severity.INFO),
            _finding("pkg/other.py", 33, "rpc-missing"),
        ],
    )
    assert result.false_errors == ("pkg/a.py:30 rpc-missing",)
    assert not result.found_clean


def test_a_break_is_found_under_any_rule_it_names_and_those_rules_are_no_false_error():
    expected = ExpectedBreak("pkg/a.py", 10, "unexpected-keyword", "", "prov.F", "prov/f.py:1", also=("missing-required",))
    pair = Pair("c", "c==1", "prov==2", ("pkg/a.py",), (expected,), ())
    result = score(pair, [_finding("pkg/a.py", 10, "missing-required")])
    assert result.recall == 1.0 and result.false_errors == ()
    assert score(pair, [_finding("pkg/a.py", 10, "attribute-missing")]).false_errors == ("pkg/a.py:10 attribute-missing",)


def test_a_dead_line_tolerates_no_error_a_runtime_line_tolerates_a_conditional_one():
    conditional = [_finding("pkg/a.py", 20, "import-missing", conditional=True)]
    assert score(_pair(NotFlagKind.DEAD), conditional).violations == ("pkg/a.py:20 import-missing",)
    assert score(_pair(NotFlagKind.RUNTIME), conditional).violations == ()
    unconditional = [_finding("pkg/a.py", 20, "import-missing")]
    assert score(_pair(NotFlagKind.RUNTIME), unconditional).violations == ("pkg/a.py:20 import-missing",)
