"""The versioned JSON report (docs/report-format.md) and its exact inverse.

The preflight gate and the matrix command read reports back with
`report_from_dict`, so every field of `Report` and `Finding` is written.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Union

from apiaudit.errors import InputError
from apiaudit.evidence import (
    AttributeFacts,
    BindingFacts,
    DeprecationFacts,
    Facts,
    FailedImportFacts,
    GuardFacts,
    ImportFacts,
    LaunchFacts,
    ModelAttributeFacts,
    PatternFacts,
    RecipeFacts,
    RemoteCodeFacts,
    RpcFacts,
    SuppressionFacts,
)
from apiaudit.findings import (
    READABLE_MAJORS,
    SCHEMA_VERSION,
    BaselineSummary,
    CodeOrigin,
    Delta,
    ExactFix,
    Finding,
    Replacement,
    Report,
    Severity,
    Suppressed,
    SuppressedBy,
)
from apiaudit.report.base import (
    TOOL_NAME,
    RenderOptions,
    finding_id,
    import_root_paths,
    severity_counts,
    sorted_findings,
    tool_version,
)


def _origin_to_dict(origin: CodeOrigin) -> dict[str, Any]:
    out = {"name": origin.name, "version": origin.version, "root": origin.root, "kind": origin.kind, "label": origin.key,
           "display_root": origin.display_root}  # fmt: skip
    if origin.required_by is not None:  # a followed dependency only: other reports stay as they were
        out.update(required_by=origin.required_by, requirement=origin.requirement)
    return out


# --- details: the typed facts as the documented string map, and back ---------------------

# Engine rules whose findings always carry BindingFacts (possibly empty).
BINDING_RULES = frozenset({"unexpected-keyword", "missing-required", "too-many-positional", "positional-only-by-keyword", "duplicate-argument"})
_BINDING_KEYS = frozenset({"rejected_by", "forward_hops", "arg_line", "via_splat", "positional_names", "max_positional",
                           "positional_given", "annotation"})  # fmt: skip
# A details value (since 2.0): a string, a whole number, true, or a list of strings or numbers.
# Schema 1.x wrote every value as a string: several values joined by commas (import statements
# by "; ", itself a valid statement separator), numbers and true ("1") as text; still read.
Detail = Union[str, int, bool, list]
_LIST_SEP = ","
_IMPORTS_SEP = "; "


def _some(*pairs: tuple[str, Any]) -> dict[str, Detail]:
    """The pairs whose value is set, typed as JSON has them: numbers as numbers, several values
    as a list, a flag as true; None, False and () are left out."""
    out: dict[str, Detail] = {}
    for key, value in pairs:
        if value is None or value is False or value == ():
            continue
        out[key] = list(value) if isinstance(value, tuple) else value
    return out


def _facts_details(facts: Facts | None) -> dict[str, Detail]:
    if facts is None:
        return {}
    if isinstance(facts, ImportFacts):
        return _some(("module", facts.module), ("name", facts.name), ("moved_to", facts.moved_to),
                     ("candidate", facts.candidates), ("guarded", facts.guarded))  # fmt: skip
    if isinstance(facts, FailedImportFacts):
        return _some(("import_line", facts.import_line), ("module", facts.module), ("name", facts.name))
    if isinstance(facts, ModelAttributeFacts):
        return _some(("attribute", facts.attribute), ("owner", facts.owner), ("classes", facts.classes),
                     ("architectures", facts.architectures), ("moved_to", facts.moved_to),
                     ("external_base", facts.external_base))  # fmt: skip
    if isinstance(facts, AttributeFacts):
        return _some(("attribute", facts.attribute), ("owner", facts.owner), ("moved_to", facts.moved_to),
                     ("external_base", facts.external_base))  # fmt: skip
    if isinstance(facts, BindingFacts):
        return _some(
            ("rejected_by", facts.rejected_by), ("forward_hops", facts.forward_hops), ("arg_line", facts.arg_line),
            ("via_splat", facts.via_splat), ("positional_names", facts.positional_names),
            ("max_positional", facts.max_positional), ("positional_given", facts.positional_given),
            ("annotation", facts.annotation),
        )  # fmt: skip
    if isinstance(facts, RpcFacts):
        return {"rpc": facts.rpc}
    if isinstance(facts, PatternFacts):
        # `method` is written even when empty: source patterns always wrote it.
        return {"pattern": facts.pattern, **({"method": facts.method} if facts.method is not None else {}),
                **_some(("bound", facts.bound), ("keyword", facts.keyword))}  # fmt: skip
    if isinstance(facts, GuardFacts):
        return {"guard": facts.guard, "expect": facts.expect, **_some(("classes", facts.classes))}
    if isinstance(facts, RemoteCodeFacts):
        return {"auto_class": facts.auto_class, "auto_map_file": facts.auto_map_file, "auto_map_key": facts.auto_map_key,
                "keyword": facts.keyword}  # fmt: skip
    if isinstance(facts, DeprecationFacts):
        return {"deprecated": facts.deprecated}
    if isinstance(facts, SuppressionFacts):
        return {"rules": list(facts.rules)}
    if isinstance(facts, LaunchFacts):
        return {"launch": facts.launch, "flag": facts.flag, **_some(("key", facts.key), ("value", facts.value),
                ("config", facts.config), ("module", facts.module), ("known", facts.known))}  # fmt: skip
    raise TypeError(f"no details format for {type(facts).__name__}")


def finding_details(f: Finding) -> dict[str, Detail]:
    """A finding's JSON `details` (and SARIF `properties.details`): docs/report-format.md lists the keys."""
    out = _facts_details(f.facts)
    out.update(_some(("behind_guard", f.behind_guard)))
    if f.recipe is not None:
        r = f.recipe
        # A recipe's moved_to replaces the engine's: it is what the fix uses.
        out.update(_some(("recipe", r.id), ("value", r.value), ("import", r.imports), ("renamed_to", r.renamed_to),
                         ("moved_to", r.moved_to)))  # fmt: skip
    return out


