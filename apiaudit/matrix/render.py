"""Matrix output: a table for people, JSON (documented in docs/matrix.md) for machines."""

from __future__ import annotations

import json
from typing import Any

from apiaudit.findings import SCHEMA_VERSION
from apiaudit.matrix.matrix import MatrixResult
from apiaudit.report.base import TOOL_NAME, tool_version

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
        "provider": {"name": result.provider.name, "range": result.provider.text, "prereleases": result.include_prereleases},
        "rows": [
            {
                "version": row.version,
                "compatible": row.compatible,
                "error": row.errors,
                "warning": row.warnings,
                "cannot_judge": row.cannot_judge,
                "rules": list(row.rules),
                "fetched": row.fetched,
                "failure": row.failure,
                "declared": {c.name: result.declared_allows(c.name, row.version) for c in result.consumers},
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
        "duration_s": result.duration_s,
    }


def render_matrix(result: MatrixResult, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(matrix_to_dict(result), indent=2, ensure_ascii=False) + "\n"
    return _table(result)


def _table(result: MatrixResult) -> str:
    names = ", ".join(f"{c.name} {c.version or ''}".strip() for c in result.consumers)
    lines = [f"apiaudit matrix: {names} × {result.provider.text}", ""]
    several = len(result.consumers) > 1
    header = ["release", "result", "errors", "warnings", "cannot judge", "declared", "rules"]
    body: list[list[str]] = []
    for row in result.rows:
        declared = []
        for consumer in result.consumers:
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
                ", ".join(row.rules),
            ]
        )
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header) - 1)]
    for cells in [header, *body]:
        lines.append("  ".join(c.ljust(w) for c, w in zip(cells, widths)) + "  " + cells[-1])
    lines.append("")

    compatible, contiguous = result.compatible_range
    if not compatible:
        lines.append(f"compatible: none of the {len(result.scanned_versions)} releases scanned")
    else:
        note = "" if contiguous else "  (not contiguous)"
        runs = " | ".join(f"{result.provider.name}{run}" for run in compatible.split(" | "))
        lines.append(f"compatible: {runs}{note}")
    for consumer in result.consumers:
        declared = result.declared_for(consumer.name)
        if not declared:
            lines.append(f"declared:   {consumer.name} declares no requirement on {result.provider.name}")
            continue
        for d in declared:
            where = f" (extra '{d.extra}')" if d.extra else ""
            lines.append(f"declared:   {consumer.name} requires {result.provider.name}{d.specifier or ' (any version)'}{where}")
    disagreements = result.disagreements
    if not disagreements and result.declared:
        lines.append("agreement:  the declared range and the scans agree on every release scanned")
    for d in disagreements:
        if d.declared:
            lines.append(f"disagree:   {d.version}: {d.consumer} declares it but the scan finds errors")
        else:
            lines.append(f"disagree:   {d.version}: the scan finds no error but {d.consumer} does not declare it")
    fetched = sum(1 for r in result.rows if r.fetched)
    failed = sum(1 for r in result.rows if r.failure)
    tail = f"{len(result.rows)} releases, {fetched} fetched, {len(result.rows) - fetched - failed} from cache"
    tail += f", {failed} not scanned" if failed else ""
    lines.append(f"{tail}, {result.duration_s:.2f} s")
    return "\n".join(lines) + "\n"

