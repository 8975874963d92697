"""SARIF 2.1.0: one run, the rules that occur, one result per finding.

Paths stay relative (uriBaseId) so a code-scanning upload can map them onto the
checkout; originalUriBaseIds records where the audited trees lay on this machine.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

from apiaudit.findings import (
    ENGINE_RULES,
    ExactFix,
    Finding,
    Report,
    Severity,
    Suppressed,
    SuppressedBy,
)
from apiaudit.report.base import (
    INFORMATION_URI,
    finding_id,
    fingerprint,
    TOOL_NAME,
    RenderOptions,
    tool_version,
    visible_findings,
)
from apiaudit.report.json_format import finding_details

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
CONSUMER_ROOT = "CONSUMERROOT"
PROVIDER_ROOT = "PROVIDERROOT"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
# partialFingerprints key: the finding's id (report.base.finding_id: a hash of what identifies
# it without its line, the baseline key), so code scanning tracks an alert across commits that move it.
FINGERPRINT_KEY = "apiauditFinding/v1"
# SARIF suppression kinds: a comment in the code, or something outside it (config, baseline).
_SUPPRESSION_KINDS = {SuppressedBy.INLINE: "inSource", SuppressedBy.FILE: "inSource"}


def _dir_uri(root: str) -> str:
    # SARIF requires a base URI that ends in a slash.
    uri = Path(root).absolute().as_uri()
    return uri if uri.endswith("/") else uri + "/"


def _relative_uri(path: str) -> str:
    return quote(path.replace("\\", "/"), safe="/")


def _consumer_base_ids(report: Report) -> dict[str, str]:
    """CONSUMERROOT for the first consumer, CONSUMERROOT2, 3, ... for the others."""
    ids: dict[str, str] = {}
    for i, consumer in enumerate(report.consumers):
        ids.setdefault(consumer.key, CONSUMER_ROOT if i == 0 else f"{CONSUMER_ROOT}{i + 1}")
    return ids


def _rule_descriptors(findings: list[Finding]) -> list[dict[str, Any]]:
    descriptors: dict[str, dict[str, Any]] = {}
    for f in findings:
        if f.rule in descriptors:
            continue
        known = ENGINE_RULES.get(f.rule)
        # Recipe rules are not in ENGINE_RULES; their first finding's message describes them.
        text = known.summary if known else f.message
        severity = known.severity if known else f.severity
        descriptors[f.rule] = {
            "id": f.rule,
            "shortDescription": {"text": text},
            "defaultConfiguration": {"level": LEVELS[severity]},
            "helpUri": known.help_uri if known else "docs/recipes.md",
            "properties": {"origin": "engine" if known else "recipe"},
        }
        if known and known.advice:
            descriptors[f.rule]["help"] = {"text": f"{known.summary}. {known.advice_for(None)}"}
    return [descriptors[rule] for rule in sorted(descriptors)]


def _region(f: Finding) -> dict[str, Any] | None:
    if f.line < 1:  # a whole-file finding (e.g. a file that did not parse at all)
        return None
    region: dict[str, Any] = {"startLine": f.line, "startColumn": max(f.column, 0) + 1}
    if f.end_line is not None and f.end_line >= f.line:
        region["endLine"] = f.end_line
        if f.end_column is not None:
            end_column = f.end_column + 1
            if f.end_line > f.line or end_column >= region["startColumn"]:
                region["endColumn"] = end_column
    return region


def _result(f: Finding, rule_index: dict[str, int], base_ids: dict[str, str], identity: str) -> dict[str, Any]:
    physical: dict[str, Any] = {
        "artifactLocation": {"uri": _relative_uri(f.path), "uriBaseId": base_ids.get(f.consumer, CONSUMER_ROOT)}
    }
    region = _region(f)
    if region:
        physical["region"] = region
    text = f.message if not f.advice else f"{f.message} Fix: {f.advice}"
    result: dict[str, Any] = {
        "ruleId": f.rule,
        "ruleIndex": rule_index[f.rule],
        "level": LEVELS[f.severity],
        "message": {"text": text},
        "locations": [{"physicalLocation": physical}],
        # The finding's stable id (JSON's `id`, GitLab's fingerprint): `:N` tells apart identical
        # calls in one file, as GitHub's own line hashes do.
        "partialFingerprints": {FINGERPRINT_KEY: identity},
    }
    related = _provider_location(f)
    if related:
        result["relatedLocations"] = [related]
    if f.exact_fix is not None:
        result["fixes"] = [_fix(f.exact_fix, physical["artifactLocation"])]
    properties: dict[str, Any] = {
        key: value
        for key, value in (
            ("consumer", f.consumer),
            ("callee", f.callee),
            ("param", f.param),
            ("signature", f.signature),
            ("providerLocation", f.provider_location),
            ("advice", f.advice),
            ("reason", f.reason),
        )
        if value is not None
    }
    details = finding_details(f)
    if details:
        properties["details"] = details
    result["properties"] = properties
    return result


def _fix(fix: ExactFix, artifact: dict[str, Any]) -> dict[str, Any]:
    """The finding's exact fix as a SARIF fix: one artifact change, a replacement per edit
    (columns 1-based; a deleted region of no width is an insertion)."""
    replacements = [
        {
            "deletedRegion": {"startLine": r.start_line, "startColumn": r.start_column + 1, "endLine": r.end_line,
                              "endColumn": r.end_column + 1},
            "insertedContent": {"text": r.text},
        }  # fmt: skip
        for r in fix.replacements
    ]
    return {"description": {"text": fix.description}, "artifactChanges": [{"artifactLocation": artifact,
            "replacements": replacements}]}  # fmt: skip


def _provider_location(f: Finding) -> dict[str, Any] | None:
    """The callee's definition in the provider, when it exists and its line is known."""
    if not f.provider_location:
        return None
    path, _, line = f.provider_location.rpartition(":")
    if not path or not line.isdigit() or int(line) < 1:
        return None
    return {
        "id": 0,
        "physicalLocation": {
            "artifactLocation": {"uri": _relative_uri(path), "uriBaseId": PROVIDER_ROOT},
            "region": {"startLine": int(line)},
        },
        "message": {"text": f.signature or f.callee or "provider definition"},
    }