def _split(value: Detail | None, sep: str = _LIST_SEP) -> tuple[str, ...]:
    """A list value, or (schema 1.x) a string of values joined by `sep`."""
    if isinstance(value, list):
        return tuple(str(x) for x in value)
    return tuple(x.strip() for x in value.split(sep) if x.strip()) if isinstance(value, str) and value else ()


def _int(d: dict[str, Detail], key: str, where: str) -> int | None:
    value = d.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():  # schema 1.x: the number as text
        return int(value)
    raise InputError(f"report JSON: {where}.{key} must be a whole number, not {value!r}")


def _flag(d: dict[str, Detail], key: str, true_text: str) -> bool:
    """A flag: true (schema 2.x) or `true_text` (1.x: "1", "true")."""
    return d.get(key) in (True, true_text)


def facts_from_details(rule: str, d: dict[str, Any], where: str) -> tuple[Facts | None, RecipeFacts | None, tuple[int, ...]]:
    """The inverse of `finding_details`: (facts, recipe, behind_guard). Unknown keys are ignored."""
    recipe = None
    if "recipe" in d:
        recipe = RecipeFacts(d["recipe"], renamed_to=d.get("renamed_to"), value=d.get("value"),
                             imports=_split(d.get("import"), _IMPORTS_SEP),
                             moved_to=d.get("moved_to") if rule == "import-missing" else None)  # fmt: skip
    behind = tuple(int(x) for x in _split(d.get("behind_guard")) if x.isdigit())  # numbers or (1.x) their text
    return _facts_from(rule, d, recipe, where), recipe, behind


