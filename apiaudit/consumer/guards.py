"""Guards, three-valued: decided True, decided False, or left to the checks / undecided.

A guard folds here when literals and the audited release decide it (`Version(p.__version__)
>= Version("0.9")`, `sys.version_info >= (3, 10)`, a module constant, or a helper function
wrapping such a test, folded statement by statement in `helpers.py`). A feature test (`hasattr`, `inspect.signature(f).parameters`,
`isinstance`, a `TypeIs` helper, an import that may fail) becomes a `Condition` the checks
decide against the provider index. Anything else keeps both branches live, conditional.
"""

from __future__ import annotations

import ast
import operator
from dataclasses import replace
from typing import Any, Callable

from packaging.version import InvalidVersion, Version

from apiaudit.consumer.records import Condition, ConditionKind, ImportRef, Root, Step
from apiaudit.consumer.values import (
    UNBOUND,
    AttrOrNone,
    Chain,
    Const,
    ConstItems,
    ImportChoice,
    ParsedVersion,
    Probe,
    ProviderSpec,
    ProviderVersion,
    Unbound,
    Value,
    VersionDerived,
    VersionPart,
)
from apiaudit.infra.frozen import record

MAX_DEPTH = 40  # deeper `not not ...` / nested boolean tests stay undecided


@record
class Branch:
    """How one side of a test runs: dead, or live under conditions (and undecided guards)."""

    dead: bool = False
    conditions: tuple[Condition, ...] = ()
    undecided: str | None = None
    narrow: tuple[tuple[str, Value], ...] = ()  # names that hold a narrower value on this side


ALWAYS = Branch()
DEAD = Branch(dead=True)


@record
class Decision:
    if_true: Branch
    if_false: Branch

    @property
    def decided(self) -> bool:
        return self.if_true.dead or self.if_false.dead


TRUE = Decision(ALWAYS, DEAD)
FALSE = Decision(DEAD, ALWAYS)


RUNTIME = Decision(ALWAYS, ALWAYS)  # a test on run-time data: both sides run on any release


def undecided(text: str) -> Decision:
    return Decision(Branch(undecided=text), Branch(undecided=f"not ({text})"))


def constant(flag: bool) -> Decision:
    return TRUE if flag else FALSE


def symbolic(condition: Condition, narrow_true: tuple = (), narrow_false: tuple = ()) -> Decision:
    negated = replace(condition, expect=not condition.expect)
    return Decision(Branch(conditions=(condition,), narrow=narrow_true), Branch(conditions=(negated,), narrow=narrow_false))


def argument_given(condition: Condition, none_test: bool = False) -> Decision:
    """`param is not None` (or `if param:`) on a parameter defaulting to None: the true side runs
    only where a caller passed it. The other side runs whoever calls (a caller may pass None),
    unless every caller is known to pass a value that is never None: for `param is not None`
    (`none_test`) that side carries the condition negated, which the checks decide dead only then
    (`if param:` may be false for a value that is not None, so its other side always runs)."""
    if not none_test:
        return Decision(Branch(conditions=(condition,)), ALWAYS)
    absent = replace(condition, expect=False, text=f"{condition.name} is None")
    return Decision(Branch(conditions=(condition,)), Branch(conditions=(absent,)))


def attribute_truth(value: Value, text: Callable[[], str]) -> Decision | None:
    """`if obj.flag:` on an attribute read off an instance (`self.flag`, `param.flag`, through
    attributes only): each side carries a `FIXED_VALUE` condition, which the checks decide only
    where the provider keeps the attribute at one literal; elsewhere both sides run, as on any
    test of run-time data (`_runs_anyway`). `text`: the test's text, made only where needed."""
    if not isinstance(value, Chain) or value.root.kind not in _INSTANCES or not value.steps or any(s.kind != "attr" for s in value.steps):
        return None
    target = chain_target(value)
    return symbolic(Condition(ConditionKind.FIXED_VALUE, True, text(), target=target))


# Roots that hold an instance (a consumer class's `self`, a parameter the provider passes)
_INSTANCES = frozenset({"self", "fself", "param", "fparam", "hparam"})


