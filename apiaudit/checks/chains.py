"""Walk each use's chain against the provider: attributes must exist, calls must bind."""

from __future__ import annotations

from dataclasses import dataclass, replace

from apiaudit.checks.binding import bind_any
from apiaudit.checks.context import CheckContext
from apiaudit.consumer.model import ConsumerFile, Step, Use
from apiaudit.findings import Finding, Severity
from apiaudit.provider.model import Found, Missing, ReachedVia, Symbol, SymbolKind, Unknown


@dataclass(frozen=True)
class SymbolValue:
    """A provider object itself; `via` says how it was reached (for method binding)."""

    symbol: Symbol
    via: ReachedVia = "module"
    owner: str | None = None  # the class it was looked up on (for attribute types)


@dataclass(frozen=True)
class UnknownBinding:
    """`self` of a function bound with types.MethodType to an object whose type cannot be known."""

    function: str  # the consumer function's dotted path


@dataclass(frozen=True)
class InstanceValue:
    classes: tuple[str, ...]  # an instance of one of these provider classes
    own: frozenset[str] = frozenset()  # consumer-side members (a subclass or mixin)
    is_super: bool = False


class _Stop(Exception):
    pass


def check_use(ctx: CheckContext, file: ConsumerFile, use: Use) -> list[Finding]:
    if use.failed_import is not None:
        return [_failed_import_use(ctx, file, use)]
    value = _root_value(ctx, use)
    if value is None:
        return []
    findings: list[Finding] = []
    steps = use.steps
    for i, step in enumerate(steps):
        rest_has_call = any(s.kind == "call" and s.check for s in steps[i:])
        try:
            value = _step(ctx, file, use, value, step, findings, rest_has_call)
        except _Stop:
            break
        if value is None:
            break
    return findings


def evaluate_chain(ctx: CheckContext, use: Use):
    """What a chain denotes (a SymbolValue or InstanceValue), without reporting; None when unknown."""
    value = _root_value(ctx, use)
    try:
        for step in use.steps:
            if value is None or isinstance(value, UnknownBinding):
                return None
            value = _step(ctx, None, None, value, step, [], False)
    except _Stop:
        return None
    return value if not isinstance(value, UnknownBinding) else None


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
        details=(("import_line", str(ref.line)), ("module", ref.module)) + ((("name", ref.name),) if ref.name else ()),
    )


def _root_value(ctx: CheckContext, use: Use):
    root = use.root
    if root.kind == "symbol":
        res = ctx.index.resolve(root.name)
        # A missing or unknowable import root is reported once, by the import check.
        return SymbolValue(res.symbol) if isinstance(res, Found) and res.symbol.kind is not SymbolKind.EXTERNAL else None
    if root.kind in ("self", "super"):
        classes = ctx.provider_classes_of(root.name)
        if not classes:
            return None
        own = ctx.super_members(root.name) if root.kind == "super" else ctx.own_members(root.name)
        return InstanceValue(classes, own, is_super=root.kind == "super")
    if root.kind == "fself":
        return _bound_function_self(ctx, root.name)
    return None


def _bound_function_self(ctx: CheckContext, function: str):
    bindings = ctx.bound_functions.get(function)
    if not bindings:
        return None  # a plain function whose first parameter happens to be called self
    classes: list[str] = []
    for b in bindings:
        if b.target is None:
            return UnknownBinding(function)
        root, steps = b.target
        value = _root_value(ctx, _pseudo_use(root, steps))
        try:
            for step in steps:
                if value is None:
                    break
                value = _step(ctx, None, None, value, step, [], False)
        except _Stop:
            value = None
        if not isinstance(value, InstanceValue):
            return UnknownBinding(function)
        classes.extend(value.classes)
    return InstanceValue(tuple(dict.fromkeys(classes)))


def _pseudo_use(root, steps) -> Use:
    from apiaudit.consumer.model import Site

    return Use(root, steps, Site(0, 0), "", "")


def _cannot_judge(ctx, file, use, callee, reason) -> Finding:
    return ctx.finding(
        file, use.site, "cannot-judge", f"cannot judge `{use.text}`: {reason}", callee=callee, severity=Severity.INFO
    )


