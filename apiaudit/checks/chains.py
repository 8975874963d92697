"""Walk each use's chain against the provider: attributes must exist, calls must bind."""

from __future__ import annotations

import re

from dataclasses import replace

from apiaudit.checks.binding import bind, bind_any
from apiaudit.checks.conditions import class_passes
from apiaudit.checks.context import BoundCall, CheckContext
from apiaudit.checks.contracts import signature_of
from apiaudit.checks.field_subclasses import subclass_constructor
from apiaudit.checks.flows import passed_as
from apiaudit.checks.receivers import (
    NO_INSTANCE_DICT,
    BuiltinValue,
    InstanceValue,
    ItemsValue,
    NotInProvider,
    SymbolValue,
    UnknownBinding,
    describe_classes,
    model_member,
    outside_supplies,
    unknown_outside,
)
from apiaudit.consumer.records import ConditionKind, ConsumerFile, Step, Use
from apiaudit.evidence import (
    AttributeFacts,
    BindingFacts,
    FailedImportFacts,
    ModelAttributeFacts,
    PatternFacts,
    RecipeFacts,
)
from apiaudit.findings import Finding, Severity
from apiaudit.provider.records import (
    Found,
    Missing,
    ReachedVia,
    Symbol,
    SymbolKind,
    Unknown,
)


class _Stop(Exception):
    pass


IMPOSSIBLE = ("impossible", None)  # a branch no candidate class takes: nothing there runs


def check_use(ctx: CheckContext, file: ConsumerFile, use: Use) -> list[Finding]:
    if use.failed_import is not None:
        return [_failed_import_use(ctx, file, use)]
    if use.root.kind == "cls" and use.steps[:1] and use.steps[0].kind == "call":
        built = _subclass_call(ctx, file, use)
        return [_handled(f, use.type_error_handler) for f in built] if use.type_error_handler else built
    value = _root_value(ctx, use)
    if value is None:
        return []
    findings: list[Finding] = []
    steps = use.steps
    # A base of self's class whose members are not read may override any member (vllm_ascend's
    # runner over vLLM's): what the provider's member does is not proven to be what runs.
    overriding = unknown_outside(value) if isinstance(value, InstanceValue) and use.root.kind in ("self", "super") else None
    for i, step in enumerate(steps):
        rest_has_call = any(s.kind == "call" and s.check for s in steps[i:])
        try:
            value = _step(ctx, file, use, value, step, findings, rest_has_call)
        except _Stop:
            break
        if value is None or (use.root.kind == "cls" and step.kind == "call"):
            break  # `Sub.from_parent(...)` builds a Sub, not the provider base its type names
    if use.type_error_handler:
        findings = [_handled(f, use.type_error_handler) for f in findings]
    if overriding is not None and steps and steps[0].name:
        why = f"base {overriding} lies outside the provider and may define '{steps[0].name}'"
        findings = [
            replace(f, severity=Severity.WARNING, reason=why) if f.severity is Severity.ERROR and f.reason is None else f
            for f in findings
        ]
    return findings


# What a call that cannot bind raises: TypeError, before the callee's body runs.
BINDING_RULES = frozenset({"unexpected-keyword", "missing-required", "too-many-positional", "positional-only-by-keyword", "duplicate-argument"})


def _handled(finding: Finding, handler_line: int) -> Finding:
    """A binding error inside `try:` whose `except TypeError:` does not re-raise: the consumer
    probes the signature and the handler takes the other way, so the line fails only if both do."""
    if finding.rule not in BINDING_RULES or finding.severity is not Severity.ERROR:
        return finding
    return replace(
        finding,
        severity=Severity.WARNING,
        reason=f"the TypeError it raises is handled by `except TypeError:` at line {handler_line}, which does not re-raise",
    )


def evaluate_chain(ctx: CheckContext, use: Use):
    """What a chain denotes (a SymbolValue or InstanceValue), without reporting; None when unknown."""
    if use.root.kind == "cls":
        return None  # a consumer class is not its provider base (what its calls return is its own)
    value = _root_value(ctx, use)
    try:
        for step in use.steps:
            if value is None or isinstance(value, UnknownBinding):
                return None
            value = _step(ctx, None, None, value, step, [], False)
    except _Stop:
        return None
    return value if not isinstance(value, (UnknownBinding, ItemsValue, BuiltinValue)) else None


def _failed_import_use(ctx: CheckContext, file: ConsumerFile, use: Use) -> Finding:
    ref = use.failed_import
    assert ref is not None
    what = f"from {ref.module} import {ref.name}" if ref.name else f"import {ref.module}"
    name = ref.name or ref.module
    return ctx.finding(
        file,
        use.site,
        "import-failed-use",
        f"`{use.text}` uses `{name}`, but `{what}` (line {ref.line}) fails on this release and its handler leaves `{name}` unbound or None",
        callee=f"{ref.module}.{ref.name}" if ref.name else ref.module,
        facts=FailedImportFacts(ref.line, ref.module, ref.name or None),
    )


def _root_value(ctx: CheckContext, use: Use):
    root = use.root
    if root.kind == "symbol":
        res = ctx.index.resolve(root.name)
        # A missing or unknowable import root is reported once, by the import check.
        return SymbolValue(res.symbol) if isinstance(res, Found) and res.symbol.kind is not SymbolKind.EXTERNAL else None
    if root.kind in ("self", "super"):
        return _self_value(ctx, root)
    if root.kind == "fself":
        return _bound_function_self(ctx, root.name)
    if root.kind == "param":
        return _overridden_parameter(ctx, root)
    if root.kind == "fparam":
        return _replaced_parameter(ctx, root)
    if root.kind == "hparam":
        return _hook_parameter(ctx, root)
    if root.kind == "cls" and use.steps and use.steps[0].name:
        return _inherited_from(ctx, root.name, use.steps[0].name)
    return None


def _overridden_parameter(ctx: CheckContext, root) -> InstanceValue | None:
    """An unannotated parameter of a consumer method that overrides a provider method: the
    provider passes it what the overridden method's annotation names, a claim as strong as any
    provider annotation (a subclass may be passed). The first provider base of the consumer class
    whose MRO defines the method decides; none, or no class annotated there: unknown."""
    for cls in ctx.provider_classes_of(root.name):
        defines, typ = ctx.index.overridden_parameter(cls, root.method, root.param, root.position)
        if defines:
            return InstanceValue((typ.path,), declared="provider") if typ is not None else None
    return None