def _runs_anyway(branch: Branch) -> bool:
    """A side that runs on any release except where the checks prove every caller passes an
    argument (the `param is None` side of `argument_given`), or that the provider keeps a flag
    at a value (`FIXED_VALUE`): in a union with another side it is ALWAYS (the union may run
    either way), as it was before that side carried its condition."""
    return not branch.dead and branch.undecided is None and not branch.narrow and all(
        (c.kind is ConditionKind.ARGUMENT and not c.expect) or c.kind is ConditionKind.FIXED_VALUE for c in branch.conditions
    )


def at_run_time(d: Decision) -> bool:
    """A test whose sides both run on any release but where the checks decide otherwise: run-time
    data, as `RUNTIME` (a `FIXED_VALUE` test)."""
    return d == RUNTIME or (_runs_anyway(d.if_true) and _runs_anyway(d.if_false))


def probe_of(d: Decision) -> Probe | None:
    """A test the checks decide, kept as a value: only when each side is its conditions alone."""
    sides = (d.if_true, d.if_false)
    if any(b.dead or b.undecided or not b.conditions or (b.conditions and _runs_anyway(b)) for b in sides):
        return None  # (a narrowing holds at the test only: a kept value drops it)
    return Probe(d.if_true.conditions, d.if_false.conditions)


def from_probe(probe: Probe, text: str | None = None) -> Decision:
    """`if HAS_X:` on a kept probe; `text` (the test as written here) names it in findings."""
    if text is None:
        return Decision(Branch(conditions=probe.if_true), Branch(conditions=probe.if_false))
    shown = (text, f"not ({text})")
    return Decision(*(Branch(conditions=tuple(replace(c, text=t) for c in side)) for side, t in zip((probe.if_true, probe.if_false), shown)))


def negate(d: Decision) -> Decision:
    return Decision(d.if_false, d.if_true)


def _both(a: Branch, b: Branch) -> Branch:
    """Both sides hold (a conjunction)."""
    if a.dead or b.dead:
        return DEAD
    texts = [t for t in (a.undecided, b.undecided) if t]
    return Branch(False, a.conditions + tuple(c for c in b.conditions if c not in a.conditions), " and ".join(texts) or None, a.narrow + b.narrow)


def conjoin(a: Decision, b: Decision, text: "str | Callable[[], str]") -> Decision:
    """`a and b`: true when both are; false when a is false, or a is true and b false."""
    if_true = _both(a.if_true, b.if_true)
    second = _both(a.if_true, b.if_false)
    if a.if_false.dead:
        if_false = second
    elif second.dead:
        if_false = a.if_false
    elif _runs_anyway(a.if_false) or _runs_anyway(second):
        if_false = ALWAYS  # one way runs on any release unconditionally: so does the union
    else:
        shown = text() if callable(text) else text
        if_false = Branch(undecided=f"not ({shown})")  # a disjunction: not representable as conditions
    return Decision(if_true, if_false)


def disjoin(a: Decision, b: Decision, text: "str | Callable[[], str]") -> Decision:
    """`a or b` is `not (not a and not b)`."""
    return negate(conjoin(negate(a), negate(b), lambda: f"not ({text() if callable(text) else text})"))


# ----------------------------------------------------------------- folding values


class Folder:
    """Turns version-like values into the Python objects they are on the audited release."""

    def __init__(self, provider_version: str | None, python_version: tuple[int, ...]):
        self.provider_text = provider_version
        try:
            self.provider = Version(provider_version) if provider_version else None
        except InvalidVersion:
            self.provider = None
        self.python = tuple(python_version)

    def concrete(self, value: Value) -> tuple[bool, object]:
        """(known, python object) for a value on the audited release."""
        if isinstance(value, Const):
            return True, value.value
        if isinstance(value, ConstItems):
            return True, value.items  # membership and truth as the list or set has them
        if isinstance(value, ProviderVersion):
            if value.form == "text":
                return (self.provider_text is not None), self.provider_text
            return (self.provider is not None), self.provider
        if isinstance(value, ParsedVersion):
            try:
                return True, Version(value.text)
            except InvalidVersion:
                return False, None
        if isinstance(value, ProviderSpec):
            return True, _FOUND
        if isinstance(value, VersionPart):
            if self.provider is None:
                return False, None
            return True, getattr(self.provider, value.part)
        return False, None

    @staticmethod
    def involves_provider(*values: Value) -> bool:
        return any(isinstance(v, (ProviderVersion, VersionPart, VersionDerived)) for v in values)