def _step(ctx: CheckContext, file, use, value, step: Step, findings: list, rest_has_call: bool):
    report = file is not None and step.check
    if isinstance(value, UnknownBinding):
        if report and step.kind == "attr":
            findings.append(
                _cannot_judge(
                    ctx, file, use, None, f"`{value.function.rsplit('.', 1)[-1]}` is bound with types.MethodType to an object whose type cannot be known"
                )
            )
        raise _Stop
    if step.kind == "attr":
        return _attr(ctx, file, use, value, step, findings, report, rest_has_call)
    if step.kind == "call":
        return _call(ctx, file, use, value, step, findings, report)
    if step.kind == "instance":
        if isinstance(value, SymbolValue) and value.symbol.kind is SymbolKind.CLASS:
            return InstanceValue((value.symbol.path,))
        return None
    if step.kind == "dynamic":
        if report:
            findings.append(_cannot_judge(ctx, file, use, getattr(getattr(value, "symbol", None), "path", None), "the attribute name is computed at run time"))
        raise _Stop
    return None  # subscripts and anything else: the result's type is not tracked


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
            return _attr(ctx, file, use, InstanceValue((typ.path,)), step, findings, report, rest_has_call) if typ else None
        else:
            return None
        return _resolved(ctx, file, use, res, via, sym.path, name, findings, report, rest_has_call, owner=sym.path if via == "class" else None)
    if isinstance(value, InstanceValue):
        if name in value.own:
            return None  # the consumer's own member
        if name == "__init__":
            # super().__init__(...): the constructor of the (first) provider class, self bound.
            owner = value.classes[0]
            return SymbolValue(Symbol(f"{owner}.__init__", SymbolKind.FUNCTION), via="instance", owner=owner)
        results = [(c, ctx.index.class_member(c, name, instance=True)) for c in value.classes]
        for cls, res in results:
            if isinstance(res, Found):
                return _member_value(ctx, res.symbol, "instance", cls)
        unknown = [res for _, res in results if isinstance(res, Unknown)]
        if unknown:
            if report and rest_has_call:
                findings.append(_cannot_judge(ctx, file, use, f"{value.classes[0]}.{name}", unknown[0].reason))
            raise _Stop
        if report:
            owners = " or ".join(value.classes)
            missing: Missing = results[0][1]
            findings.append(
                ctx.finding(
                    file,
                    use.site,
                    "attribute-missing",
                    f"'{_short(owners)}' object has no attribute '{name}'",
                    callee=f"{value.classes[0]}.{name}",
                    provider_location=missing.owner.location if missing.owner else None,
                    details=(("attribute", name), ("owner", value.classes[0])),
                )
            )
        raise _Stop
    return None


def _resolved(ctx, file, use, res, via, owner_path, name, findings, report, rest_has_call, owner=None):
    if isinstance(res, Found):
        return _member_value(ctx, res.symbol, via, owner)
    if isinstance(res, Unknown):
        if report and rest_has_call:
            findings.append(_cannot_judge(ctx, file, use, res.path, res.reason))
        raise _Stop
    if report:
        moved = ", ".join(res.moved_to)
        message = f"'{owner_path}' has no attribute '{name}'" + (f"; it is defined in {moved}" if moved else "")
        findings.append(
            ctx.finding(
                file,
                use.site,
                "attribute-missing",
                message,
                callee=f"{owner_path}.{name}",
                provider_location=res.owner.location if res.owner else None,
                advice=f"Use `{res.moved_to[0]}` instead." if res.moved_to else None,
                details=(("attribute", name), ("owner", owner_path)) + ((("moved_to", res.moved_to[0]),) if res.moved_to else ()),
            )
        )
    raise _Stop


