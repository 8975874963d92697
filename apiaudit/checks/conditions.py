"""Decide the consumer stage's symbolic guards against the provider index.

Each `Condition` is True, False or undecided (None) on the audited release. A line whose
conditions include a False one never runs there (it is skipped, whatever it holds); an
undecided one makes its findings conditional, naming the guard.
"""

from __future__ import annotations

import ast
import operator

from apiaudit.checks.contracts import argument_always_given, unpassed_argument
from apiaudit.checks.flows import stored_by_consumer
from apiaudit.checks.probes import outcome as probe_outcome
from apiaudit.checks.receivers import (
    InstanceValue,
    SymbolValue,
    describe_classes,
    model_member,
)
from apiaudit.consumer.records import UNKNOWN, Condition, ConditionKind, Liveness, Site, Use
from apiaudit.evidence import GuardFacts
from apiaudit.infra.frozen import record
from apiaudit.provider.records import Found, Missing, SymbolKind, UnresolvedBase


@record
class Verdict:
    dead: bool
    guard: str | None = None  # the undecided guards' text; None when the line certainly runs
    # (line, text) of job-stopping guards that fail on this release: the line is still
    # judged (for the classes the guard was meant to let through), and says so.
    behind: tuple[tuple[int, str], ...] = ()

    @property
    def conditional(self) -> bool:
        return self.guard is not None


RUNS = Verdict(False)
DEAD = Verdict(True)


def verdict(ctx, live: Liveness) -> Verdict:
    if not live.conditions and not live.undecided:
        return RUNS
    undecided = list(live.undecided)
    behind: list[tuple[int, str]] = []
    for condition in live.conditions:
        if condition.kind is ConditionKind.PROBE_CALL:
            # a probe of the provider: decided by the names it tests where the index reads them
            # all (`checks.probes`), else what it guards is conditional on it
            probe = probe_outcome(ctx, condition.name or "")
            if probe is None:
                continue  # no probe: a test on run-time data, both sides run
            if probe.truth is None:
                undecided.append(f"{condition.text} (a probe of the provider)")
            elif probe.truth != condition.expect:
                return DEAD
            continue
        if condition.kind is ConditionKind.ARGUMENT:
            # the side a caller's argument opens runs only if someone passes it: where the
            # provider's factory does not, only the consumer's own calls might (not proven)
            if condition.expect:
                why = unpassed_argument(ctx, condition.owner, condition.name or "")
                if why is not None:
                    undecided.append(f"{condition.text} ({why})")
            elif argument_always_given(ctx, condition.owner, condition.name or "") is not None:
                return DEAD  # the `is None` side, where only the provider calls and never passes None
            continue
        result = decide(ctx, condition)
        if condition.stops:
            if result is not None and result != condition.expect:
                behind.append((condition.line, condition.text))
                continue
            if result is None and (_model_union(ctx, condition.target) or _declared_base_of(ctx, condition)):
                continue  # the narrowed value carries the classes that pass
        if result is None and condition.kind in (ConditionKind.COMPARES, ConditionKind.FIXED_VALUE):
            continue  # not a constant of the release, not a value it fixes: run-time data, both sides run
        if result is None:
            undecided.append(condition.text)
        elif result != condition.expect:
            return DEAD
    return Verdict(False, " and ".join(dict.fromkeys(undecided)) if undecided else None, tuple(dict.fromkeys(behind)))


def dead_helpers(ctx, file) -> frozenset[str]:
    """Private helpers (`_x`) of this file that never run on the release: every call of the
    name is behind a guard decided against it, nothing else uses the name here or in another
    file (read, passed on, named in a string), and no provider base of a class defining it
    declares it (the provider could call its own hook)."""
    dead: set[str] = set()
    for entry in file.private_calls:
        if entry.name in file.private_refs or not all(verdict(ctx, live).dead for live in entry.calls):
            continue
        if any(entry.name in f.private_refs or any(c.name == entry.name for c in f.private_calls) for f in ctx.files if f.path != file.path):
            continue
        if any(_provider_declares(ctx, cls.dotted, entry.name, 0) for cls in file.classes if entry.name in cls.own_members):
            continue
        dead.add(entry.name)
    return frozenset(dead)


