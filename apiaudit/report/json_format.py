"""The versioned JSON report (docs/report-format.md) and its exact inverse.

The preflight gate and the matrix command read reports back with
`report_from_dict`, so every field of `Report` and `Finding` is written.
"""

from __future__ import annotations

import json
from typing import Any

from apiaudit.errors import InputError
from apiaudit.findings import (
    SCHEMA_VERSION,
    BaselineSummary,
    CodeOrigin,
    Delta,
    Finding,
    Report,
    Severity,
    Suppressed,
    SuppressedBy,
)
from apiaudit.report.base import TOOL_NAME, RenderOptions, severity_counts, sorted_findings, tool_version


def _origin_to_dict(origin: CodeOrigin) -> dict[str, Any]:
    return {"name": origin.name, "version": origin.version, "root": origin.root, "kind": origin.kind, "label": origin.key}


def _finding_to_dict(f: Finding) -> dict[str, Any]:
    return {
        "rule": f.rule,
        "severity": f.severity.value,
        "consumer": f.consumer,
        "path": f.path,
        "line": f.line,
        "column": f.column,
        "end_line": f.end_line,
        "end_column": f.end_column,
        "callee": f.callee,
        "param": f.param,
        "message": f.message,
        "provider_location": f.provider_location,
        "signature": f.signature,
        "source": f.source,
        "advice": f.advice,
        "details": dict(f.details),
        "conditional": f.conditional,
        "guard": f.guard,
    }


def report_to_dict(report: Report) -> dict[str, Any]:
    """The JSON document as plain data; keys come out in a fixed, documented order."""
    counts = severity_counts(report)
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": TOOL_NAME, "version": tool_version()},
        "consumer": _origin_to_dict(report.consumers[0]) if report.consumers else None,
        "consumers": [_origin_to_dict(c) for c in report.consumers],
        "provider": _origin_to_dict(report.provider),
        "rules_version": report.rules_version,
        "summary": {
            "error": counts["error"],
            "warning": counts["warning"],
            "info": counts["info"],
            "cannot_judge": report.cannot_judge,
            "files_scanned": report.files_scanned,
            "calls_checked": report.calls_checked,
            "duration_s": report.duration_s,
            "suppressed": len(report.suppressed),
        },
        "extras": dict(report.extras),
        "findings": [_finding_to_dict(f) for f in sorted_findings(report)],
        "suppressed": [_suppressed_to_dict(s) for s in report.suppressed],
        "baseline": _baseline_to_dict(report.baseline),
        "delta": _delta_to_dict(report.delta),
        "notices": list(report.notices),
    }


def _suppressed_to_dict(s: Suppressed) -> dict[str, Any]:
    return {"by": s.by.value, "reason": s.reason, "where": s.where, "finding": _finding_to_dict(s.finding)}


def _baseline_to_dict(b: BaselineSummary | None) -> dict[str, Any] | None:
    return None if b is None else {"path": b.path, "matched": b.matched, "fixed": b.fixed}


def _delta_to_dict(d: Delta | None) -> dict[str, Any] | None:
    if d is None:
        return None
    return {
        "against": _origin_to_dict(d.against),
        "unchanged": d.unchanged,
        "fixed": [_finding_to_dict(f) for f in d.fixed],
    }


def render(report: Report, options: RenderOptions) -> str:
    # cannot-judge findings are always written: JSON is the complete record.
    return json.dumps(report_to_dict(report), indent=2, ensure_ascii=False) + "\n"


# --- reading back -----------------------------------------------------------------


def _require(d: Any, key: str, types: type | tuple[type, ...], where: str, *, nullable: bool = False) -> Any:
    if not isinstance(d, dict) or key not in d:
        raise InputError(f"report JSON: {where} has no '{key}'")
    value = d[key]
    if value is None and nullable:
        return None
    # bool is an int subclass; a line number of `true` is a broken report, not line 1.
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise InputError(f"report JSON: {where}.{key} has the wrong type (bool)")
    if not isinstance(value, types):
        raise InputError(f"report JSON: {where}.{key} has the wrong type ({type(value).__name__})")
    return value