def _member_value(ctx, symbol: Symbol, via: ReachedVia, owner: str | None):
    if symbol.kind is SymbolKind.EXTERNAL:
        return None
    if symbol.kind is SymbolKind.ATTRIBUTE and owner is not None:
        typ = ctx.index.attribute_type(owner, symbol.name)
        return InstanceValue((typ.path,)) if typ else SymbolValue(symbol, via, owner)
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
        info = ctx.index.call(value.owner, via="module")
        defined = ctx.index.class_member(value.owner, "__init__", instance=True)
        init_path = defined.symbol.path if isinstance(defined, Found) and defined.symbol.kind is SymbolKind.FUNCTION else f"{info.callee.path}.__init__"
        info = replace(info, callee=replace(info.callee, path=init_path, kind=SymbolKind.FUNCTION))
    else:
        info = ctx.index.call(sym.path, via=value.via)
    if step.call is None or not report:
        return InstanceValue((info.returns.path,)) if info.returns else None
    ctx.calls_checked += 1
    findings.extend(_symbol_patterns(ctx, file, use, step.call, (sym.path, info.callee.path)))
    if info.unknown:
        findings.append(_cannot_judge(ctx, file, use, info.callee.path, info.unknown))
        return InstanceValue((info.returns.path,)) if info.returns else None
    callee_name = info.callee.name
    binding = bind_any(info.signatures, info.fallback, step.call, callee_name)
    shown = info.fallback or info.signatures[0]
    signature = shown.render(callee_name) + (f"  [{shown.origin}]" if not shown.origin.startswith("def ") else "")
    splatted = {a.name for a in step.call.keywords if a.via_splat}
    for problem in binding.problems:
        details: tuple[tuple[str, str], ...] = (("arg_line", str(problem.arg_line)),) if problem.arg_line else ()
        if problem.param in splatted:
            details += (("via_splat", "1"),)
        if problem.rule == "too-many-positional":
            # The positional slots, then the keyword-only parameters in order: a surplus
            # positional argument most often fills a parameter that became keyword-only.
            positional = [p.name for p in shown.params if p.kind.value in ("positional-only", "positional-or-keyword")]
            keyword_only = [p.name for p in shown.params if p.kind.value == "keyword-only"]
            details += (
                ("positional_names", ",".join(positional + keyword_only)),
                ("max_positional", str(len(positional))),
                ("positional_given", str(step.call.positional)),
            )
        findings.append(
            ctx.finding(
                file,
                use.site,
                problem.rule,
                problem.message,
                callee=info.callee.path,
                param=problem.param,
                severity=problem.severity,
                provider_location=shown.location or info.callee.location,
                signature=signature,
                details=details + (("annotation", _annotation(shown, problem.param)),) if problem.param and _annotation(shown, problem.param) else details,
            )
        )
    findings.extend(_forwarded_keywords(ctx, file, use, info, shown, step))
    if binding.uncertain and not any(p.severity is Severity.ERROR for p in binding.problems):
        findings.append(_cannot_judge(ctx, file, use, info.callee.path, binding.uncertain))
    return InstanceValue((info.returns.path,)) if info.returns else None


def _without_init(path: str) -> str:
    return path[: -len(".__init__")] if path.endswith(".__init__") else path


def _symbol_patterns(ctx, file, use, call, paths: tuple[str, ...]) -> list[Finding]:
    """call-without-keyword patterns: a call of the pattern's symbol (a class and its
    constructor alike) that does not pass its keyword; a ``**splat`` may pass it, so it is not matched."""
    called = {_without_init(p) for p in paths}
    findings = []
    for pattern in ctx.hosts.symbol_patterns:
        if pattern.kind != "call-without-keyword" or _without_init(pattern.symbol) not in called:
            continue
        if call.has_starstar or pattern.keyword in call.keyword_names():
            continue
        details = (("pattern", pattern.id), ("keyword", pattern.keyword)) + ((("recipe", pattern.recipe),) if pattern.recipe else ())
        findings.append(
            ctx.finding(
                file, use.site, pattern.id, pattern.message, callee=_without_init(paths[0]), param=pattern.keyword,
                severity=pattern.severity, advice=pattern.advice, details=details,
            )
        )  # fmt: skip
    return findings


MAX_FORWARD_HOPS = 3


def _forwarded_keywords(ctx, file, use, info, shown, step) -> list[Finding]:
    """Keywords a provider callable's `**kwargs` absorbs and passes on: each must bind at the target."""
    if not any(p.kind.value == "var-keyword" for p in shown.params):
        return []
    surplus = [a for a in step.call.keywords if a.name and shown.param(a.name) is None]
    if not surplus:
        return []
    findings = []
    for arg in surplus:
        rejected = _rejecting_target(ctx, info.callee.path, arg.name, MAX_FORWARD_HOPS)
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
                details=(("rejected_by", target), ("forward_hops", str(hops)))
                + ((("arg_line", str(arg.site.line)),) if arg.site.line else ())
                + ((("via_splat", "1"),) if arg.via_splat else ()),
            )
        )
    return findings


def _rejecting_target(ctx, path: str, keyword: str, hops: int, depth: int = 1) -> tuple[str, int] | None:
    """A forwarding target (within `hops`) that certainly rejects `keyword`; None when none certainly does."""
    if hops <= 0:
        return None
    for target, explicit in ctx.index.forwards(path):
        if keyword in explicit:
            continue  # passed twice: a different error, not a rejection by name
        info = ctx.index.call(target, via="module")
        if info.unknown or not info.signatures:
            continue
        sig = info.fallback or info.signatures[0]
        if sig.extra.value != "forbid":
            continue
        param = sig.param(keyword)
        if param is not None and param.kind.value not in ("var-positional", "var-keyword", "positional-only"):
            continue
        if any(p.kind.value == "var-keyword" for p in sig.params):
            deeper = _rejecting_target(ctx, target, keyword, hops - 1, depth + 1)
            if deeper is not None:
                return deeper
            continue
        return target, depth
    return None


def _annotation(sig, param) -> str | None:
    p = sig.param(param) if param else None
    return p.annotation if p and p.annotation else None


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
