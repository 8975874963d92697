"""A consumer class's call of a member it inherits from its provider base (`Sub.from_parent`).

Fixture provider nodelib v1 -> v2 (fixtures/providers/nodelib_v{1,2}): 2.0's
`FSCollector.from_parent` requires the keyword-only `fspath` (pytest 6.2.5's shape). The consumer
fixtures/consumers/nodeplug calls it through its own subclasses: each line says what is expected.
"""

from __future__ import annotations

from pathlib import Path

from apiaudit.audit import scan

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _findings(version: str):
    report = scan(
        [str(FIXTURES / "consumers" / "nodeplug" / "nodeplug")], str(FIXTURES / "providers" / f"nodelib_v{version}" / "nodelib"),
        cache_dir=None, use_index_cache=False,
    )  # fmt: skip
    return {(f.path, f.line, f.rule, f.severity.value, f.callee, f.param) for f in report.findings if f.rule != "cannot-judge"}


def test_inherited_classmethod_binds_on_the_release_it_was_written_for():
    assert _findings("1") == set()


def test_inherited_classmethod_missing_a_required_keyword_is_an_error_through_each_subclass():
    assert _findings("2") == {
        ("nodeplug/plugin.py", 28, "missing-required", "error", "nodelib.nodes.FSCollector.from_parent", "fspath"),
        ("nodeplug/plugin.py", 29, "missing-required", "error", "nodelib.nodes.FSCollector.from_parent", "fspath"),
    }
