"""Matrix output: a table for people, JSON (documented in docs/matrix.md) for machines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from apiaudit.evidence import attribute_of
from apiaudit.findings import SCHEMA_VERSION
from apiaudit.infra.words import counted
from apiaudit.matrix.emit import EmittedRecipe
from apiaudit.matrix.explain import ExplainResult
from apiaudit.matrix.forecast import describe, forecast
from apiaudit.matrix.sweep import MatrixResult
from apiaudit.report.base import TOOL_NAME, terminal_width, tool_version, wrap

MATRIX_FORMATS = ("table", "json")


def matrix_to_dict(result: MatrixResult) -> dict[str, Any]:
    compatible, contiguous = result.compatible_range
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": TOOL_NAME, "version": tool_version()},
        "kind": "matrix",
        "consumers": [
            {"name": c.name, "version": c.version, "root": c.root, "kind": c.kind} for c in result.consumers
        ],
        "dependencies": [
            {"name": c.name, "version": c.version, "root": c.root, "kind": c.kind, "required_by": c.required_by,
             "requirement": c.requirement}
            for c in result.dependencies
        ],  # fmt: skip
        "provider": {"name": result.provider.name, "range": result.provider.text, "prereleases": result.include_prereleases},
        "rows": [
            {
                "version": row.version,
                "compatible": row.compatible,
                "error": row.errors,
                "warning": row.warnings,
                "cannot_judge": row.cannot_judge,
                "rules": list(row.rules),
                "dependencies": list(row.dependencies),
                "fetched": row.fetched,
                "failure": row.failure,
                "declared": {c.name: result.declared_allows(c.name, row.version) for c in result.parties},
            }
            for row in result.rows
        ],
        "compatible": {
            "releases": list(result.compatible_versions),
            "requirement": compatible or None,
            "contiguous": contiguous,
        },
        "declared": [
            {"consumer": d.consumer, "requirement": d.specifier, "extra": d.extra, "marker": d.marker}
            for d in result.declared
        ],
        "disagreements": [
            {"consumer": d.consumer, "version": d.version, "declared": d.declared, "compatible": d.compatible}
            for d in result.disagreements
        ],
        "deprecations": [
            {"consumer": fc.finding.consumer, "path": shown(result.parties, fc.finding), "line": fc.finding.line, "callee": fc.finding.callee,
             "param": fc.finding.param, "message": fc.finding.message, "deprecated_in": fc.deprecated_in,
             "removed_in": fc.removed_in}
            for fc in forecast(result.rows)
        ],  # fmt: skip
        "duration_s": result.duration_s,
    }


def render_matrix(result: MatrixResult, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(matrix_to_dict(result), indent=2, ensure_ascii=False) + "\n"
    return _table(result)


def _table(result: MatrixResult) -> str:
    names = ", ".join(f"{c.name} {c.version or ''}".strip() for c in result.consumers)
    lines = [f"apiaudit matrix: {names} × {result.provider.text}", ""]
    several = len(result.parties) > 1
    header = ["release", "result", "errors", "warnings", "cannot judge", "declared", "rules"]
    body: list[list[str]] = []
    for row in result.rows:
        declared = []
        for consumer in result.parties:
            allowed = result.declared_allows(consumer.name, row.version)
            mark = "-" if allowed is None else ("yes" if allowed else "no")
            if allowed is not None and row.scanned and allowed != row.compatible:
                mark += " ≠"
            declared.append(f"{consumer.name}: {mark}" if several else mark)
        if row.failure:
            body.append([row.version, "not scanned", "", "", "", ", ".join(declared), row.failure])
            continue
        body.append(
            [
                row.version,
                "ok" if row.compatible else "BREAKS",
                str(row.errors),
                str(row.warnings),
                str(row.cannot_judge),
                ", ".join(declared),
                ", ".join(row.rules) + (f" (in {', '.join(row.dependencies)})" if row.dependencies else ""),
            ]
        )
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header) - 1)]
    width = terminal_width()
    for cells in [header, *body]:
        lead = "  ".join(c.ljust(w) for c, w in zip(cells, widths)) + "  "
        # The rule list wraps under its own column, so every line fits the terminal.
        wrapped = wrap(cells[-1], max(20, width - len(lead)), hanging="") if cells[-1] else [""]
        lines.append((lead + wrapped[0]).rstrip())
        lines.extend((" " * len(lead) + more).rstrip() for more in wrapped[1:])
    lines.append("")

    compatible, contiguous = result.compatible_range
    if not compatible:
        lines.append(f"compatible: none of the {counted(len(result.scanned_versions), 'release')} scanned")
    else:
        note = "" if contiguous else "  (not contiguous)"
        runs = " | ".join(f"{result.provider.name}{run}" for run in compatible.split(" | "))
        lines.append(f"compatible: {runs}{note}")
    for consumer in result.parties:
        requirements = result.declared_for(consumer.name)
        if consumer.required_by is not None:
            # A followed dependency: say why it is here, once, before what it declares.
            lines.extend(wrap(f"dependency: {consumer.name_version}, {consumer.via}, imports {result.provider.name}; "
                              "audited with it", width, hanging="            "))  # fmt: skip
        if not requirements:
            lines.append(f"declared:   {consumer.name} declares no requirement on {result.provider.name}")
            continue
        for requirement in requirements:
            where = f" (extra '{requirement.extra}')" if requirement.extra else ""
            lines.append(f"declared:   {consumer.name} requires {result.provider.name}{requirement.specifier or ' (any version)'}{where}")
    disagreements = result.disagreements
    if not disagreements and result.declared:
        lines.append("agreement:  the declared range and the scans agree on every release scanned")
    for disagreement in disagreements:
        if disagreement.declared:
            lines.append(f"disagree:   {disagreement.version}: {disagreement.consumer} declares it but the scan finds errors")
        else:
            lines.append(f"disagree:   {disagreement.version}: the scan finds no error but {disagreement.consumer} does not declare it")
    for fc in forecast(result.rows):
        lines.append(f"deprecated: {describe(fc)}")
    fetched = sum(1 for r in result.rows if r.fetched)
    failed = sum(1 for r in result.rows if r.failure)
    tail = f"{counted(len(result.rows), 'release')}, {fetched} fetched, {len(result.rows) - fetched - failed} from cache"
    tail += f", {failed} not scanned" if failed else ""
    lines.append(f"{tail}, {result.duration_s:.2f} s")
    return "\n".join(lines) + "\n"



# --- explain ---------------------------------------------------------------------------------


def explain_to_dict(result: ExplainResult, emitted: Sequence[EmittedRecipe] = (), rules_file: str | None = None) -> dict[str, Any]:
    consumer = result.report.consumers[0]
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": TOOL_NAME, "version": tool_version()},
        "kind": "explain",
        "consumer": {"name": consumer.name, "version": consumer.version, "root": consumer.root, "kind": consumer.kind},
        "dependencies": [
            {"name": c.name, "version": c.version, "required_by": c.required_by, "requirement": c.requirement}
            for c in result.report.consumers if c.required_by is not None
        ],  # fmt: skip
        "provider": {"name": result.provider, "version": result.report.provider.version},
        "baseline": {"version": result.baseline, "reason": result.baseline_reason},
        "releases": list(result.releases),
        "fetched": list(result.fetched),
        "explanations": [
            {
                "finding": {
                    "consumer": e.finding.consumer,
                    "rule": e.finding.rule,
                    "severity": e.finding.severity.value,
                    "path": shown(result.report.consumers, e.finding),
                    "line": e.finding.line,
                    "column": e.finding.column,
                    "callee": e.finding.callee,
                    "param": e.finding.param,
                    "message": e.finding.message,
                },
                "introduced_in": e.introduced_in,
                "last_without": e.last_without,
                "probes": list(e.probes),
                "undated": e.why_undated,
                "change": None
                if e.change is None
                else {
                    "kind": e.change.kind.value,
                    "before": e.change.before,
                    "after": e.change.after,
                    "old": e.change.old_name,
                    "new": e.change.new_name,
                    "symbol": e.change.symbol,
                    "note": e.change.note or None,
                },
            }
            for e in result.explanations
        ],
        "fix_candidates": [
            r.as_dict() for r in emitted
        ],
        "rules_file": rules_file,
        "duration_s": result.duration_s,
    }


def render_explain(
    result: ExplainResult, fmt: str, emitted: Sequence[EmittedRecipe] = (), rules_file: str | None = None
) -> str:
    if fmt == "json":
        return json.dumps(explain_to_dict(result, emitted, rules_file), indent=2, ensure_ascii=False) + "\n"
    consumer = result.report.consumers[0]
    width = terminal_width()
    lines = [
        f"apiaudit explain: {consumer.name} {consumer.version or ''} × {result.provider} {result.report.provider.version}".replace("  ", " "),
        *wrap(f"bisecting {counted(len(result.releases), 'release')} from {result.baseline} ({result.baseline_reason}) to {result.releases[-1]}", width),
        "",
    ]
    if not result.explanations:
        lines.append("no finding to explain")
    followed = {o.key: o for o in result.report.consumers if o.required_by is not None}
    heading = None
    for e in result.explanations:
        f = e.finding
        attribute = attribute_of(f.facts)
        about = f" {f.param}" if f.param else (f" {attribute}" if attribute else "")
        dependency = followed.get(f.consumer)
        if dependency is not None and heading != f.consumer:  # findings in a followed dependency: which, and why, once
            lines.extend(wrap(f"in {dependency.name_version}, {dependency.via}, which imports {result.provider}:", width))
            lines.append("")
        heading = f.consumer
        lines.extend(wrap(f"{shown(result.report.consumers, f)}:{f.line}  {f.severity.value} {f.rule}{about}", width))
        if e.introduced_in is None:
            lines.extend(wrap(f"not dated: {e.why_undated}", width, indent="  "))
            lines.append("")
            continue
        probes = f"; probed {', '.join(e.probes)}" if e.probes else ""
        lines.extend(wrap(f"introduced in {result.provider} {e.introduced_in} (last without it: {e.last_without}{probes})", width, indent="  "))
        if e.change is not None:
            what = e.change.kind.value
            if e.change.old_name and e.change.new_name:
                what += f": {e.change.old_name} -> {e.change.new_name}"
            elif e.change.old_name or e.change.new_name:
                what += f": {e.change.old_name or e.change.new_name}"
            if e.change.note:
                what += f" ({e.change.note})"
            lines.extend(wrap(f"change  {what}", width, indent="  "))
            lines.extend(_signature_diff(e.change.before, e.change.after, e.last_without or "", e.introduced_in, width))
        lines.append("")
    dated = sum(1 for e in result.explanations if e.introduced_in)
    tail = f"{dated} of {counted(len(result.explanations), 'finding')} dated"
    tail += f", {counted(len(result.fetched), 'release')} fetched" if result.fetched else ", nothing fetched"
    lines.append(f"{tail}, {result.duration_s:.2f} s")
    if rules_file:
        lines.append(f"wrote {len(emitted)} fix candidate(s) to {rules_file} (use: apiaudit fix --rules {Path(rules_file).parent})")
    elif emitted:
        lines.append(f"{len(emitted)} fix candidate(s): {', '.join(r.id for r in emitted)} (--emit-rules DIR writes them)")
    return "\n".join(lines) + "\n"


def _split_params(signature: str) -> tuple[str, list[str]]:
    """`name(a, b: dict[str, int] = {}, *, c)` -> ("name", ["a", "b: dict[str, int] = {}", "*", "c"])."""
    head, _, rest = signature.partition("(")
    params, depth, current = [], 0, ""
    for char in rest:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < 0:  # the parenthesis that closes the parameter list; a location may follow
                break
        if char == "," and depth == 0:
            params.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        params.append(current.strip())
    return head.strip(), params


def _signature_diff(before: str | None, after: str | None, old: str, new: str, width: int) -> list[str]:
    """What changed between two signatures, one parameter a line: `-` gone in `new`, `+` new there.

    Unchanged parameters are left out: the reader wants the change, not two whole signatures."""
    if not before and not after:
        return []
    if not before or not after or "(" not in before or "(" not in after:
        return [*wrap(f"{old:<7} {before or '(absent)'}", width, indent="  "), *wrap(f"{new:<7} {after or '(absent)'}", width, indent="  ")]
    name_before, params_before = _split_params(before)
    name_after, params_after = _split_params(after)
    lines = wrap(f"{name_after or name_before}(...) from {old} to {new}:", width, indent="  ")
    gone = [p for p in params_before if p not in params_after]
    added = [p for p in params_after if p not in params_before]
    lines += [line for p in gone for line in wrap(f"- {p}", width, indent="    ", hanging="  ")]
    lines += [line for p in added for line in wrap(f"+ {p}", width, indent="    ", hanging="  ")]
    if not gone and not added:
        lines += wrap("(same parameters; their order or kinds changed)", width, indent="    ")
    return lines


def shown(origins, finding) -> str:
    """A finding's path as every report prints it: from the project root (`src/mypkg/x.py`),
    by the origin of its consumer among `origins`."""
    origin = next((o for o in origins if o.key == finding.consumer), None)
    return origin.shown(finding.path) if origin is not None else finding.path