def _replaced_parameter(ctx: CheckContext, root) -> InstanceValue | None:
    """An unannotated parameter of a consumer function put over a provider method (`Cls.m = f`,
    `types.MethodType`, a patching helper): the provider's callers pass it what the replaced
    method's annotation names there, a claim like an override's. Every replacement of the function
    must name one and the same class; one the checks cannot read (an unknown object, a method the
    class lacks, a function stored unbound): unknown."""
    key = (root.name, root.param, root.position)
    if key in ctx.replaced_params:
        return ctx.replaced_params[key]  # type: ignore[return-value]
    named: set[str | None] = set()
    for replacement in (r for f in ctx.files for r in f.replacements if r.function == root.name):
        if replacement.target is not None:
            # put on a class: bound when called on an instance (as `checks.contracts` reads it)
            found = ctx.index.class_named(replacement.target)
            classes: tuple[str, ...] = (found.path,) if found is not None else ()
        elif not replacement.bound:
            named.add(None)  # stored on an object unbound: its first parameter takes the first argument
            break
        else:
            value = _bound_function_self(ctx, root.name)
            classes = value.classes if isinstance(value, InstanceValue) and not value.unjudged else ()
        if not classes:
            named.add(None)
            break
        for cls in classes:
            defines, typ = ctx.index.overridden_parameter(cls, replacement.attribute, root.param, root.position)
            named.add(typ.path if defines and typ is not None else None)
    one = named.pop() if len(named) == 1 else None
    value = InstanceValue((one,), declared="provider") if one is not None else None
    ctx.replaced_params[key] = value
    return value


def _hook_parameter(ctx: CheckContext, root) -> InstanceValue | None:
    """A parameter of a hook implementation: what the hook's specification on the release
    annotates it with (a claim, as a provider annotation is); a hook the release does not specify,
    or a parameter it does not annotate with one provider class: unknown."""
    for rule in ctx.hosts.entry_points:
        if rule.hookspecs and rule.hook_prefix and root.name.startswith(rule.hook_prefix):
            typ = ctx.index.parameter_class(f"{rule.hookspecs}.{root.name}", root.param or "")
            if typ is not None:
                return InstanceValue((typ.path,), declared="provider")
    return None


def _inherited_from(ctx: CheckContext, dotted: str, name: str) -> SymbolValue | None:
    """`Sub.name` on a consumer class that does not define `name`: looked up on its one provider
    class, where no consumer class on the way and no base from neither side may define it. The
    member is then the provider's (a classmethod binds `cls` to Sub, the parameters are the same)."""
    if name.startswith("__") or name in ctx.own_members(dotted) or ctx.outside_bases(dotted):
        return None  # dunders come from `type` as well; the consumer's own members are its own
    # The consumer puts its own function there (`Sub.m = f`, setattr) on this class, a class it
    # inherits from, or an object it cannot be told apart from: the member is not the provider's.
    unrelated = set(ctx.classes) - _consumer_lineage(ctx, dotted, frozenset())
    if any(r.attribute == name and r.target not in unrelated for f in ctx.files for r in f.replacements):
        return None
    facts = ctx.classes.get(dotted)
    if facts is None or facts.unread_bases:
        return None
    bases = _provider_bases(ctx, dotted, frozenset())
    if len(bases) != 1:
        return None  # several provider bases: which one's member comes first is not decided here
    res = ctx.index.resolve(bases[0])
    if not isinstance(res, Found) or res.symbol.kind is not SymbolKind.CLASS:
        return None
    member = ctx.index.class_member(res.symbol.path, name, instance=False)
    # A member the provider class lacks may be set on the consumer class at run time: no finding.
    return SymbolValue(res.symbol) if isinstance(member, Found) else None


def _consumer_lineage(ctx: CheckContext, dotted: str, seen: frozenset[str]) -> frozenset[str]:
    """A consumer class and its consumer bases, at any depth."""
    facts = ctx.classes.get(dotted)
    if facts is None or dotted in seen:
        return frozenset()
    out = {dotted}
    for base in facts.consumer_bases:
        out |= _consumer_lineage(ctx, base, seen | {dotted})
    return frozenset(out)


def _provider_bases(ctx: CheckContext, dotted: str, seen: frozenset[str]) -> tuple[str, ...]:
    """The provider bases of a consumer class and of its consumer bases (not injection hosts:
    those make instances, not the class object, the provider's)."""
    facts = ctx.classes.get(dotted)
    if facts is None or dotted in seen:
        return ()
    out = list(facts.provider_bases)
    for base in facts.consumer_bases:
        out.extend(_provider_bases(ctx, base, seen | {dotted}))
    return tuple(dict.fromkeys(out))


def _self_value(ctx: CheckContext, root) -> InstanceValue | None:
    """`self` (or `super()`) in a method of a consumer class: an instance of the class or of any
    consumer class deriving from it (a mixin's self is the class that mixes it in), so members
    those classes define, and their bases from neither side, count."""
    start = root.name
    if root.kind == "super" and root.after is not None and root.after in ctx.classes:
        start = root.after  # super(Base, self) with a consumer Base: as super() inside Base
    classes = ctx.provider_classes_of(start)
    outside = ctx.outside_bases(start)
    if root.kind == "super":
        if root.after is not None and root.after not in ctx.classes:
            return _super_after(ctx, classes, root.after, outside)
        return InstanceValue(classes, ctx.super_members(start), is_super=True, outside=outside) if classes else None
    if not classes:
        return None  # no provider base of its own: what its subclasses mix in does not make self theirs
    own = set(ctx.own_members(start))
    for sub in ctx.subclasses_of(start):
        own |= ctx.own_members(sub)
        classes += tuple(c for c in ctx.provider_classes_of(sub) if c not in classes)
        outside += tuple(b for b in ctx.outside_bases(sub) if b not in outside)
    return InstanceValue(classes, frozenset(own), outside=outside)


def _super_after(ctx: CheckContext, classes: tuple[str, ...], after: str, outside: tuple[str, ...]) -> InstanceValue | None:
    """`super(ProviderCls, self)`: the classes after ProviderCls in the MRO of self's provider
    class; unknown where the next one is not a provider class (its members are not read)."""
    from apiaudit.provider.index import TRANSPARENT_BASES

    found = ctx.index.resolve(after)
    path = found.symbol.path if isinstance(found, Found) else after
    for cls in classes:
        mro = ctx.index.mro_paths(cls)
        if path not in mro:
            continue
        tail = [k for k in mro[mro.index(path) + 1 :] if not (isinstance(k, str) and k in TRANSPARENT_BASES)]
        ours = [k for k in tail if isinstance(k, str) and _is_provider_class(ctx, k)]
        if not ours or ours[0] != tail[0]:
            return None
        rest = tuple(str(getattr(k, "text", k)) for k in tail if k not in ours)
        return InstanceValue(tuple(ours), is_super=True, outside=outside + rest)
    return None


def _is_provider_class(ctx: CheckContext, path: str) -> bool:
    found = ctx.index.resolve(path)
    return isinstance(found, Found) and found.symbol.kind is SymbolKind.CLASS


