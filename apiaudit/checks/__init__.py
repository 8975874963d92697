"""Binding checks: consumer uses x provider index -> findings."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, TypeVar

from apiaudit.checks.chains import BINDING_RULES, check_use
from apiaudit.checks.class_bases import class_statement_failures, function_base_findings
from apiaudit.checks.conditions import dead_helpers, guard_failures, runs_in_dead_helper, verdict
from apiaudit.checks.contracts import contract_findings
from apiaudit.checks.context import BoundCall, CheckContext, HostRules
from apiaudit.checks.gates import probe_failures, release_gate_findings
from apiaudit.checks.hooks import hook_findings
from apiaudit.checks.imports import check_import
from apiaudit.checks.probes import behind_probes
from apiaudit.checks.rpc import check_rpc
from apiaudit.checks.unreached import unreached_findings
from apiaudit.consumer.records import ConsumerFile, ImportUse, Note, RpcCall, Site, Use
from apiaudit.findings import Finding, Severity

Item = TypeVar("Item", ImportUse, Use, RpcCall, Note)


def check_engine_rules(ctx: CheckContext, file: ConsumerFile) -> list[Finding]:
    """The engine's own rules on one consumer file: its imports, call chains, RPCs, notes and
    guards against the index (a file that did not parse is one `parse-error`)."""
    if file.error is not None:
        site = file.error_site or Site(1, 0)
        # The finding's location names the file (as the report shows paths: from the project
        # root); the message names none, so it cannot disagree with it.
        return [ctx.finding(file, site, "parse-error", f"cannot parse the file: {file.error}", severity=Severity.ERROR)]
    findings: list[Finding] = []
    dead = dead_helpers(ctx, file) if file.private_calls else frozenset()
    uses = tuple(u for u in file.uses if not runs_in_dead_helper(u.function, dead)) if dead else file.uses
    rpc_calls = tuple(r for r in file.rpc_calls if not runs_in_dead_helper(r.function, dead)) if dead else file.rpc_calls
    findings.extend(_once_per_statement(_judged(ctx, file, file.imports, check_import)))
    checked: dict[int, list[Finding]] = {}  # id(use) -> what checking it found (the retries' probes are read from it)

    def check_kept(ctx: CheckContext, file: ConsumerFile, use: Use) -> list[Finding]:
        checked[id(use)] = found = check_use(ctx, file, use)
        return found

    findings.extend(_retries_after_binding_probes(uses, checked, _judged(ctx, file, uses, check_kept)))
    findings.extend(_judged(ctx, file, rpc_calls, check_rpc))
    findings.extend(_judged(ctx, file, file.notes, check_note))
    ctx.site = None
    findings.extend(guard_failures(ctx, file))
    findings.extend(release_gate_findings(ctx, file))
    findings.extend(probe_failures(ctx, file))
    findings.extend(hook_findings(ctx, file))
    if file.classes:
        findings.extend(function_base_findings(ctx, file))
    if file.classes or file.replacements or any(e.module == file.module for e in ctx.entry_points):
        findings.extend(contract_findings(ctx, file))
        findings = _after_first_failures(file, findings)
    return unreached_findings(ctx, file, findings)


def _retries_after_binding_probes(uses: tuple[Use, ...], checked: dict[int, list[Finding]], findings: list[Finding]) -> list[Finding]:
    """`try: f(x, new=1)` / `except TypeError: f(x, old=1)`: where every provider call the `try:`
    body makes binds on the audited release, the handler runs only if one raises TypeError from
    inside, so its errors are warnings that say so. Where a call of the body does not bind, the
    handler is the way that runs, and is judged as it stands (both failing is a break)."""
    handlers = {u.type_error_retry for u in uses if u.type_error_retry and id(u) in checked}
    if not handlers:
        return findings
    answered: dict[int, int] = {}  # handler line -> the line of the body's call that binds
    for line in handlers:
        body = [u for u in uses if u.type_error_handler == line and id(u) in checked and any(s.kind == "call" and s.check for s in u.steps)]
        if body and not any(f.rule in BINDING_RULES or f.rule == "cannot-judge" for u in body for f in checked[id(u)]):
            answered[line] = body[0].site.line
    if not answered:
        return findings
    retried = {
        (f.line, f.column, f.rule, f.message): u.type_error_retry
        for u in uses if u.type_error_retry in answered for f in checked.get(id(u), ())
    }  # fmt: skip
    out = []
    for f in findings:
        handler = retried.get((f.line, f.column, f.rule, f.message))
        if handler is not None and f.severity is Severity.ERROR:
            f = replace(
                f, severity=Severity.WARNING,
                reason=f"runs only where the call at line {answered[handler]} raises TypeError (`except TypeError:` at line {handler}), and that call binds on this release",
            )  # fmt: skip
        out.append(f)
    return out


def _once_per_statement(findings: list[Finding]) -> list[Finding]:
    """A module the release lacks is one failure of its import statement, however many names
    the statement imports from it (`from gone import A, B`: one finding, at the first)."""
    seen: set[tuple[str, int, str]] = set()
    kept: list[Finding] = []
    for finding in findings:
        key = (finding.rule, finding.line, finding.message)
        if finding.rule == "import-missing" and key in seen:
            continue
        seen.add(key)
        kept.append(finding)
    return kept


def _after_first_failures(file: ConsumerFile, findings: list[Finding]) -> list[Finding]:
    """The first failure of a path, once: an error on a line of a body that the failure keeps from
    running follows it, a warning that names it. Two failures do so:

    - where the provider's factory cannot call a plugin's `__init__` (`constructor-incompatible`),
      nothing in its body runs when the factory builds it (its `super().__init__(...)`);
    - where a class statement raises (`base-not-a-class`: its base is a function), nothing in the
      class is defined, so no method of it runs (vllm-kunlun's `super().__init__(..., ep_size=)`
      in `class KunlunFusedMoE(FusedMoE)` on vLLM 0.24.0)."""
    bodies: list[tuple[int, int, str]] = []
    for f in findings:
        if f.rule != "constructor-incompatible" or f.severity is not Severity.ERROR:
            continue
        # the __init__ the finding is on (one a consumer base in another file defines is not here)
        init = next((d for d in file.functions if (d.site.line, d.site.column) == (f.line, f.column) and d.dotted.endswith(".__init__")), None)
        if init is not None and init.site.end_line:
            why = (
                f"follows the failure at line {f.line}: {f.callee or 'the factory'} cannot call this "
                "__init__ (constructor-incompatible), so its body does not run when the provider builds the class"
            )
            bodies.append((init.site.line, init.site.end_line, why))
    for first, last, f in class_statement_failures(file, findings):
        if f.severity is Severity.ERROR:
            base = (f.callee or "its base").rpartition(".")[2]
            why = f"follows the failure at line {f.line}: the class statement raises TypeError ({base} is a function on this release, base-not-a-class), so nothing in the class runs"
            bodies.append((first, last, why))
    if not bodies:
        return findings
    out = []
    for f in findings:
        follows = next((why for start, end, why in bodies if start < f.line <= end), None)
        if follows is not None and f.severity is Severity.ERROR:
            f = replace(f, severity=Severity.WARNING, reason=follows)
        out.append(f)
    return out


def _judged(
    ctx: CheckContext,
    file: ConsumerFile,
    items: tuple[Item, ...],
    check: Callable[[CheckContext, ConsumerFile, Item], list[Finding]],
) -> list[Finding]:
    """A line that cannot run on the audited release is not judged; one behind an
    undecided guard is judged, and says so; one behind a guard that fails says that."""
    findings: list[Finding] = []
    for item in items:
        ctx.site = item.site  # the calls bound from here on are this item's (`CheckContext.bound`)
        v = verdict(ctx, item.live)
        if v.dead:
            continue
        found = check(ctx, file, item)
        function = getattr(item, "function", "<module>")
        gate = behind_probes(ctx, file.module, function) if found and function != "<module>" else None
        if gate is not None:
            # every call of its function (construction of its class) sits after a probe
            if gate.dead:
                continue
            v = replace(v, guard=" and ".join(g for g in (v.guard, gate.guard) if g))
        if v.conditional:
            found = [replace(f, conditional=True, guard=v.guard) for f in found]
        if v.behind:
            found = [_behind(f, v.behind) for f in found]
        findings.extend(found)
    return findings


def check_note(ctx: CheckContext, file: ConsumerFile, note: Note) -> list[Finding]:
    """What the consumer stage noticed by itself (a version compared as text)."""
    return [
        ctx.finding(
            file,
            note.site,
            note.kind,
            f"`{note.text}` {note.detail}: strings compare character by character (\"0.10.0\" < \"0.9.0\")",
            advice="Compare parsed versions: `packaging.version.Version(x) >= Version(\"0.9\")`.",
            # at a failing assert it is no wrong branch but a raise on every run: a break
            severity=Severity.ERROR if note.breaks else None,
        )
    ]


def _behind(finding: Finding, guards: tuple[tuple[int, str], ...]) -> Finding:
    """A finding past a guard that fails on this release: the job stops at the guard first."""
    shown = "; ".join(f"`{text}` (line {line})" for line, text in guards)
    return replace(
        finding,
        message=f"{finding.message} [behind the failing guard {shown}]",
        behind_guard=finding.behind_guard + tuple(line for line, _ in guards),
    )


def dedupe(findings: list[Finding]) -> list[Finding]:
    seen = set()
    out = []
    for f in findings:
        key = (f.path, f.line, f.column, f.rule, f.param, f.callee)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


__all__ = ["BoundCall", "CheckContext", "HostRules", "check_engine_rules", "dedupe"]
