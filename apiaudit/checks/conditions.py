"""Decide the consumer stage's symbolic guards against the provider index.

Each `Condition` is True, False or undecided (None) on the audited release. A line whose
conditions include a False one never runs there (it is skipped, whatever it holds); an
undecided one makes its findings conditional, naming the guard.
"""

from __future__ import annotations

from dataclasses import dataclass

from apiaudit.consumer.model import Condition, ConditionKind, Liveness, Site, Use
from apiaudit.provider.model import Found, Missing, SymbolKind, UnresolvedBase


@dataclass(frozen=True)
class Verdict:
    dead: bool
    guard: str | None = None  # the undecided guards' text; None when the line certainly runs

    @property
    def conditional(self) -> bool:
        return self.guard is not None


RUNS = Verdict(False)
DEAD = Verdict(True)


def verdict(ctx, live: Liveness) -> Verdict:
    if not live.conditions and not live.undecided:
        return RUNS
    undecided = list(live.undecided)
    for condition in live.conditions:
        result = decide(ctx, condition)
        if result is None:
            undecided.append(condition.text)
        elif result != condition.expect:
            return DEAD
    return Verdict(False, " and ".join(dict.fromkeys(undecided)) if undecided else None)


def decide(ctx, condition: Condition) -> bool | None:
    key = ("condition", condition.kind, condition.target, condition.name, condition.imports, condition.caught)
    if key not in ctx.condition_memo:
        ctx.condition_memo[key] = _decide(ctx, condition)
    return ctx.condition_memo[key]


def _decide(ctx, condition: Condition) -> bool | None:
    if condition.kind is ConditionKind.IMPORT_FAILS:
        return import_fails(ctx, condition.imports, condition.caught)
    value = _target_value(ctx, condition.target)
    if value is None:
        return None
    if condition.kind is ConditionKind.HAS_ATTR:
        return _has_attr(ctx, value, condition.name or "")
    if condition.kind is ConditionKind.HAS_PARAM:
        return _has_param(ctx, value, condition.name or "")
    if condition.kind is ConditionKind.IS_INSTANCE:
        return _is_instance(ctx, value, condition.name or "")
    return None


def import_fails(ctx, imports, caught: str) -> bool | None:
    """Does one of the imports raise an exception `caught` catches? (Stops at the first failure, as Python does.)"""
    for ref in imports:
        failure = import_failure(ctx, ref.module, ref.name)
        if failure is None:
            return None
        if failure == "ok":
            continue
        if failure == "ImportError" and caught == "ModuleNotFoundError":
            return False  # escapes the handler: reported on the import itself
        return True
    return False


def import_failure(ctx, module: str, name: str | None) -> str | None:
    """'ok', 'ModuleNotFoundError', 'ImportError' (a missing name), or None when the index cannot tell."""
    if not ctx.index.loader.owns(module):
        return None
    if not ctx.index.module_exists(module):
        return "ModuleNotFoundError"
    if name is None:
        return "ok"
    res = ctx.index.resolve(f"{module}.{name}")
    if isinstance(res, Found):
        return "ok"
    if isinstance(res, Missing):
        return "ImportError"
    return None


def _target_value(ctx, target):
    from apiaudit.checks.chains import evaluate_chain

    if target is None:
        return None
    root, steps = target
    return evaluate_chain(ctx, Use(root, steps, Site(0, 0), "", ""))


def _has_attr(ctx, value, name: str) -> bool | None:
    from apiaudit.checks.chains import InstanceValue, SymbolValue

    if isinstance(value, SymbolValue):
        sym = value.symbol
        if sym.kind is SymbolKind.MODULE:
            res = ctx.index.resolve(f"{sym.path}.{name}")
        elif sym.kind is SymbolKind.CLASS:
            res = ctx.index.class_member(sym.path, name, instance=False)
        else:
            return None
        return True if isinstance(res, Found) else False if isinstance(res, Missing) else None
    if isinstance(value, InstanceValue):
        if name in value.own:
            return True
        results = [ctx.index.class_member(c, name, instance=True) for c in value.classes]
        if any(isinstance(r, Found) for r in results):
            return True
        if all(isinstance(r, Missing) for r in results):
            return False
    return None


def _has_param(ctx, value, name: str) -> bool | None:
    from apiaudit.checks.chains import SymbolValue

    if not isinstance(value, SymbolValue) or value.symbol.kind not in (SymbolKind.FUNCTION, SymbolKind.CLASS):
        return None
    info = ctx.index.call(value.symbol.path, via=value.via)
    if info.unknown:
        return None
    signature = info.fallback or (info.signatures[0] if len(info.signatures) == 1 else None)
    if signature is None:
        return None
    return any(p.name == name for p in signature.params)


def _is_instance(ctx, value, class_path: str) -> bool | None:
    from apiaudit.checks.chains import InstanceValue

    if not isinstance(value, InstanceValue):
        return None
    res = ctx.index.resolve(class_path)
    if not isinstance(res, Found) or res.symbol.kind is not SymbolKind.CLASS:
        return None
    wanted = res.symbol.path
    answers: list[bool | None] = []
    for cls in value.classes:
        mro = ctx.index.mro(cls)
        # Provider classes, or dotted externals; an unresolved base is what mro_unknowns reports.
        paths = [k if isinstance(k, str) else k.path for k in mro if not isinstance(k, UnresolvedBase)]
        if wanted in paths:
            answers.append(True)
        elif ctx.index.mro_unknowns(cls):
            answers.append(None)
        else:
            answers.append(False)
    if answers and all(a is True for a in answers):
        return True
    if answers and all(a is False for a in answers):
        return False
    return None