def _bound_function_self(ctx: CheckContext, function: str):
    bindings = ctx.bound_functions.get(function)
    if not bindings:
        return None  # a plain function whose first parameter happens to be called self
    values: list[InstanceValue] = []
    unjudged = 0
    for b in bindings:
        value = None
        if b.target is not None:
            root, steps = b.target
            value = _root_value(ctx, _pseudo_use(root, steps))
            try:
                for step in steps:
                    if value is None or isinstance(value, UnknownBinding):
                        break
                    value = _step(ctx, None, None, value, step, [], False)
                    if value is IMPOSSIBLE:
                        break
            except _Stop:
                value = None
        if value is IMPOSSIBLE:
            continue  # bound on a branch no candidate class takes
        if isinstance(value, SymbolValue) and value.symbol.kind is SymbolKind.CLASS:
            # Put on the class itself (`Cls.m = f`, a patching helper): a method of its instances,
            # and of its subclasses' instances, which may define more.
            value = InstanceValue((value.symbol.path,), declared="installed")
        if not isinstance(value, InstanceValue):
            unjudged += 1
            continue
        values.append(replace(value, own=value.own | frozenset(b.own)))
    if not values:
        return None if not unjudged else UnknownBinding(function)
    registry = any(v.registry for v in values)
    if unjudged and not registry:
        return UnknownBinding(function)
    # Every way the object can be: a binding the engine cannot follow counts as unjudged.
    classes = tuple(dict.fromkeys(c for v in values for c in v.classes))
    origins: dict[str, tuple[str, ...]] = {}
    for v in values:
        for c, archs in v.origins:
            origins[c] = tuple(dict.fromkeys(origins.get(c, ()) + archs))
    own = frozenset.intersection(*(v.own for v in values))
    unknown = tuple(dict.fromkeys(u for v in values for u in v.unjudged)) + (("<unfollowed binding>",) * min(unjudged, 1))
    return InstanceValue(classes, own, registry=registry, origins=tuple(origins.items()), unjudged=unknown)


def _pseudo_use(root, steps) -> Use:
    from apiaudit.consumer.records import Site

    return Use(root, steps, Site(0, 0), "", "")


def _cannot_judge(ctx, file, use, callee, reason) -> Finding:
    return ctx.finding(
        file, use.site, "cannot-judge", f"cannot judge `{use.text}`: {reason}", callee=callee, severity=Severity.INFO
    )


def _step(ctx: CheckContext, file, use, value, step: Step, findings: list, rest_has_call: bool):
    report = file is not None and step.check
    if value is IMPOSSIBLE:
        raise _Stop
    if isinstance(value, UnknownBinding):
        if report and step.kind == "attr":
            findings.append(
                _cannot_judge(
                    ctx, file, use, None, f"`{value.function.rsplit('.', 1)[-1]}` is bound with types.MethodType to an object whose type cannot be known"
                )
            )
        raise _Stop
    if step.via is not None and _overridden_below(ctx, step.via):
        raise _Stop  # `self.prepare()` may run a subclass's override: what it returns is not known
    if isinstance(value, (ItemsValue, BuiltinValue)):
        return _builtin_step(ctx, file, use, value, step, findings, report)
    if step.kind == "attr":
        return _attr(ctx, file, use, value, step, findings, report, rest_has_call)
    if step.kind == "call":
        return _call(ctx, file, use, value, step, findings, report)
    if step.kind == "narrow":
        return _narrow(ctx, value, step)
    if step.kind == "instance":
        # The consumer's annotation (or isinstance test): the object's class or a subclass of it.
        if isinstance(value, SymbolValue) and value.symbol.kind is SymbolKind.CLASS:
            return InstanceValue((value.symbol.path,), declared="consumer")
        return None
    if step.kind == "dynamic":
        if report:
            findings.append(_cannot_judge(ctx, file, use, getattr(getattr(value, "symbol", None), "path", None), "the attribute name is computed at run time"))
        raise _Stop
    return None  # subscripts and anything else: the result's type is not tracked


def _builtin_step(ctx, file, use, value: "ItemsValue | BuiltinValue", step: Step, findings: list, report: bool):
    """A step on what a provider annotation says is a builtin object: an item of a fixed-length
    tuple taken by its index (`first, *rest = f()` unpacked, or `f()[0]`), and an attribute set
    on a builtin instance, which has no `__dict__`: `AttributeError` on the line. Anything else
    on them is not tracked."""
    if isinstance(value, ItemsValue) and step.kind == "subscript" and step.name is not None and step.name.isdigit():
        if step.arity is not None and step.arity != len(value.items):
            raise _Stop  # unpacked into another number of targets: ValueError there, nothing after runs
        index = int(step.name)
        item = value.items[index] if index < len(value.items) else ""
        return BuiltinValue(item, step.via or "") if item else None
    if isinstance(value, BuiltinValue) and step.kind == "store" and step.name and value.name in NO_INSTANCE_DICT and report:
        through = f", and {'.'.join(value.via.split('.')[-2:])} returns it as it is" if value.via else ""
        findings.append(ctx.finding(
            file, use.site, "attribute-missing",
            f"'{value.name}' object has no attribute '{step.name}' (the provider annotates the object as {value.name}{through}; "
            f"{value.name} instances take no new attributes)",
            callee=f"builtins.{value.name}", param=step.name,
        ))  # fmt: skip
    raise _Stop


def _overridden_below(ctx, method: str) -> bool:
    """Whether a consumer class deriving from the method's class may define the method again
    (`pkg.mod.Class.name`): itself or a consumer base of its own, or a base from neither side."""
    owner, _, name = method.rpartition(".")
    skip = frozenset({owner})
    return any(name in ctx.own_members(sub, skip) or ctx.outside_bases(sub, skip) for sub in ctx.subclasses_of(owner))


def _narrow(ctx, value, step: Step):
    """Keep the candidate classes that pass the guard on this side; all of them when none does
    (the code after a failing guard is still checked, for the classes it was written for)."""
    if not isinstance(value, InstanceValue) or step.guard is None or len(value.classes) < 1:
        return value
    guard = step.guard
    refined = _refined_by_isinstance(ctx, value, guard)
    if refined is not None:
        return refined
    answers = [(c, class_passes(ctx, c, guard)) for c in value.classes]
    keep = [c for c, passes in answers if passes in (guard.expect, None)]
    if guard.kind is ConditionKind.HAS_ATTR and guard.expect and guard.name:
        # `hasattr(x, "a")` holds: the classes whose code has `a`, where there are any (one whose
        # provider code lacks it can have it only from a base outside the provider, which the
        # test is there to tell apart); else the undecided ones, which the test says have it.
        passing = [c for c, passes in answers if passes is True]
        if passing:
            keep = passing
        elif keep:
            return replace(value.only(keep), own=value.own | {guard.name})
    if not keep:
        # Past a job-stopping guard: still checked for these classes. On a branch: never taken.
        return value if step.guard.stops else IMPOSSIBLE
    if len(keep) == len(value.classes):
        return value
    return value.only(keep)