def _facts_from(rule: str, d: dict[str, Any], recipe: RecipeFacts | None, where: str) -> Facts | None:
    if "launch" in d and "flag" in d:
        return LaunchFacts(d["launch"], d["flag"], d.get("key"), d.get("value"), d.get("config"), d.get("module"), _split(d.get("known")))
    if "pattern" in d:
        return PatternFacts(d["pattern"], method=d.get("method"), keyword=d.get("keyword"), bound=d.get("bound"))
    if "auto_class" in d:
        return RemoteCodeFacts(d["auto_class"], d.get("auto_map_file", ""), d.get("auto_map_key", ""), d.get("keyword", ""))
    if "rpc" in d:
        return RpcFacts(d["rpc"])
    if d.get("deprecated") == "callable":
        return DeprecationFacts("callable")
    if d.get("deprecated") == "keyword":
        return DeprecationFacts("keyword")
    if "guard" in d and "expect" in d:
        return GuardFacts(d["guard"], _flag(d, "expect", "true"), _split(d.get("classes")))
    if "import_line" in d and "module" in d:
        return FailedImportFacts(_int(d, "import_line", where) or 0, d["module"], d.get("name"))
    if "attribute" in d and "owner" in d:
        if "classes" in d:
            return ModelAttributeFacts(d["attribute"], d["owner"], d.get("moved_to"), d.get("external_base"), _split(d["classes"]),
                                       _split(d.get("architectures")))  # fmt: skip
        return AttributeFacts(d["attribute"], d["owner"], d.get("moved_to"), d.get("external_base"))
    if "rules" in d:
        return SuppressionFacts(_split(d["rules"]))
    if "module" in d:
        name = d.get("name")
        candidates = _split(d.get("candidate"))
        moved_to = d.get("moved_to")
        if recipe is not None:
            # `moved_to` was the recipe's; the engine's is the first candidate's module.
            moved_to = (candidates[0] if name is None else candidates[0].rsplit(".", 1)[0]) if candidates else None
        return ImportFacts(d["module"], name, candidates, moved_to, d.get("guarded"))
    if rule in BINDING_RULES and d.keys() & _BINDING_KEYS:
        return BindingFacts(
            arg_line=_int(d, "arg_line", where), via_splat=_flag(d, "via_splat", "1"), annotation=d.get("annotation"),
            positional_names=_split(d.get("positional_names")), max_positional=_int(d, "max_positional", where),
            positional_given=_int(d, "positional_given", where), rejected_by=d.get("rejected_by"),
            forward_hops=_int(d, "forward_hops", where),
        )  # fmt: skip
    return None


def finding_to_dict(f: Finding, identity: str) -> dict[str, Any]:
    return {
        "id": identity,
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
        "details": finding_details(f),
        "conditional": f.conditional,
        "guard": f.guard,
        "reason": f.reason,
        "unreachable": f.unreachable,
        "fix": _fix_to_dict(f),
    }


def _fix_to_dict(f: Finding) -> dict[str, Any] | None:
    """The fix as exact edits of the finding's file (since 2.0); null where `apiaudit fix` has none,
    or the report was not asked to look (docs/report-format.md)."""
    if f.exact_fix is None:
        return None
    edits = [{"range": {"start_line": r.start_line, "start_column": r.start_column, "end_line": r.end_line,
                        "end_column": r.end_column}, "replacement": r.text}
             for r in f.exact_fix.replacements]  # fmt: skip
    return {"description": f.exact_fix.description, "file": f.path, "edits": edits}


def _fix_from_dict(raw: Any, where: str) -> ExactFix | None:
    if raw is None:
        return None
    edits = _require(raw, "edits", list, where)
    replacements = []
    for i, edit in enumerate(edits):
        at = f"{where}.edits[{i}]"
        span = _require(edit, "range", dict, at)
        start_line, start_column, end_line, end_column = (
            _require(span, key, int, f"{at}.range") for key in ("start_line", "start_column", "end_line", "end_column")
        )
        replacements.append(Replacement(start_line, start_column, end_line, end_column, _require(edit, "replacement", str, at)))
    return ExactFix(_require(raw, "description", str, where), tuple(replacements))


def report_to_dict(report: Report) -> dict[str, Any]:
    """The JSON document as plain data; keys come out in a fixed, documented order."""
    counts = severity_counts(report)
    seen: Counter = Counter()
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
            "unreachable": report.unreachable,
        },
        "extras": dict(report.extras),
        # Ids count on from the findings into the suppressed ones, as SARIF's results do.
        "findings": [finding_to_dict(f, finding_id(f, seen)) for f in sorted_findings(report)],
        "suppressed": [_suppressed_to_dict(s, finding_id(s.finding, seen)) for s in report.suppressed],
        "baseline": _baseline_to_dict(report.baseline),
        "delta": _delta_to_dict(report.delta),
        "notices": list(report.notices),
    }