def _results(findings: list[Finding], suppressed: list[Suppressed], rule_index, base_ids) -> list[dict[str, Any]]:
    seen: Counter = Counter()
    results = [_result(f, rule_index, base_ids, finding_id(f, seen)) for f in findings]
    for s in suppressed:
        result = _result(s.finding, rule_index, base_ids, finding_id(s.finding, seen))
        suppression: dict[str, Any] = {"kind": _SUPPRESSION_KINDS.get(s.by, "external"), "status": "accepted"}
        suppression["justification"] = f"{s.by.value}: {s.where}" + (f" -- {s.reason}" if s.reason else "")
        result["suppressions"] = [suppression]
        results.append(result)
    return results


def report_to_sarif(
    report: Report, *, show_unresolved: bool = False, show_suppressed: bool = False, show_unreachable: bool = False
) -> dict[str, Any]:
    findings = visible_findings(report, show_unresolved, show_unreachable)
    suppressed = list(report.suppressed) if show_suppressed else []
    rules = _rule_descriptors(findings + [s.finding for s in suppressed])
    rule_index = {r["id"]: i for i, r in enumerate(rules)}
    base_ids = _consumer_base_ids(report)
    original_uri_base_ids: dict[str, Any] = {}
    for consumer in report.consumers:
        original_uri_base_ids.setdefault(base_ids[consumer.key], {"uri": _dir_uri(consumer.shown_base)})
    original_uri_base_ids[PROVIDER_ROOT] = {"uri": _dir_uri(report.provider.root)}
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": TOOL_NAME,
                "version": tool_version(),
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }
        },
        # Findings count columns in characters (apiaudit.consumer.positions).
        "columnKind": "unicodeCodePoints",
        "originalUriBaseIds": original_uri_base_ids,
        "results": _results(findings, suppressed, rule_index, base_ids),
        "properties": {
            "consumers": [f"{c.name}=={c.version}" if c.version else c.name for c in report.consumers],
            "provider": f"{report.provider.name}=={report.provider.version}"
            if report.provider.version
            else report.provider.name,
            "cannotJudge": report.cannot_judge,
            "unreachable": report.unreachable,
            "filesScanned": report.files_scanned,
            "callsChecked": report.calls_checked,
            "suppressed": len(report.suppressed),
        },
    }
    if report.baseline is not None:
        run["properties"]["baseline"] = {"matched": report.baseline.matched, "fixed": report.baseline.fixed}
    if report.delta is not None:
        against = report.delta.against
        run["properties"]["delta"] = {
            "against": f"{against.name}=={against.version}" if against.version else against.name,
            "introduced": len(report.findings),
            "fixed": len(report.delta.fixed),
            "unchanged": report.delta.unchanged,
        }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def render(report: Report, options: RenderOptions) -> str:
    sarif = report_to_sarif(
        report, show_unresolved=options.show_unresolved, show_suppressed=options.show_suppressed,
        show_unreachable=options.show_unreachable,
    )  # fmt: skip
    return json.dumps(sarif, indent=2, ensure_ascii=False) + "\n"

