"""A consumer's own version gate on the code path the provider runs first: a plugin's entry
point (or the module holding it) that raises on the releases it does not support.

The provider loads the plugins of an [[entry_point]] group at start and calls each entry point
unguarded: a `raise` the audited release takes there (`if not MIN <= version < MAX: raise
RuntimeError(...)`, recorded by the walk as a `ReleaseGate`) stops the provider at start,
whether or not the plugin's feature is used. Reported at the raise, naming the entry point.
"""

from __future__ import annotations

from dataclasses import replace

from apiaudit.checks.conditions import verdict
from apiaudit.checks.context import CheckContext
from apiaudit.consumer.records import ConsumerFile, EntryPoint, ReleaseGate
from apiaudit.findings import Finding


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
            f"`{gate.test}` holds, so {where} raises; {caller} loads it unguarded, so the provider stops at start",
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
