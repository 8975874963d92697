"""A consumer's own version gate on the code path the provider runs first: a plugin's entry
point (or the module holding it) that raises on the releases it does not support.

The provider loads the plugins of an [[entry_point]] group at start and calls each entry point
unguarded: a `raise` the audited release takes there (`if not MIN <= version < MAX: raise
RuntimeError(...)`, recorded by the walk as a `ReleaseGate`) stops the provider at start,
whether or not the plugin's feature is used. Reported at the raise, naming the entry point.

A consumer's capability probe that fails on the audited release (`checks.probes`: a name of its
table the release lacks) refuses the release more quietly: what it guards never runs there, and
one `probe-fails` warning at the probe's call says so, naming the missing name and the lines it
keeps from running, instead of one finding per guarded line.
"""

from __future__ import annotations

from dataclasses import replace

from apiaudit.checks.conditions import Verdict, verdict
from apiaudit.checks.context import CheckContext
from apiaudit.checks.hooks import audited_release
from apiaudit.checks.probes import ProbeOutcome, failing_gates
from apiaudit.checks.probes import outcome as probe_outcome
from apiaudit.consumer.records import Condition, ConditionKind, ConsumerFile, EntryPoint, ImportUse, Liveness, ReleaseGate, RpcCall, Site, Use
from apiaudit.findings import Finding

_LINES_SHOWN = 6  # guarded lines a probe-fails message names


def release_gate_findings(ctx: CheckContext, file: ConsumerFile) -> list[Finding]:
    """`entry-point-incompatible` at each raise the release takes in an entry point the provider
    loads, or at the top level of its module or of a package on its way."""
    if not file.release_gates:
        return []
    loaded = [(e, rule) for e in ctx.entry_points for rule in ctx.hosts.entry_points if rule.group == e.group and rule.caller]
    findings: list[Finding] = []
    for gate in file.release_gates:
        entry = next((e for e, _ in loaded if _runs_gate(e, file.module, gate)), None)
        if entry is None:
            continue
        v = verdict(ctx, gate.live)
        if v.dead:
            continue
        caller = next(rule.caller for e, rule in loaded if e is entry)
        where = "importing its module" if gate.function == "<module>" else "calling it"
        finding = ctx.finding(
            file, gate.site, "entry-point-incompatible",
            f"the {entry.group} entry point {entry.name} ({entry.module}:{entry.attr or ''}) refuses this release: "
            f"`{gate.test}` {'holds' if gate.raises_when else 'is false'}, so {where} raises; {caller} loads it unguarded, so the provider stops at start",
            callee=caller,
        )  # fmt: skip
        findings.append(replace(finding, conditional=True, guard=v.guard) if v.conditional else finding)
    return findings


def _runs_gate(entry: EntryPoint, module: str, gate: ReleaseGate) -> bool:
    """Whether loading `entry` runs the gate: the entry's function itself, or the top level of its
    module or of a package it sits in (imported first)."""
    if gate.function == "<module>":
        return entry.module == module or entry.module.startswith(f"{module}.")
    return entry.module == module and gate.function == entry.attr


def probe_failures(ctx: CheckContext, file: ConsumerFile) -> list[Finding]:
    """`probe-fails` once at each call of a consumer probe that fails on the release, where it
    guards provider uses that would otherwise run (a probe kept from running by another guard
    decides nothing)."""
    guarded: dict[tuple[int, str], tuple[Condition, ProbeOutcome, Verdict, list[int]]] = {}
    items: tuple[ImportUse | Use | RpcCall, ...] = (*file.imports, *file.uses, *file.rpc_calls)
    for item in items:
        for condition in item.live.conditions:
            if condition.kind is not ConditionKind.PROBE_CALL or not condition.line:
                continue
            probe = probe_outcome(ctx, condition.name or "")
            if probe is None or probe.verdict != "fails" or probe.truth is None or probe.truth == condition.expect:
                continue
            others = verdict(ctx, Liveness(tuple(c for c in item.live.conditions if c != condition), item.live.undecided))
            if others.dead:
                continue
            entry = guarded.setdefault((condition.line, condition.name or ""), (condition, probe, others, []))
            entry[3].append(item.site.line)
    findings: list[Finding] = []
    for (line, name), (condition, probe, others, lines) in sorted(guarded.items()):
        shown = sorted(set(lines))
        more = f" and {len(shown) - _LINES_SHOWN} more" if len(shown) > _LINES_SHOWN else ""
        text = file.lines[line - 1] if 0 < line <= len(file.lines) else ""
        column = max(text.find(condition.text.split("(", 1)[0].rsplit(".", 1)[-1]), 0)
        finding = ctx.finding(
            file, Site(line, column), "probe-fails",
            f"`{condition.text}` fails on {audited_release(ctx)}: the probe finds no `{probe.missing}`, so the code it "
            f"guards never runs there (line{'s' if len(shown) > 1 else ''} {', '.join(map(str, shown[:_LINES_SHOWN]))}{more})",
            callee=name, param=probe.missing,
        )  # fmt: skip
        findings.append(replace(finding, conditional=True, guard=others.guard) if others.conditional else finding)
    for statement, text, probe, kept in failing_gates(ctx, file):
        if any(f.line == statement.lineno for f in findings):
            continue  # said already, for the provider uses it guards in its own function
        # every call of what follows sits behind this probe (or another that fails): one finding here
        findings.append(ctx.finding(
            file, Site(statement.lineno, statement.col_offset), "probe-fails",
            f"`{text}` fails on {audited_release(ctx)}: the probe finds no `{probe.missing}`, so what it guards "
            f"never runs there ({', '.join(kept)}, called only behind it)",
            callee=text.split("(", 1)[0], param=probe.missing,
        ))  # fmt: skip
    return findings
