"""Members a provider class's instances get from elsewhere than its own declarations (issue 37,
causes N15, N16, N17, 3 and N12 of the precision corpus, non-vLLM consumers).

Fixture provider `ormkit` (fixtures/providers/ormkit_v1) has sqlalchemy's and Django's shapes with
generic names; the consumer `ormplug` (fixtures/consumers/ormplug) says on each line what must be
reported: each cause beside a counter-case where the same shape is a real break and stays an error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from apiaudit.audit import scan
from apiaudit.policy.config import Settings

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PROVIDER = FIXTURES / "providers" / "ormkit_v1" / "ormkit"
CONSUMER = FIXTURES / "consumers" / "ormplug" / "ormplug"


@pytest.fixture(scope="module")
def report():
    return scan([str(CONSUMER)], str(PROVIDER), cache_dir=None, use_index_cache=False, settings=Settings())


def _in(report, path: str) -> list[tuple]:
    return sorted(
        (f.line, f.rule, f.severity.value, f.reason) for f in report.findings if f.path == f"ormplug/{path}" and f.rule != "cannot-judge"
    )


def test_names_bound_by_tuple_and_list_targets_and_their_re_exports_exist(report):
    """N15: `(A, B, PASSIVE_OFF, C) = Flag.__members__.values()`, `FIRST, *OTHERS = ...` and
    `[LEFT, (RIGHT, MIDDLE)] = ...` bind every name; `from .flags import PASSIVE_OFF` re-exports
    one. A name bound nowhere stays an error."""
    errors = [f for f in report.findings if f.path == "ormplug/generic.py" and f.rule == "attribute-missing"]
    assert [(f.line, f.severity.value, f.callee) for f in errors] == [(18, "error", "ormkit.attributes.PASSIVE_GONE")]


def test_self_inside_a_class_with_its_own_getattr_is_never_missing(report):
    """N16: `self.name` in a comparator whose own `__getattr__` answers every name normal lookup
    misses: no finding. The same read in a comparator without one stays an error."""
    assert _in(report, "composite.py") == [(11, "attribute-missing", "error", None)]


def test_an_attribute_the_provider_sets_on_such_objects_from_other_code_is_not_proven_missing(report):
    """N17: `node.origin = self.origin` in Parser.extend_nodelist, on an unannotated `node` whose
    other uses there (`must_be_first`) are Node's, and `node.line = line` in a function whose
    `node` is annotated Node: warnings naming the store. A store on an object whose other use is
    no Node member (`item.upper()`), or one annotated as an unrelated class, proves nothing."""
    assert _in(report, "templates.py") == [
        (5, "attribute-missing", "warning", "the provider sets 'origin' on such objects itself (ormkit/template.py:27)"),
        (9, "attribute-missing", "warning", "the provider sets 'line' on such objects itself (ormkit/template.py:36)"),
        (13, "attribute-missing", "error", None),
        (17, "attribute-missing", "error", None),
    ]


def test_self_of_a_consumer_mixin_over_a_provider_mixin_gets_members_from_what_it_is_combined_with(report):
    """Cause 3: AccessMixin has no constructor and no base outside the provider, and reads
    `self.request`, which nothing along its MRO gives it: a mixin, whose instances get members
    from the classes it is combined with; the consumer's own mixin over it builds nothing, so what
    it reads on self is a warning. Where the consumer builds the class itself, or the provider
    base has a constructor (a whole object), or reads only what it declares, they stay errors."""
    mixin = "AccessMixin is a mixin (it reads self.request, which no class of its MRO gives it): the classes it is combined with supply members"
    assert _in(report, "views.py") == [
        (6, "attribute-missing", "warning", mixin),
        (6, "attribute-missing", "warning", mixin),
        (11, "attribute-missing", "error", None),
        (16, "attribute-missing", "error", None),
        (21, "attribute-missing", "error", None),
    ]


def test_an_override_judged_only_by_a_call_in_a_method_not_shown_to_run_is_a_warning(report):
    """N12: AttributeImpl.append calls `self.set(..., passive=)`, which the consumer's `set`
    (value dropped) cannot take; the release calls `append` only on an object of a class it
    cannot tell (a backref listener's `child_impl`), so whether it runs on this class is not
    proven: a warning saying so. `commit`, which InstrumentedAttribute calls on its `impl`
    (annotated AttributeImpl), calls `self.flush(state, True)`: that one surely runs, an error.
    So does Runner._inner_loop's `self._load(resume, None)`: `run` hands `self._inner_loop` on as
    a value (this object's method), and the consumer calls `run` on a MyRunner it builds, though
    the release calls `run` only on objects of no known class."""
    got = [(f.line, f.severity.value, f.provider_location, f.reason) for f in report.findings if f.rule == "override-incompatible"]
    assert got == [
        (8, "warning", "ormkit/attributes.py:13",
         "ormkit/attributes.py:13 runs only where AttributeImpl.append runs on such an object, and no code proven to run "
         "calls append on one (the release calls it on objects of classes it cannot tell)"),
        (13, "error", "ormkit/attributes.py:19", None),
        (5, "error", "ormkit/runner.py:8", None),
    ]  # fmt: skip