def slot_filler(ctx, value: InstanceValue, name: str) -> str | None:
    """A consumer class that defines `name` and may be the model object: one deriving from a
    provider class (a model class, or an interface like SupportsMultiModal) in the MRO of a class
    the slot's union holds: the consumer's own models, which it registers itself. None: none."""
    owners = [d for d in sorted(ctx.classes) if name in ctx.own_members(d)]
    if not owners:
        return None
    shared = ctx.slot_bases.get(value.classes)
    if shared is None:
        shared = frozenset(p for c in value.classes for p in ctx.index.mro_paths(c) if isinstance(p, str))
        ctx.slot_bases[value.classes] = shared
    for dotted in owners:
        if any(base in shared for base in ctx.provider_classes_of(dotted)):
            return dotted
    return None


def _refined_by_isinstance(ctx, value: InstanceValue, guard):
    """`isinstance(x, Sub)` holds for `x` declared as a base of Sub: from here x is a Sub (still a
    declared class: a subclass of Sub may be what runs)."""
    if not value.declared or guard.kind is not ConditionKind.IS_INSTANCE or not guard.expect or not guard.name:
        return None
    res = ctx.index.resolve(guard.name)
    if not isinstance(res, Found) or res.symbol.kind is not SymbolKind.CLASS:
        return None
    wanted = res.symbol.path
    if wanted in value.classes or not all(c in ctx.index.mro_paths(wanted) for c in value.classes):
        return None
    return replace(value, classes=(wanted,), origins=())


def _model_attr(ctx, file, use, value: InstanceValue, step, findings, report, rest_has_call):
    """An attribute on a model object: checked on each class it can be."""
    name = step.name
    results = [(c, model_member(ctx, c, name)) for c in value.classes]
    found = [(c, r) for c, r in results if isinstance(r, Found)]
    # Missing for sure, or missing in provider code with a base outside the provider that may supply it.
    missing = [(c, r if isinstance(r, Missing) else r.missing) for c, r in results if isinstance(r, (Missing, NotInProvider))]
    outside = [r.base for _, r in results if isinstance(r, NotInProvider)]
    unknown = [c for c, r in results if isinstance(r, Unknown)] + list(value.unjudged)
    if missing and report:
        failing = [c for c, _ in missing]
        archs = value.architectures(failing)
        first: Missing = missing[0][1]
        external = outside[0] if outside else None
        facts = ModelAttributeFacts(name, failing[0], external_base=external, classes=tuple(failing), architectures=tuple(archs))
        if not found:
            more = f"; {len(unknown)} more cannot be judged" if unknown else ""
            where = " in the provider's code" if external else ""
            message = (
                f"{describe_classes(ctx, value, failing)} object has no attribute '{name}'{where}"
                if len(failing) == 1 and not unknown
                else f"no class the object can be has attribute '{name}'{where}: {describe_classes(ctx, value, failing)}{more}"
            )
            # An error is a proof: where a base outside the provider may supply the member, the
            # provider's code alone cannot prove it missing (a recipe that says it is gone can);
            # nor where the consumer's own model classes, which may fill the slot, define it.
            filler = slot_filler(ctx, value, name)
            reason = (
                f"base {external} lies outside the provider and may define '{name}'" if external
                else f"the model object may be the consumer's own {filler.rpartition('.')[2]}, which defines '{name}'" if filler
                else None
            )  # fmt: skip
            findings.append(
                ctx.finding(file, use.site, "attribute-missing", message, callee=f"{failing[0]}.{name}",
                            provider_location=first.owner.location if first.owner else None, facts=facts,
                            severity=Severity.WARNING if reason else None, reason=reason)
            )
        else:
            shown_archs = ", ".join(archs[:8]) + (f", … {len(archs) - 8} more" if len(archs) > 8 else "")
            findings.append(
                ctx.finding(
                    file, use.site, "model-attribute-missing",
                    f"'{name}' is missing on {len(failing)} of {len(results)} classes the model object can be: "
                    f"{describe_classes(ctx, value, failing)}" + (f"; {len(archs)} architecture{'s' if len(archs) != 1 else ''} would fail ({shown_archs})" if archs else ""),
                    callee=f"{failing[0]}.{name}", facts=facts,
                    reason=f"base {external} lies outside the provider and may define '{name}'" if external else None,
                )
            )
    if not found:
        if not missing and unknown and report and rest_has_call:
            findings.append(_cannot_judge(ctx, file, use, f"{value.classes[0]}.{name}", f"no candidate class can be read for '{name}'"))
        raise _Stop
    # Go on with the classes that have it.
    members = [(c, r.symbol) for c, r in found]
    if any(sym.kind is not SymbolKind.ATTRIBUTE for _, sym in members):
        method = _member_value(ctx, members[0][1], "instance", members[0][0])
        if not isinstance(method, SymbolValue):
            return method
        filler = slot_filler(ctx, value, name)
        # The other classes' definitions (one class each, in union order): a call the first's
        # does not take may be taken by one of them.
        others: dict[str, str] = {members[0][1].path: members[0][0]}
        for cls, sym in members[1:]:
            if sym.kind is not SymbolKind.ATTRIBUTE:
                others.setdefault(sym.path, cls)
        alternatives = tuple((cls, path) for path, cls in others.items())[1:]
        return replace(method, filled_by=filler, alternatives=alternatives) if filler or alternatives else method
    classes: dict[str, tuple[str, ...]] = {}
    unjudged: list[str] = list(unknown)
    source = dict(value.origins)
    for cls, sym in members:
        derived = _attribute_classes(ctx, cls, sym.name)
        if derived is None:
            unjudged.append(cls)
            continue
        picked, registry_archs = derived
        for c in picked:
            archs = registry_archs.get(c) or source.get(cls, ())
            classes[c] = tuple(dict.fromkeys(classes.get(c, ()) + archs))
    if not classes:
        return None
    return InstanceValue(tuple(classes), registry=True, origins=tuple(classes.items()), unjudged=tuple(dict.fromkeys(unjudged)))


def _attribute_classes(ctx, owner: str, name: str):
    """(classes, {class: architectures}) an instance attribute holds: a slot or factory rule's
    registry classes, or the one class provider code assigns; None when unknown."""
    types = ctx.model_types
    if types is not None:
        found = types.attribute_classes(owner, name, ctx.model)
        if found is not None and found.classes:
            return found.classes, dict(types.origins(found))
    typ = ctx.index.attribute_type(owner, name)
    return ((typ.path,), {}) if typ else None