_FOUND = object()  # a module spec that was found: not None, true, equal to no literal


_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: operator.contains(b, a),
    ast.NotIn: lambda a, b: not operator.contains(b, a),
}
ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def compare(folder: Folder, left: Value, op: ast.cmpop, right: Value) -> tuple[bool, object, bool]:
    """(known, result, compared_as_text): the comparison as Python evaluates it on the audited release."""
    known_l, a = folder.concrete(left)
    known_r, b = folder.concrete(right)
    if not (known_l and known_r):
        return False, None, False
    if isinstance(op, (ast.Is, ast.IsNot)):
        if a is None or b is None or isinstance(a, bool) or isinstance(b, bool):
            return True, _COMPARE[type(op)](a, b), False
        return False, None, False
    as_text = isinstance(op, ORDERING) and isinstance(a, str) and isinstance(b, str) and folder.involves_provider(left, right)
    try:
        return True, bool(_COMPARE[type(op)](a, b)), as_text
    except (TypeError, KeyError):
        return False, None, False


def truthiness(folder: Folder, value: Value) -> bool | None:
    if isinstance(value, Unbound):
        return None
    known, obj = folder.concrete(value)
    if not known:
        return None
    try:
        return bool(obj)
    except Exception:  # noqa: BLE001 - a value whose truth cannot be told
        return None


def import_condition(choice: ImportChoice, expect_ok: bool, text: str) -> Condition:
    """The condition under which `choice.ok` (expect_ok) or its fallback runs."""
    return Condition(ConditionKind.IMPORT_FAILS, not expect_ok, text, imports=choice.imports, caught=choice.caught)


def choice_truth(folder: Folder, choice: ImportChoice, text: str, name: str | None) -> Decision:
    """`if X:` / `if X is not None:` where X came from a try/except import."""
    ok = truthiness(folder, choice.ok) if not isinstance(choice.ok, Chain) else True
    fb = False if isinstance(choice.fallback, Unbound) else truthiness(folder, choice.fallback)
    if isinstance(choice.fallback, Chain):
        fb = True
    if ok is None or fb is None:
        return undecided(text)
    if ok == fb:
        return constant(ok)
    narrow_true = ((name, choice.ok if ok else choice.fallback),) if name else ()
    narrow_false = ((name, choice.fallback if ok else choice.ok),) if name else ()
    cond = import_condition(choice, expect_ok=ok, text=text)
    return symbolic(cond, narrow_true, narrow_false)


def chain_target(value: Value) -> tuple[Root, tuple[Step, ...]] | None:
    if isinstance(value, Chain):
        return (value.root, tuple(replace(s, check=False) for s in value.steps))
    return None


def none_test(value: Value, is_not: bool, text: Callable[[], str], name: str | None, folder: Folder) -> Decision | None:
    """`X is None` / `X is not None`. `text`: the test's text, made only where needed (most tests are on run-time data)."""
    if isinstance(value, AttrOrNone):
        d = symbolic(replace(value.condition, text=text()))
        return d if is_not else negate(d)
    if isinstance(value, ImportChoice):
        d = choice_truth(folder, ImportChoice(_not_none(value.ok), _not_none(value.fallback), value.imports, value.caught, value.origin), text(), None)
        if name and not d.decided and d.if_true.conditions:
            ok_runs = not d.if_true.conditions[0].expect  # expect False: no import fails -> ok side
            narrow_t = ((name, value.ok if ok_runs else value.fallback),)
            narrow_f = ((name, value.fallback if ok_runs else value.ok),)
            d = Decision(replace(d.if_true, narrow=narrow_t), replace(d.if_false, narrow=narrow_f))
        return d if is_not else negate(d)
    return None


def _not_none(value: Value) -> Value:
    if isinstance(value, Chain):
        return Const(True)
    if isinstance(value, Const):
        return Const(value.value is not None)
    if isinstance(value, Unbound):
        return UNBOUND
    return value


def import_ref_text(ref: ImportRef) -> str:
    return f"from {ref.module} import {ref.name}" if ref.name else f"import {ref.module}"