def _str_map(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise InputError(f"report JSON: {where} must be an object of strings")
    return tuple(value.items())


def _origin_from_dict(d: Any, where: str) -> CodeOrigin:
    return CodeOrigin(
        name=_require(d, "name", str, where),
        version=_require(d, "version", str, where, nullable=True),
        root=_require(d, "root", str, where),
        kind=_require(d, "kind", str, where),
        label=d.get("label") if isinstance(d.get("label"), str) and d.get("label") != d.get("name") else None,
    )


def _severity(value: str, where: str) -> Severity:
    try:
        return Severity(value)
    except ValueError:
        raise InputError(f"report JSON: {where}.severity '{value}' is not one of error, warning, info") from None


def _finding_from_dict(d: Any, where: str) -> Finding:
    def opt_int(key: str) -> int | None:
        return _require(d, key, int, where, nullable=True) if isinstance(d, dict) and key in d else None

    def opt_str(key: str) -> str | None:
        return _require(d, key, str, where, nullable=True) if isinstance(d, dict) and key in d else None

    return Finding(
        rule=_require(d, "rule", str, where),
        severity=_severity(_require(d, "severity", str, where), where),
        consumer=_require(d, "consumer", str, where),
        path=_require(d, "path", str, where),
        line=_require(d, "line", int, where),
        column=_require(d, "column", int, where),
        callee=_require(d, "callee", str, where, nullable=True),
        param=_require(d, "param", str, where, nullable=True),
        message=_require(d, "message", str, where),
        provider_location=_require(d, "provider_location", str, where, nullable=True),
        signature=opt_str("signature"),
        source=opt_str("source"),
        advice=opt_str("advice"),
        end_line=opt_int("end_line"),
        end_column=opt_int("end_column"),
        details=_str_map(d.get("details"), f"{where}.details"),
        conditional=bool(d.get("conditional", False)) if isinstance(d, dict) else False,
        guard=opt_str("guard"),
    )


def report_from_dict(d: Any) -> Report:
    """Rebuild the `Report` that `report_to_dict` wrote (findings come back sorted).

    A document of another major schema version, or one missing a required field,
    raises InputError with one line that says what is wrong.
    """
    if not isinstance(d, dict):
        raise InputError("report JSON: the top level must be an object")
    version = _require(d, "schema_version", str, "report")
    if version.split(".")[0] != SCHEMA_VERSION.split(".")[0]:
        raise InputError(
            f"report JSON: schema_version {version} is not readable by this apiaudit (reads {SCHEMA_VERSION.split('.')[0]}.x)"
        )
    consumers_raw = _require(d, "consumers", list, "report")
    summary = _require(d, "summary", dict, "report")
    findings_raw = _require(d, "findings", list, "report")
    findings = tuple(_finding_from_dict(f, f"findings[{i}]") for i, f in enumerate(findings_raw))
    return Report(
        suppressed=_suppressed_from(d.get("suppressed")),
        baseline=_baseline_from(d.get("baseline")),
        delta=_delta_from(d.get("delta")),
        notices=tuple(n for n in d.get("notices") or () if isinstance(n, str)),
        consumers=tuple(_origin_from_dict(c, f"consumers[{i}]") for i, c in enumerate(consumers_raw)),
        provider=_origin_from_dict(_require(d, "provider", dict, "report"), "provider"),
        findings=tuple(sorted(findings, key=lambda f: f.sort_key)),
        files_scanned=_require(summary, "files_scanned", int, "summary"),
        calls_checked=_require(summary, "calls_checked", int, "summary"),
        duration_s=float(_require(summary, "duration_s", (int, float), "summary")),
        rules_version=d.get("rules_version") if isinstance(d.get("rules_version"), str) else None,
        extras=_str_map(d.get("extras"), "extras"),
    )


# Fields added in 1.2: absent from older documents, so each defaults to "none".


def _suppressed_from(raw: Any) -> tuple[Suppressed, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InputError("report JSON: suppressed must be a list")
    out = []
    for i, item in enumerate(raw):
        where = f"suppressed[{i}]"
        by = _require(item, "by", str, where)
        try:
            kind = SuppressedBy(by)
        except ValueError:
            raise InputError(f"report JSON: {where}.by '{by}' is not one of {', '.join(k.value for k in SuppressedBy)}") from None
        out.append(
            Suppressed(
                finding=_finding_from_dict(_require(item, "finding", dict, where), f"{where}.finding"),
                by=kind,
                reason=_require(item, "reason", str, where, nullable=True),
                where=_require(item, "where", str, where),
            )
        )
    return tuple(out)


def _baseline_from(raw: Any) -> BaselineSummary | None:
    if raw is None:
        return None
    return BaselineSummary(
        path=_require(raw, "path", str, "baseline"),
        matched=_require(raw, "matched", int, "baseline"),
        fixed=_require(raw, "fixed", int, "baseline"),
    )


def _delta_from(raw: Any) -> Delta | None:
    if raw is None:
        return None
    fixed = _require(raw, "fixed", list, "delta")
    return Delta(
        against=_origin_from_dict(_require(raw, "against", dict, "delta"), "delta.against"),
        fixed=tuple(_finding_from_dict(f, f"delta.fixed[{i}]") for i, f in enumerate(fixed)),
        unchanged=_require(raw, "unchanged", int, "delta"),
    )