def _attr(ctx, file, use, value, step, findings, report, rest_has_call):
    name = step.name
    if isinstance(value, SymbolValue):
        sym = value.symbol
        if sym.kind is SymbolKind.MODULE:
            res = ctx.index.resolve(f"{sym.path}.{name}")
            via: ReachedVia = "module"
        elif sym.kind is SymbolKind.CLASS:
            res = ctx.index.class_member(sym.path, name, instance=False)
            via = "class"
        elif sym.kind is SymbolKind.ATTRIBUTE:
            typ = ctx.index.attribute_type(value.owner, sym.name) if value.owner else ctx.index.module_attribute_type(sym.path)
            return _attr(ctx, file, use, InstanceValue((typ.path,), declared="provider"), step, findings, report, rest_has_call) if typ else None
        else:
            return None
        return _resolved(ctx, file, use, res, via, sym.path, name, findings, report, rest_has_call, owner=sym.path if via == "class" else None)
    if isinstance(value, InstanceValue):
        if name in value.own:
            return None  # the consumer's own member
        if value.registry:
            return _model_attr(ctx, file, use, value, step, findings, report, rest_has_call)
        if name == "__init__":
            # super().__init__(...): the constructor of the (first) provider class, self bound.
            owner = value.classes[0]
            return SymbolValue(Symbol(f"{owner}.__init__", SymbolKind.FUNCTION), via="instance", owner=owner)
        results = [(c, ctx.index.class_member(c, name, instance=True)) for c in value.classes]
        for cls, res in results:
            if isinstance(res, Found):
                member = _member_value(ctx, res.symbol, "instance", cls)
                if isinstance(member, SymbolValue) and len(value.classes) > 1:
                    # One of several classes the object can be: a call the first's method does
                    # not take may be taken by another's (one entry per other definition).
                    others = {r.symbol.path: c for c, r in results if isinstance(r, Found) and r.symbol.kind is not SymbolKind.ATTRIBUTE}
                    others.pop(res.symbol.path, None)
                    if others:
                        member = replace(member, alternatives=tuple((c, p) for p, c in others.items()), assigned=True)
                return member
        unknown = [res for _, res in results if isinstance(res, Unknown)]
        if unknown:
            if report and rest_has_call:
                findings.append(_cannot_judge(ctx, file, use, f"{value.classes[0]}.{name}", unknown[0].reason))
            raise _Stop
        supplied, base = outside_supplies(value, name)
        if supplied:
            return None  # a base from neither side whose members are known has it
        if not value.is_super and value.own & _EVERY_NAME:
            return None  # the consumer's class answers every name normal lookup misses itself
        if report:
            owners = " or ".join(value.classes)
            missing: Missing = results[0][1]
            # An error is a proof: a declared type may be refined at run time by a subclass that
            # has it, the consumer may add the attribute itself, the provider may set it on such
            # objects from another class's code, a base of the consumer's class from neither side
            # may supply it, and a mixin's self gets it from what the mixin is combined with.
            reason = (
                (_refined_by_subclass(ctx, value, name, use.text) if value.declared else None)
                or added_by_consumer(ctx, value, name, _holder(use, step))
                or set_by_provider(ctx, value, name)
                or (_mixed_in(ctx, use.root.name, value) if use.root.kind in ("self", "super") else None)
            )
            if base is not None:
                reason = f"base {base} lies outside the provider and may define '{name}'"
            findings.append(
                ctx.finding(
                    file,
                    use.site,
                    "attribute-missing",
                    f"'{_short(owners)}' object has no attribute '{name}'",
                    callee=f"{value.classes[0]}.{name}",
                    provider_location=missing.owner.location if missing.owner else None,
                    facts=AttributeFacts(name, value.classes[0]),
                    severity=Severity.WARNING if reason else None,
                    reason=reason,
                )
            )
        raise _Stop
    return None


# A class defining one of these answers every attribute name (Python calls `__getattr__` for a
# name normal lookup misses; `__getattribute__` for every name).
_EVERY_NAME = frozenset({"__getattr__", "__getattribute__"})


def set_by_provider(ctx, value: InstanceValue, name: str) -> str | None:
    """Where the provider's own code sets `name` on an object that is one of the receiver's
    classes (`node.origin = self.origin` in another class's method): an object annotated as a
    class related to one of them, or an unannotated one whose every other attribute the function
    reads is a member of one of them (`node.must_be_first`). None: nowhere."""
    for store in ctx.index.attribute_stores([name])[name]:
        for cls in value.classes:
            if store.annotated is not None:
                tied = store.annotated in ctx.index.mro_paths(cls) or cls in ctx.index.mro_paths(store.annotated)
            else:
                tied = bool(store.uses) and all(isinstance(ctx.index.class_member(cls, used, instance=True), Found) for used in store.uses)
            if tied:
                return f"the provider sets '{name}' on such objects itself ({store.location})"
    return None


def _mixed_in(ctx, dotted: str, value: InstanceValue) -> str | None:
    """Why `self` of a consumer class may have a member its provider classes lack: one of them is
    a mixin by its own code (it reads on `self` a member nothing along its MRO gives it), so the
    classes it is combined with supply members, and the consumer builds neither this class nor a
    class deriving from it, so what it is combined with is not known. None otherwise."""
    if any(_built_by_consumer(ctx, c) for c in (dotted, *ctx.subclasses_of(dotted))):
        return None
    for cls in value.classes:
        found = ctx.index.mixin_reads(cls)
        if found is not None:
            owner, read = found
            return f"{owner.rpartition('.')[2]} is a mixin (it reads self.{read}, which no class of its MRO gives it): the classes it is combined with supply members"
    return None


def added_by_consumer(ctx, value: InstanceValue, name: str, holder: str | None) -> str | None:
    """Where the consumer adds `name` to an object that may be this one (`obj.name = v`,
    `setattr(obj, "name", v)`): one of a related class, or one of a type the engine cannot tell
    reached through an attribute of the same name as this receiver (`session.config._x = v`,
    read as `item.config._x`), or, where this receiver's class is only declared, one held by a
    plain name of a type the engine cannot tell (`meta, *rest = super().prepare()`, `meta._x = v`).
    None: nowhere."""
    untied = None
    for path, store in ctx.stores.get(name, ()):
        if store.target is not None:
            same = _may_be_same(ctx, store.target, value.classes)
        else:
            same = store.holder is not None and store.holder == holder
        if same:
            if store.copied_by is not None:
                return f"the consumer's patch class ({path}:{store.site.line}) copies '{name}' onto such an object"
            return f"the consumer sets '{name}' on such an object itself ({path}:{store.site.line})"
        if store.target is None and store.holder is None and untied is None:
            untied = f"{path}:{store.site.line}"
    if untied is not None and value.declared:
        # The receiver's class is a claim (an annotation) and the consumer adds the name to an
        # object of a type the engine cannot tell: nothing shows that object is not this one.
        return f"the consumer sets '{name}' on an object of a type it cannot tell ({untied}), which may be this one"
    return None


