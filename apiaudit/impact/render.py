"""`impact` as text: a table (by downstream, then by provider change), Markdown for a pull
request comment, and JSON with stable ids (SARIF and annotations: `sarif.py`)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from apiaudit.impact.results import Break, ChangeImpact, DownstreamResult, ImpactResult, ProviderChange
from apiaudit.report.base import finding_id

IMPACT_FORMATS = ("table", "json", "markdown", "sarif", "github")
# MAJOR.MINOR, as the scan report's (docs/report-format.md, Versioning): MINOR for what is added
# (1.1: outcome "unused"), MAJOR for what is removed, renamed or means something else.
IMPACT_SCHEMA_VERSION = "1.1"


def render_impact(result: ImpactResult, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(impact_to_dict(result), indent=2) + "\n"
    if fmt == "markdown":
        return markdown(result)
    if fmt in ("sarif", "github"):
        from apiaudit.impact import sarif

        return sarif.render_sarif(result) if fmt == "sarif" else sarif.render_github(result)
    return table(result)


def break_ids(result: ImpactResult) -> dict[int, str]:
    """Each break's stable id, by its place in `result.breaks`: the finding's id as every report
    gives it (`report.base.finding_id`), counted over all downstreams in list order."""
    seen: Counter = Counter()
    return {i: finding_id(b.finding, seen) for i, b in enumerate(result.breaks)}


def _where(change: ProviderChange) -> str:
    return change.location or (f"{change.old_location} on the old side" if change.old_location else "not found on either side")


def table(result: ImpactResult) -> str:
    lines = ["By downstream", ""]
    width = max((len(d.label) for d in result.downstreams), default=10)
    for d in result.downstreams:
        lines.append(f"  {d.label.ljust(width)}  {_outcome_text(d, result.provider)}")
        for b in d.breaks:
            lines.append(f"      {b.site}  {b.finding.severity.value} {b.finding.rule}: {b.change.summary}")
    lines += ["", "By provider change", ""]
    for impact in result.by_change:
        lines.append(f"  {_sentence(impact, plain=True)}")
    if not result.by_change:
        lines.append("  (none)")
    lines += ["", result.summary]
    return "\n".join(lines) + "\n"


def _outcome_text(d: DownstreamResult, provider: str) -> str:
    if d.outcome == "unreadable":
        return f"cannot read: {d.error}"
    if d.outcome == "unused":
        return f"does not use {provider}"
    if d.outcome == "clean":
        return "clean" + (f" ({d.fixed} finding{'s' if d.fixed != 1 else ''} fixed)" if d.fixed else "")
    blocking = sum(1 for b in d.breaks if b.blocking)
    if d.outcome == "breaks":
        return f"breaks: {blocking} error{'s' if blocking != 1 else ''}" + (f", {len(d.breaks) - blocking} more" if len(d.breaks) > blocking else "")
    return f"conditional only: {len(d.breaks)} finding{'s' if len(d.breaks) != 1 else ''}"


def _sentence(impact: ChangeImpact, *, plain: bool) -> str:
    """"`Request` lost `eos_token_id` (pkg/request.py:4) breaks down 1.0 at a.py:6, b.py:5"."""
    change = impact.change
    by_downstream: dict[str, list[Break]] = {}
    for b in impact.breaks:
        by_downstream.setdefault(b.downstream, []).append(b)
    verb = "breaks" if impact.blocking else "may break"
    sites = "; ".join(f"{name} at {', '.join(b.site for b in breaks)}" for name, breaks in by_downstream.items())
    text = f"{change.summary} ({_where(change)}) {verb} {sites}"
    return text.replace("`", "") if plain else text


def markdown(result: ImpactResult) -> str:
    broken = [d for d in result.downstreams if d.outcome == "breaks"]
    icon = ":x:" if broken else ":white_check_mark:"
    lines = [f"### {icon} apiaudit impact: {result.old.name_version} → {result.new.name_version}", "", result.summary, ""]
    if result.by_change:
        lines += ["#### By provider change", ""]
        lines += [f"- {_sentence(impact, plain=False)}" for impact in result.by_change]
        lines.append("")
    lines += ["#### By downstream", "", "| downstream | outcome | findings |", "|---|---|---|"]
    for d in result.downstreams:
        found = "<br>".join(f"`{b.site}` {b.finding.rule}: {b.change.summary}" for b in d.breaks) or "-"
        lines.append(f"| {d.label} | {_outcome_text(d, result.provider).replace('|', '/')} | {found.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def impact_to_dict(result: ImpactResult) -> dict[str, Any]:
    """The whole result as JSON values; breaks and changes carry stable ids that tie them together."""
    from apiaudit.report.json_format import finding_to_dict

    ids = break_ids(result)
    index = {id(b): i for i, b in enumerate(result.breaks)}
    downstreams = []
    for d in result.downstreams:
        downstreams.append({
            "spec": d.spec, "label": d.label, "outcome": d.outcome, "error": d.error, "fixed": d.fixed,
            "unchanged": d.unchanged,
            "breaks": [{
                "id": ids[index[id(b)]], "change": b.change.stable_id, "site": b.site, "blocking": b.blocking,
                "finding": finding_to_dict(b.finding, ids[index[id(b)]]),
            } for b in d.breaks],
        })  # fmt: skip
    changes = [{
        "id": c.change.stable_id, "kind": c.change.kind.value, "symbol": c.change.symbol, "summary": c.change.summary,
        "location": c.change.location, "old_location": c.change.old_location, "before": c.change.before,
        "after": c.change.after, "old_name": c.change.old_name, "new_name": c.change.new_name, "rule": c.change.rule,
        "note": c.change.note,
        "blocking": c.blocking, "downstreams": list(c.downstreams),
        "breaks": [ids[index[id(b)]] for b in c.breaks],
    } for c in result.by_change]  # fmt: skip
    return {
        "schema_version": IMPACT_SCHEMA_VERSION,
        "old": _origin(result.old), "new": _origin(result.new),
        "exit_code": result.exit_code(), "summary": result.summary,
        "changes": changes, "downstreams": downstreams, "duration_s": result.duration_s,
    }  # fmt: skip


def _origin(origin) -> dict[str, Any]:
    return {"name": origin.name, "version": origin.version, "kind": origin.kind, "root": origin.root}