def runs_in_dead_helper(function: str, dead: frozenset[str]) -> bool:
    return bool(dead) and any(part in dead for part in function.split("."))


def _provider_declares(ctx, class_path: str, name: str, depth: int) -> bool:
    facts = ctx.classes.get(class_path)
    if facts is None or depth > 8:
        return True  # not known: the provider may call it
    for base in facts.provider_bases:
        res = ctx.index.resolve(base)
        if not isinstance(res, Found) or not isinstance(ctx.index.class_member(res.symbol.path, name, instance=False), Missing):
            return True
    return any(_provider_declares(ctx, b, name, depth + 1) for b in facts.consumer_bases)


def record_injections(ctx) -> None:
    """Fill `ctx.injected` from the live injections of its files (consumer class -> the
    provider classes an injection keyword mixes it into); an injected value the engine cannot
    resolve marks the hosts it may reach."""
    hosts = ctx.hosts
    for f in ctx.files:
        for target, keyword in _launch_injections(f, hosts.injection_hosts):
            # `vllm serve ... --worker-extension-cls pkg.ext.Ext`: the flag of the keyword
            if target in ctx.classes:
                ctx.injected.setdefault(target, set()).update(hosts.injection_hosts[keyword])
        for inj in f.injections:
            if verdict(ctx, inj.live).dead:
                continue
            targets = hosts.injection_hosts.get(inj.keyword, ())
            if inj.behind is not None:
                # never runs on this release: what it would install is known, not installed
                if inj.target is not None and inj.target in ctx.classes:
                    ctx.injected_behind.setdefault(inj.target, (set(), inj.behind))[0].update(targets)
                continue
            if inj.target is None or inj.target not in ctx.classes:
                # a computed value, or a name of a class outside the consumer's files
                ctx.unknown_injection = True
                ctx.unknown_injection_hosts.update(targets)
                continue
            ctx.injected.setdefault(inj.target, set()).update(targets)


def _launch_injections(file, keywords) -> list[tuple[str, str]]:
    """(class named, injection keyword) for each command-line flag of a provider launch line that
    spells an injection keyword (`--worker-extension-cls pkg.ext.Ext` for `worker_extension_cls`),
    written as `--flag value` or `--flag=value`."""
    found: list[tuple[str, str]] = []
    for line in file.launch_lines:
        args = [a.text for a in line.args]
        for i, text in enumerate(args):
            flag, eq, value = text.partition("=")
            keyword = flag.lstrip("-").replace("-", "_")
            if not text.startswith("--") or keyword not in keywords:
                continue
            if not eq:
                value = args[i + 1] if i + 1 < len(args) else ""
            if value and UNKNOWN not in value:
                found.append((value.replace(":", "."), keyword))
    return found


def guard_failures(ctx, file) -> list:
    """`guard-fails` at each job-stopping guard that fails for the model object's classes."""
    found = []
    for stop in file.guard_stops:
        v = verdict(ctx, stop.live)
        if v.dead:
            continue
        result = decide(ctx, stop.condition)
        if result is None or result == stop.condition.expect:
            continue
        value = _target_value(ctx, stop.condition.target)
        classes = describe_classes(ctx, value) if isinstance(value, InstanceValue) else "the object"
        test = stop.condition.text
        wanted = "passes" if stop.condition.expect else "fails"
        finding = ctx.finding(
            file,
            stop.site,
            "guard-fails",
            f"`{test}` never {wanted} for {classes} on this release: the code stops here (raise/return) and nothing after it runs",
            callee=stop.condition.name,
            facts=GuardFacts(test, bool(stop.condition.expect), tuple(value.classes) if isinstance(value, InstanceValue) else ()),
        )
        if v.conditional:
            from dataclasses import replace

            finding = replace(finding, conditional=True, guard=v.guard)
        found.append(finding)
    return found


def _model_union(ctx, target) -> bool:
    value = _target_value(ctx, target)
    return isinstance(value, InstanceValue) and value.registry


def _declared_base_of(ctx, condition: Condition) -> bool:
    """`isinstance(x, Sub)` on `x` declared as a base of Sub: past the guard, x is a Sub (the
    chain walk narrows it so), not an undecided object."""
    if condition.kind is not ConditionKind.IS_INSTANCE or not condition.name:
        return False
    value = _target_value(ctx, condition.target)
    if not isinstance(value, InstanceValue) or not value.declared:
        return False
    wanted = ctx.index.resolve(condition.name)
    if not isinstance(wanted, Found):
        return False
    return all(c in ctx.index.mro_paths(wanted.symbol.path) for c in value.classes)