def set_by_consumer(ctx, owner_path: str, name: str) -> str | None:
    """Where the consumer sets `name` on the provider module or class `owner_path` itself
    (`pkg.state._GROUP = None`, `Config.extra = 1`): reading it then is the consumer's own
    member, not proven missing. None: nowhere."""
    for path, store in ctx.stores.get(name, ()):
        if store.target is None:
            continue
        held = evaluate_chain(ctx, _pseudo_use(*store.target))
        if isinstance(held, SymbolValue) and held.symbol.path == owner_path:
            if store.copied_by is not None:
                return f"the consumer's patch class ({path}:{store.site.line}) copies '{name}' onto {owner_path}"
            return f"the consumer sets '{name}' on {owner_path} itself ({path}:{store.site.line})"
    return None


def _holder(use, step: Step) -> str | None:
    """The attribute the receiver of `step` was read as (`a.config.x`: "config")."""
    steps = use.steps
    at = next((i for i, s in enumerate(steps) if s is step), 0)
    before = steps[at - 1] if at > 0 else None
    return before.name if before is not None and before.kind == "attr" else None


def _may_be_same(ctx, target, classes: tuple[str, ...]) -> bool:
    root, steps = target
    held = evaluate_chain(ctx, _pseudo_use(root, steps))
    if isinstance(held, SymbolValue) and held.symbol.kind is SymbolKind.CLASS:
        held = InstanceValue((held.symbol.path,))  # a class attribute: every instance has it
    if not isinstance(held, InstanceValue):
        return False  # a module, a function, or what the engine cannot follow
    return any(c in ctx.index.mro_paths(h) or h in ctx.index.mro_paths(c) for c in classes for h in held.classes)


def _refined_by_subclass(ctx, value: InstanceValue, name: str, text: str = "") -> str | None:
    """Why an attribute the declared class lacks may still be there: the provider classes derived
    from it that have it, or a consumer class mixed into it that defines it, or (the consumer's
    own annotation) a consumer class of no provider base that defines it and whose objects the
    consumer provably puts where it declares the provider's class. None: none does, and the
    missing attribute is proven for every class the object can be."""
    declared = value.classes[0]
    shown = declared.rpartition(".")[2]
    said = {"consumer": f"annotated {shown}", "installed": f"installed on {shown}"}.get(value.declared or "", f"declared {shown} (a provider annotation)")
    subclasses = ctx.index.subclasses_defining(declared, name)
    if subclasses:
        return f"{said}; a subclass may define '{name}' ({', '.join(c.rpartition('.')[2] for c in subclasses)})"
    holder = _receiver_name(text, name)
    for dotted in sorted(ctx.classes):
        if name not in ctx.own_members(dotted):
            continue
        bases = ctx.provider_classes_of(dotted)
        if any(declared in ctx.index.mro_paths(base) for base in bases):
            return f"{said}; the consumer's {dotted.rpartition('.')[2]} derives from it and defines '{name}'"
        if bases or value.declared != "consumer" or holder is None:
            continue
        # A class that merely defines a member of the same name is no evidence (a dataclass of the
        # consumer's own with a request's field names): its objects must be seen going there.
        passed = passed_as(ctx, dotted, holder, declared)
        if passed is not None:
            return f"{said}; the consumer's own {dotted.rpartition('.')[2]}, which defines '{name}', is put there ({passed})"
    return None


def _receiver_name(text: str, name: str) -> str | None:
    """The name the receiver of `.name` is held by in the use's text (`request.num_tokens`:
    "request"; `self.client.x`: "client"), if the text says it."""
    found = re.search(rf"(\w+)\s*\.\s*{re.escape(name)}\b", text)
    return found.group(1) if found and found.group(1) not in ("self", "cls") else None


def _resolved(ctx, file, use, res, via, owner_path, name, findings, report, rest_has_call, owner=None):
    if isinstance(res, Found):
        return _member_value(ctx, res.symbol, via, owner)
    if isinstance(res, Unknown):
        if report and rest_has_call:
            findings.append(_cannot_judge(ctx, file, use, res.path, res.reason))
        raise _Stop
    if report:
        moved_to = ctx.index.moved_to(res)
        moved = ", ".join(moved_to)
        message = f"'{owner_path}' has no attribute '{name}'" + (f"; it is defined in {moved}" if moved else "")
        # Not proven absent: a module __getattr__ not read whole, or the consumer sets it there itself.
        doubt = res.doubt or set_by_consumer(ctx, owner_path, name)
        findings.append(
            ctx.finding(
                file,
                use.site,
                "attribute-missing",
                message,
                callee=f"{owner_path}.{name}",
                provider_location=res.owner.location if res.owner else None,
                advice=f"Use `{moved_to[0]}` instead." if moved_to else None,
                facts=AttributeFacts(name, owner_path, moved_to=moved_to[0] if moved_to else None),
                severity=Severity.WARNING if doubt else None,
                reason=doubt,
            )
        )
    raise _Stop


def _member_value(ctx, symbol: Symbol, via: ReachedVia, owner: str | None):
    if symbol.kind is SymbolKind.EXTERNAL:
        return None
    if symbol.kind is SymbolKind.ATTRIBUTE and owner is not None and ctx.model_types is not None:
        # A slot the rules name (the runner's model) or a factory call: the registry's classes.
        found = ctx.model_types.attribute_classes(owner, symbol.name, ctx.model)
        from apiaudit.provider.registry import CandidateSource

        if found is not None and found.classes and found.source is not CandidateSource.INFERRED:
            return InstanceValue(found.classes, registry=True, origins=ctx.model_types.origins(found))
    if symbol.kind is SymbolKind.ATTRIBUTE and owner is not None:
        typ = ctx.index.attribute_type(owner, symbol.name)
        if typ is None:
            return SymbolValue(symbol, via, owner)
        # The attribute's annotation (or what its assignment is annotated to return): a claim,
        # and one of several where the provider's own code builds other classes there too.
        built = ctx.index.assigned_classes(owner, symbol.name)
        return InstanceValue(tuple(dict.fromkeys((typ.path, *built))), declared="provider")
    return SymbolValue(symbol, via, owner)