def _suppressed_to_dict(s: Suppressed, identity: str) -> dict[str, Any]:
    return {"by": s.by.value, "reason": s.reason, "where": s.where, "finding": finding_to_dict(s.finding, identity)}


def _baseline_to_dict(b: BaselineSummary | None) -> dict[str, Any] | None:
    return None if b is None else {"path": b.path, "matched": b.matched, "fixed": b.fixed}


def _delta_to_dict(d: Delta | None) -> dict[str, Any] | None:
    if d is None:
        return None
    seen: Counter = Counter()  # the current release's findings, counted apart
    return {
        "against": _origin_to_dict(d.against),
        "unchanged": d.unchanged,
        "fixed": [finding_to_dict(f, finding_id(f, seen)) for f in d.fixed],
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


def _is_detail(value: Any) -> bool:
    if isinstance(value, list):
        return all(isinstance(x, (str, int)) and not isinstance(x, bool) for x in value)
    return isinstance(value, (str, int))  # bool is an int: true is a flag's value


def _details_map(value: Any, where: str) -> dict[str, Detail]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and _is_detail(v) for k, v in value.items()):
        raise InputError(f"report JSON: {where} must be an object of strings, whole numbers, true/false or lists of them")
    return dict(value)


def _origin_from_dict(d: Any, where: str) -> CodeOrigin:
    return CodeOrigin(
        name=_require(d, "name", str, where),
        version=_require(d, "version", str, where, nullable=True),
        root=_require(d, "root", str, where),
        kind=_require(d, "kind", str, where),
        label=d.get("label") if isinstance(d.get("label"), str) and d.get("label") != d.get("name") else None,
        # Since 2.0; absent from older documents (whose paths are the import root's).
        display_root=d.get("display_root") if isinstance(d.get("display_root"), str) else "",
        required_by=_require(d, "required_by", str, where, nullable=True) if "required_by" in d else None,
        requirement=_require(d, "requirement", str, where, nullable=True) if "requirement" in d else None,
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

    rule = _require(d, "rule", str, where)
    facts, recipe, behind_guard = facts_from_details(rule, _details_map(d.get("details"), f"{where}.details"), f"{where}.details")
    return Finding(
        rule=rule,
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
        facts=facts,
        recipe=recipe,
        behind_guard=behind_guard,
        conditional=bool(d.get("conditional", False)) if isinstance(d, dict) else False,
        guard=opt_str("guard"),
        # Since 1.4; absent from older documents.
        reason=opt_str("reason"),
        unreachable=bool(d.get("unreachable", False)) if isinstance(d, dict) else False,
        # Since 2.0.
        exact_fix=_fix_from_dict(d.get("fix"), f"{where}.fix") if isinstance(d, dict) else None,
    )


def report_from_dict(d: Any) -> Report:
    """Rebuild the `Report` that `report_to_dict` wrote (findings come back sorted).

    A document of another major schema version, or one missing a required field,
    raises InputError with one line that says what is wrong.
    """
    if not isinstance(d, dict):
        raise InputError("report JSON: the top level must be an object")
    version = _require(d, "schema_version", str, "report")
    if version.split(".")[0] not in READABLE_MAJORS:
        raise InputError(
            f"report JSON: schema_version {version} is not readable by this apiaudit "
            f"(reads {' and '.join(m + '.x' for m in READABLE_MAJORS)})"
        )
    consumers_raw = _require(d, "consumers", list, "report")
    summary = _require(d, "summary", dict, "report")
    findings_raw = _require(d, "findings", list, "report")
    findings = tuple(_finding_from_dict(f, f"findings[{i}]") for i, f in enumerate(findings_raw))
    return import_root_paths(Report(
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
    ))


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