def decide(ctx, condition: Condition) -> bool | None:
    key = ("condition", condition.kind, condition.target, condition.name, condition.imports, condition.caught, condition.operand)
    if key not in ctx.condition_memo:
        ctx.condition_memo[key] = _decide(ctx, condition)
    return ctx.condition_memo[key]


def _decide(ctx, condition: Condition) -> bool | None:
    if condition.kind is ConditionKind.IMPORT_FAILS:
        return import_fails(ctx, condition.imports, condition.caught)
    if condition.kind is ConditionKind.COMPARES:
        return _compares(ctx, condition)
    if condition.kind is ConditionKind.FIXED_VALUE:
        return _fixed_truth(ctx, condition)
    value = _target_value(ctx, condition.target)
    if value is None:
        return None
    return _test(ctx, value, condition)


def _test(ctx, value, condition: Condition, kinds: frozenset[ConditionKind] | None = None) -> bool | None:
    """The guard's test (before `expect`) on one value; None when unknown or not of `kinds`."""
    test = _TESTS.get(condition.kind)
    if test is None or (kinds is not None and condition.kind not in kinds):
        return None
    return test(ctx, value, condition.name or "")


def class_passes(ctx, class_path: str, condition: Condition) -> bool | None:
    """Does an instance of one class pass the guard's test (before `expect`)? None when unknown."""
    one = InstanceValue((class_path,), registry=True)
    return _test(ctx, one, condition, _CLASS_TESTS)


def _union(answers: list[bool | None]) -> bool | None:
    if answers and all(a is True for a in answers):
        return True
    if answers and all(a is False for a in answers):
        return False
    return None


def _narrows(ctx, value, function_path: str) -> bool | None:
    """A provider TypeIs/TypeGuard function on an instance: protocol membership of each class."""
    from apiaudit.provider.records import Membership

    if not isinstance(value, InstanceValue):
        return None
    narrowing = ctx.index.narrowing(function_path)
    if narrowing is None or narrowing.instance_target is None:
        return None
    protocol = narrowing.instance_target.path
    answers: list[bool | None] = []
    members = ctx.index.protocol_members(protocol) if ctx.model_types is not None else None
    for cls in value.classes:
        if ctx.model_types is not None and not ctx.model_types.may_implement(cls, protocol, members):
            answers.append(False)  # no base chain reaches it, no sign of its members: not loaded
            continue
        member = ctx.index.implements(cls, protocol)
        answers.append(True if member is Membership.YES else False if member is Membership.NO else None)
    return _union(answers)


_ORDER = {
    "Eq": operator.eq, "NotEq": operator.ne, "Lt": operator.lt, "LtE": operator.le, "Gt": operator.gt, "GtE": operator.ge,
}  # fmt: skip


def _compares(ctx, condition: Condition) -> bool | None:
    """A provider module constant against a literal, as Python compares them on this release."""
    root, steps = condition.target or (None, ())
    if root is None or root.kind != "symbol" or any(s.kind != "attr" for s in steps):
        return None
    text = ctx.index.constant(".".join([root.name, *(s.name or "" for s in steps)]))
    compare = _ORDER.get(condition.name or "")
    if text is None or compare is None:
        return None
    try:
        return bool(compare(ast.literal_eval(text), ast.literal_eval(condition.operand)))
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None