def _call(ctx, file, use, value, step, findings, report):
    if isinstance(value, InstanceValue):
        return None  # calling an instance (__call__): not tracked
    if not isinstance(value, SymbolValue):
        return None
    sym = value.symbol
    if sym.kind is SymbolKind.MODULE:
        return None
    if sym.path.endswith(".__init__") and value.via == "instance" and value.owner:
        # super().__init__(...): the class's constructor signature, self bound; named by the
        # class that defines __init__ (or the class itself when __init__ is synthesized).
        info = ctx.call(value.owner, via="module")
        defined = ctx.index.class_member(value.owner, "__init__", instance=True)
        init_path = defined.symbol.path if isinstance(defined, Found) and defined.symbol.kind is SymbolKind.FUNCTION else f"{info.callee.path}.__init__"
        info = replace(info, callee=replace(info.callee, path=init_path, kind=SymbolKind.FUNCTION))
        # The object being built: the consumer class `super()` is in (its MRO decides where
        # the provider's own `super().__init__(**kwargs)` goes on), else the provider class.
        instance = _consumer_instance_bases(ctx, use.root.name) if use is not None and use.root.kind == "super" else (value.owner,)
    else:
        info = ctx.call(sym.path, via=value.via)
        instance = (info.callee.path,) if info.callee.kind is SymbolKind.CLASS else None
    if step.call is None or not report:
        return _returned(ctx, info)
    ctx.calls_checked += 1
    findings.extend(_symbol_patterns(ctx, file, use, step.call, (sym.path, info.callee.path), info))
    if info.unknown:
        findings.append(_cannot_judge(ctx, file, use, info.callee.path, info.unknown))
        return _returned(ctx, info)
    callee_name = info.callee.name
    binding = bind_any(info.signatures, info.fallback, step.call, callee_name)
    shown = info.fallback or info.signatures[0]
    signature = _shown_signature(info)
    splatted = {a.name for a in step.call.keywords if a.via_splat}
    for problem in binding.problems:
        facts = BindingFacts(
            arg_line=problem.arg_line or None,
            via_splat=problem.param in splatted,
            annotation=_annotation(shown, problem.param),
        )
        if problem.rule == "too-many-positional":
            # The positional slots, then the keyword-only parameters in order: a surplus
            # positional argument most often fills a parameter that became keyword-only.
            positional = [p.name for p in shown.params if p.kind.value in ("positional-only", "positional-or-keyword")]
            keyword_only = [p.name for p in shown.params if p.kind.value == "keyword-only"]
            facts = replace(
                facts,
                positional_names=tuple(positional + keyword_only),
                max_positional=len(positional),
                positional_given=step.call.positional,
            )
        # The model object may be the consumer's own class, whose method is not this one, or
        # another class it can be, whose method takes the call.
        filled = value.filled_by if problem.severity is Severity.ERROR else None
        taken = _taken_elsewhere(ctx, value, step.call) if problem.severity is Severity.ERROR and not filled else None
        # (`super()` is no receiver declared as a base: its method is the next class's along the
        # consumer class's own MRO, whatever other classes the consumer builds)
        on_super = use is not None and use.root.kind == "super"
        weigh = problem.severity is Severity.ERROR and not (filled or taken or on_super)
        built = _built_subclasses_take(ctx, value, step.call, callee_name) if weigh else None
        reason = (
            f"the model object may be the consumer's own {filled.rpartition('.')[2]}, which defines '{callee_name}'" if filled
            else f"the provider also builds a {taken.rpartition('.')[2]} there, whose {callee_name} takes the call" if taken and value.assigned
            else f"the model object may be a {taken.rpartition('.')[2]}, whose {callee_name} takes the call" if taken
            else built
        )  # fmt: skip
        findings.append(
            ctx.finding(
                file,
                use.site,
                problem.rule,
                problem.message,
                callee=info.callee.path,
                param=problem.param,
                severity=Severity.WARNING if reason else problem.severity,
                reason=reason,
                provider_location=shown.location or info.callee.location,
                signature=signature,
                facts=facts if facts != BindingFacts() else None,  # nothing known: as a report reads back
            )
        )
    findings.extend(_forwarded_keywords(ctx, file, use, info, shown, step, instance))
    if binding.uncertain and not any(p.severity is Severity.ERROR for p in binding.problems):
        findings.append(_cannot_judge(ctx, file, use, info.callee.path, binding.uncertain))
    return _returned(ctx, info)


def _subclass_call(ctx, file, use: Use) -> list[Finding]:
    """`Sub(...)` of a consumer class built on a provider class whose `__init__` is synthesized
    from fields: bound against those fields and Sub's own (`checks/field_subclasses.py`)."""
    built = subclass_constructor(ctx, use.root.name)
    call = use.steps[0].call
    if built is None or call is None:
        return []
    ctx.bound.append(BoundCall(ctx.site, built.info))  # what explaining the finding re-binds
    if built.info.unknown:
        return [_cannot_judge(ctx, file, use, built.provider, built.info.unknown)]
    ctx.calls_checked += 1
    name = use.root.name.rpartition(".")[2]
    sig = built.info.signatures[0]
    binding = bind_any((sig,), None, call, name)
    findings = [
        ctx.finding(
            file, use.site, problem.rule, problem.message, callee=built.provider, param=problem.param, severity=problem.severity,
            provider_location=sig.location, signature=f"{sig.render(name)}  [{sig.origin}]",
            facts=BindingFacts(arg_line=problem.arg_line or None, annotation=_annotation(sig, problem.param)),
        )
        for problem in binding.problems
    ]  # fmt: skip
    if binding.uncertain and not any(p.severity is Severity.ERROR for p in binding.problems):
        findings.append(_cannot_judge(ctx, file, use, built.provider, binding.uncertain))
    return findings


def _built_subclasses_take(ctx, value: SymbolValue, call, name: str) -> str | None:
    """Why a call the receiver's declared class cannot take may still run: the consumer derives
    its own classes from that class, builds them itself, and every one of them that defines the
    method takes the call (`self.quant_method.apply(layer, x, router_logits)` on a receiver
    declared as the general base, whose `apply` takes other parameters). None: no such class, or
    one of them fails the call too."""
    owner = value.owner
    if owner is None or value.via != "instance":
        return None
    mine: list[str] = []
    for dotted in sorted(ctx.classes):
        function = ctx.methods_by_class.get(dotted, {}).get(name)
        if function is None or not any(owner in ctx.index.mro_paths(base) for base in ctx.provider_classes_of(dotted)):
            continue
        if not _built_by_consumer(ctx, dotted):
            continue
        binding = bind(signature_of(function), call, function.dotted)
        if binding.uncertain or any(p.severity is Severity.ERROR for p in binding.problems):
            return None
        mine.append(dotted.rpartition(".")[2])
    if not mine:
        return None
    return f"declared {owner.rpartition('.')[2]}, but the consumer builds its own {', '.join(mine)}, whose {name} takes the call"


def _built_by_consumer(ctx, dotted: str) -> bool:
    """Whether the consumer's text calls the class (`Name(`, not its `class Name(` statement):
    it builds instances itself."""
    short = re.compile(rf"(?<!class )\b{re.escape(dotted.rpartition('.')[2])}\s*\(")
    return any(short.search(f.source) for f in ctx.files if dotted.rpartition(".")[2] in f.source)


