"""`base-not-a-class` (checks/class_bases.py; issue 38, F10): a class statement whose provider base
the release turned into a function is the break, and what its body holds follows it.
fixtures/consumers/ladderuse against fixtures/providers/ladderlib_v{1,2}, each line's comment
saying what is expected."""

from __future__ import annotations

import functools
from pathlib import Path

from apiaudit.audit import scan

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CONSUMER = FIXTURES / "consumers" / "ladderuse" / "ladderuse"


@functools.lru_cache(maxsize=None)
def _layers(release: str) -> tuple[tuple, ...]:
    report = scan([str(CONSUMER)], str(FIXTURES / "providers" / f"ladderlib_{release}" / "ladderlib"), use_index_cache=False)
    found = [(f.line, f.rule, f.severity.value, f.conditional, f.reason) for f in report.findings if f.path == "ladderuse/layers.py"]
    return tuple(sorted(found, key=lambda f: (f[0], f[1])))


def test_a_subclass_of_what_became_a_function_breaks_at_the_class_statement():
    """ladderlib 2.0's `FusedLayer` is a factory function (vllm-kunlun's `KunlunFusedMoE(FusedMoE)`
    on vLLM 0.24.0): the class statement is the error; the `super().__init__(..., ep_size=)` in its
    body never runs, a warning naming the class statement; a call of the function elsewhere (the
    neighbouring shape, the trap) stays an error."""
    follows = (
        "follows the failure at line 7: the class statement raises TypeError (FusedLayer is a function on this release, "
        "base-not-a-class), so nothing in the class runs"
    )
    assert _layers("v2") == (
        (7, "base-not-a-class", "error", False, None),
        (9, "unexpected-keyword", "warning", False, follows),
        (13, "unexpected-keyword", "error", False, None),
    )


def test_a_base_that_is_a_class_on_the_release_is_no_finding():
    assert _layers("v1") == ()


def test_the_message_names_the_function_and_where_the_release_defines_it():
    report = scan([str(CONSUMER)], str(FIXTURES / "providers" / "ladderlib_v2" / "ladderlib"), use_index_cache=False)
    (found,) = [f for f in report.findings if f.rule == "base-not-a-class"]
    assert found.callee == "ladderlib.layers.FusedLayer"
    assert found.message == (
        "FusedLayer is a function on this release (ladderlib/layers.py:6), not a class: the statement "
        "`class MyFusedLayer(FusedLayer)` raises TypeError when it runs, so nothing in the class is defined"
    )