def _fixed_truth(ctx, condition: Condition) -> bool | None:
    """The truth of `obj.flag` where the release keeps the attribute at literals of one truth: the
    object's classes (every one it may be) have it as a plain attribute of a provider class along
    an MRO the index reads whole (no base from outside, none setting attributes by computed names,
    no consumer member of that name), every place the release binds the name, on any object or
    class, stores a literal (`self.flag = False` in `__init__`, "kept for out-of-tree runners"),
    and no consumer code binds it (`flows.stored_by_consumer`). None (run-time data) otherwise."""
    root, steps = condition.target or (None, ())
    name = steps[-1].name if steps and steps[-1].kind == "attr" else None
    if root is None or not name:
        return None
    value = _target_value(ctx, (root, steps[:-1]))
    if not isinstance(value, InstanceValue) or value.registry or value.unjudged or value.outside or name in value.own:
        return None
    near: str | None = None
    for cls in value.classes:
        member = ctx.index.class_member(cls, name, instance=True)
        if ctx.index.mro_unknowns(cls) or ctx.index.computing_class(cls) or not isinstance(member, Found) or member.symbol.kind is not SymbolKind.ATTRIBUTE:
            return None  # a base that may set it, attributes set by computed names, a property: not a value the text fixes
        near = near or member.symbol.path.rpartition(".")[0].rpartition(".")[0]
    if stored_by_consumer(ctx, name, value.classes) is not None:
        return None
    stores = ctx.index.attribute_values(name, near)
    if not stores or any(s.stored != "literal" for s in stores):
        return None
    try:
        truths = {bool(ast.literal_eval(s.value)) for s in stores}
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None
    return truths.pop() if len(truths) == 1 else None


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
    if isinstance(res, Missing) and res.doubt is None:
        return "ImportError"
    return None


def _target_value(ctx, target):
    if target is None:
        return None
    root, steps = target
    return ctx.evaluate_chain(ctx, Use(root, steps, Site(0, 0), "", ""))


def _has_attr(ctx, value, name: str) -> bool | None:
    if isinstance(value, SymbolValue):
        sym = value.symbol
        if sym.kind is SymbolKind.MODULE:
            res = ctx.index.resolve(f"{sym.path}.{name}")
        elif sym.kind is SymbolKind.CLASS:
            res = ctx.index.class_member(sym.path, name, instance=False)
        else:
            return None
        return True if isinstance(res, Found) else False if isinstance(res, Missing) and res.doubt is None else None
    if isinstance(value, InstanceValue):
        if name in value.own:
            return True
        if value.registry:
            results = [model_member(ctx, c, name) for c in value.classes]
        else:
            results = [ctx.index.class_member(c, name, instance=True) for c in value.classes]
        if value.registry:
            # The model object is one of these classes: true or false only when all agree.
            return _union([True if isinstance(r, Found) else False if isinstance(r, Missing) else None for r in results])
        if any(isinstance(r, Found) for r in results):
            return True
        if all(isinstance(r, Missing) for r in results):
            return False
    return None


def _has_param(ctx, value, name: str) -> bool | None:
    if not isinstance(value, SymbolValue) or value.symbol.kind not in (SymbolKind.FUNCTION, SymbolKind.CLASS):
        return None
    info = ctx.call(value.symbol.path, via=value.via)
    if info.unknown:
        return None
    signature = info.fallback or (info.signatures[0] if len(info.signatures) == 1 else None)
    if signature is None:
        return None
    return any(p.name == name for p in signature.params)


def _is_instance(ctx, value, class_path: str) -> bool | None:
    if not isinstance(value, InstanceValue):
        return None
    res = ctx.index.resolve(class_path)
    if not isinstance(res, Found) or res.symbol.kind is not SymbolKind.CLASS:
        return None
    wanted = res.symbol.path
    answers: list[bool | None] = []
    for cls in value.classes:
        # Provider classes, or dotted externals; an unresolved base is what mro_unknowns reports.
        paths = [k for k in ctx.index.mro_paths(cls) if not isinstance(k, UnresolvedBase)]
        if wanted in paths:
            answers.append(True)
        elif value.declared and cls in ctx.index.mro_paths(wanted):
            answers.append(None)  # declared `cls`: at run time it may be `wanted`, a subclass of it
        elif ctx.index.mro_unknowns(cls):
            answers.append(None)
        else:
            answers.append(False)
    if answers and all(a is True for a in answers):
        return True
    if answers and all(a is False for a in answers):
        return False
    return None


# What each narrowing guard tests (HAS_PARAM asks a callable, not an instance of a class).
_TESTS = {
    ConditionKind.HAS_ATTR: _has_attr,
    ConditionKind.HAS_PARAM: _has_param,
    ConditionKind.IS_INSTANCE: _is_instance,
    ConditionKind.NARROWS: _narrows,
}
_CLASS_TESTS = frozenset({ConditionKind.HAS_ATTR, ConditionKind.IS_INSTANCE, ConditionKind.NARROWS})