def _taken_elsewhere(ctx, value: SymbolValue, call) -> str | None:
    """A class the model object can be whose definition of the method takes the call (the first),
    or None: where every class the object can be fails, the failure is proven."""
    for owner, path in value.alternatives:
        info = ctx.index.call(path, via="instance")
        if info.unknown:
            return owner  # cannot be read: not proven to fail either
        binding = bind_any(info.signatures, info.fallback, call, info.callee.name)
        if not binding.uncertain and not any(p.severity is Severity.ERROR for p in binding.problems):
            return owner
    return None


def _returned(ctx, info):
    """An instance of the callee's return class; unknown when that class is a Protocol (the
    object is some class that has its members, not the protocol itself). Calling the class
    itself builds exactly it; any other callee's return annotation may be a subclass at run time
    (a factory `-> RequestQueue` returning FCFSRequestQueue)."""
    if info.returns is None:
        items = ctx.index.return_items(info.callee.path) if info.callee.kind is SymbolKind.FUNCTION else ()
        return ItemsValue(items) if any(items) else None
    if ctx.index.is_protocol(info.returns.path):
        return None
    built = info.callee.kind is SymbolKind.CLASS or info.callee.path == f"{info.returns.path}.__init__"
    return InstanceValue((info.returns.path,), declared=None if built else "provider")


def _without_init(path: str) -> str:
    return path[: -len(".__init__")] if path.endswith(".__init__") else path


def _shown_signature(info) -> str:
    """The callee's signature as a finding shows it, with where it comes from unless a plain `def`."""
    shown = info.fallback or info.signatures[0]
    return shown.render(info.callee.name) + (f"  [{shown.origin}]" if not shown.origin.startswith("def ") else "")


def _symbol_patterns(ctx, file, use, call, paths: tuple[str, ...], info) -> list[Finding]:
    """call-without-keyword patterns: a call of the pattern's symbol (a class and its
    constructor alike) that does not pass its keyword; a ``**splat`` may pass it, so it is not matched.

    The callee exists (its keyword's default is what the pattern warns of): the finding carries its
    signature and location, as a binding finding does, when the index knows them."""
    called = {_without_init(p) for p in paths}
    findings = []
    shown = None if info.unknown else (info.fallback or next(iter(info.signatures), None))
    for pattern in ctx.hosts.symbol_patterns:
        if pattern.kind != "call-without-keyword" or _without_init(pattern.symbol) not in called:
            continue
        if call.has_starstar or pattern.keyword in call.keyword_names():
            continue
        findings.append(
            ctx.finding(
                file, use.site, pattern.id, pattern.message, callee=_without_init(paths[0]), param=pattern.keyword,
                severity=pattern.severity, advice=pattern.advice, facts=PatternFacts(pattern.id, keyword=pattern.keyword),
                recipe=RecipeFacts(pattern.recipe) if pattern.recipe else None,
                signature=_shown_signature(info) if shown is not None else None,
                provider_location=(shown.location if shown is not None else None) or info.callee.location,
            )
        )  # fmt: skip
    return findings


MAX_FORWARD_HOPS = 3


def _forwarded_keywords(ctx, file, use, info, shown, step, instance: tuple[str, ...] | None) -> list[Finding]:
    """Keywords a provider callable's `**kwargs` absorbs and passes on: each must bind at the target.

    `instance`: the bases of the object's class (one provider class, or a consumer class's
    provider bases in order), whose MRO a `super().__init__(**kwargs)` follows; None when the
    call builds no object (a plain function) or its class's MRO is not known."""
    if not any(p.kind.value == "var-keyword" for p in shown.params):
        return []
    surplus = [a for a in step.call.keywords if a.name and shown.param(a.name) is None]
    if not surplus:
        return []
    findings = []
    for arg in surplus:
        rejected = _rejecting_target(ctx, info.callee.path, arg.name, MAX_FORWARD_HOPS, instance)
        if rejected is None:
            continue
        target, hops = rejected
        findings.append(
            ctx.finding(
                file,
                use.site,
                "unexpected-keyword",
                f"{info.callee.name}() passes **kwargs on to {target.rsplit('.', 1)[-1]}(), which got an unexpected keyword argument '{arg.name}'",
                callee=info.callee.path,
                param=arg.name,
                signature=shown.render(info.callee.name),
                provider_location=shown.location or info.callee.location,
                facts=BindingFacts(arg_line=arg.site.line or None, via_splat=bool(arg.via_splat), rejected_by=target, forward_hops=hops),
            )
        )
    return findings


def _consumer_instance_bases(ctx, dotted: str) -> tuple[str, ...] | None:
    """The provider bases, in MRO order, of a consumer class whose `super().__init__` is called:
    its own provider bases as written when it has no consumer base (and nothing is injected into
    it); the one provider class it derives from otherwise. None when the order is not known."""
    facts = ctx.classes.get(dotted)
    if facts is None:
        return None
    heads = ctx.provider_classes_of(dotted)
    if facts.consumer_bases or ctx.injected.get(dotted):
        return heads if len(heads) == 1 else None
    return heads or None


def _rejecting_target(
    ctx, path: str, keyword: str, hops: int, instance: tuple[str, ...] | None, depth: int = 1
) -> tuple[str, int] | None:
    """A forwarding target (within `hops`) that certainly rejects `keyword`; None when none certainly does."""
    if hops <= 0:
        return None
    for forward in ctx.index.forwards(path):
        if keyword in forward.explicit:
            continue  # passed twice: a different error, not a rejection by name
        if keyword in forward.removed:
            continue  # taken out of **kwargs on the way (a shim dropping a removed keyword): may never reach it
        if forward.via_super:
            # the next constructor along the MRO of the object being built (not known: not judged)
            target = ctx.index.next_constructor(instance, forward.target) if instance else None
            if target is None:
                continue
            then = instance
        else:
            target = forward.target
            then = None
        info = ctx.call(target, via="module")
        if info.unknown or not info.signatures:
            continue
        sig = info.fallback or info.signatures[0]
        if sig.extra.value != "forbid":
            continue
        param = sig.param(keyword)
        if param is not None and param.kind.value not in ("var-positional", "var-keyword", "positional-only"):
            continue
        if any(p.kind.value == "var-keyword" for p in sig.params):
            deeper = _rejecting_target(ctx, target, keyword, hops - 1, then if then is not None else _built(info), depth + 1)
            if deeper is not None:
                return deeper
            continue
        return target, depth
    return None


def _built(info) -> tuple[str, ...] | None:
    """The class a forwarding target builds (its `super().__init__` follows that class's MRO)."""
    return (info.callee.path,) if info.callee.kind is SymbolKind.CLASS else None


def _annotation(sig, param) -> str | None:
    p = sig.param(param) if param else None
    return p.annotation if p and p.annotation else None


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
