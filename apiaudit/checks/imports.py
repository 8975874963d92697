"""Every provider import must resolve: modules to modules, names to something."""

from __future__ import annotations

from dataclasses import replace

from apiaudit.checks.chains import set_by_consumer
from apiaudit.checks.context import CheckContext
from apiaudit.consumer.records import ConsumerFile, ImportUse
from apiaudit.evidence import ImportFacts
from apiaudit.findings import Finding, Severity
from apiaudit.provider.records import Found, Missing


def check_import(ctx: CheckContext, file: ConsumerFile, imp: ImportUse) -> list[Finding]:
    if not ctx.index.module_exists(imp.module):
        # Where it moved: modules of this release defining the imported name (or a module of that leaf name).
        wanted = imp.name or imp.module.rsplit(".", 1)[-1]
        moved = ctx.index.find_definitions(wanted) if imp.name else ctx.index.find_modules(wanted)
        return [_missing(ctx, file, imp, imp.module, f"No module named '{imp.module}'", tuple(m for m in moved if not m.startswith(imp.module + ".")))]
    if imp.name is None:
        return []
    target = f"{imp.module}.{imp.name}"
    res = ctx.index.resolve(target)
    if isinstance(res, Found):
        return []
    if isinstance(res, Missing):
        if imp.caught == "ModuleNotFoundError" and imp.guarded and imp.guarded != "TYPE_CHECKING":
            # A missing name raises ImportError, which `except ModuleNotFoundError` lets through.
            loose = replace(imp, guarded=None)
            finding = _missing(ctx, file, loose, target, f"cannot import name '{imp.name}' from '{imp.module}'", ctx.index.moved_to(res), res.doubt)
            return [replace(finding, message=finding.message + " (ImportError: `except ModuleNotFoundError` does not catch a missing name)")]
        # The consumer may set the name on the module itself before importing it (not proven absent).
        doubt = res.doubt or set_by_consumer(ctx, imp.module, imp.name)
        return [_missing(ctx, file, imp, target, f"cannot import name '{imp.name}' from '{imp.module}'", ctx.index.moved_to(res), doubt)]
    return [_unknown(ctx, file, imp, target, res.reason)]


def _missing(ctx, file, imp: ImportUse, target: str, message: str, moved: tuple[str, ...], doubt: str | None = None) -> Finding:
    # `doubt`: the index could not prove the name absent (a module __getattr__ not read whole).
    # A fallback that drops the feature (a flag set false, stand-ins) keeps the run going without
    # it: the break is real where the feature is wanted, so an error, conditional on that.
    drops = imp.drops if imp.guarded and not doubt else None
    severity = Severity.WARNING if (imp.guarded and not drops) or doubt else Severity.ERROR
    if drops:
        message += f" (guarded by {imp.guarded}; the fallback {drops}, so what needs it is absent on this release)"
    elif imp.guarded:
        message += f" (guarded by {imp.guarded}, so the run takes the fallback path)"
    advice = None
    moved_to = None
    if moved and imp.name is None:
        message += f"; a module of that name is {', '.join(moved)}"
        advice = f"Import `{moved[0]}`."
        moved_to = moved[0]
    elif moved:
        moved_to = moved[0].rsplit(".", 1)[0]
        message += f"; '{moved[0].rsplit('.', 1)[-1]}' now lives in {', '.join(m.rsplit('.', 1)[0] for m in moved)}"
        advice = f"Import it from `{moved_to}`."
    facts = ImportFacts(imp.module, imp.name, candidates=tuple(moved), moved_to=moved_to, guarded=imp.guarded or None)
    finding = ctx.finding(file, imp.site, "import-missing", message, callee=target, severity=severity, advice=advice, facts=facts, reason=doubt)
    if drops:
        finding = replace(finding, conditional=True, guard=f"{imp.guarded}: the fallback {drops}")
    return finding


def _unknown(ctx, file, imp: ImportUse, target: str, reason: str) -> Finding:
    return ctx.finding(file, imp.site, "cannot-judge", f"cannot judge import of '{target}': {reason}", callee=target, severity=Severity.INFO)
