"""The impact reports: table, Markdown, JSON with stable ids, SARIF and annotations on the provider's lines."""

from __future__ import annotations

import json

import pytest

from apiaudit.impact.render import render_impact
from tests.report.test_sarif import sarif_validator  # noqa: F401 - the fixture

from tests.impact.conftest import NEW


def test_the_table_has_both_views(impact_result):
    text = render_impact(impact_result, "table")
    assert "By downstream" in text and "By provider change" in text
    assert "Request lost eos_token_id (impactlib/request.py:4) breaks impact_drafter at " in text
    assert text.rstrip().endswith("3 provider changes behind 4 findings")


def test_markdown_is_a_pull_request_comment(impact_result):
    text = render_impact(impact_result, "markdown")
    assert text.startswith("### :x: apiaudit impact:")
    assert "- `Request` lost `eos_token_id` (impactlib/request.py:4) breaks impact_drafter at " in text
    assert "| impact_clean | clean | - |" in text


def test_json_ids_are_stable_and_tie_breaks_to_changes(impact_result):
    doc = json.loads(render_impact(impact_result, "json"))
    assert json.loads(render_impact(impact_result, "json"))["changes"] == doc["changes"]
    breaks = {b["id"]: b for d in doc["downstreams"] for b in d["breaks"]}
    assert len(breaks) == 4 and all(b["finding"]["id"] == i for i, b in breaks.items())
    for change in doc["changes"]:
        assert all(breaks[i]["change"] == change["id"] for i in change["breaks"])
    removed = next(c for c in doc["changes"] if c["kind"] == "removed-parameter")
    assert removed["downstreams"] == ["impact_drafter", "impact_sampler"] and removed["location"] == "impactlib/request.py:4"
    assert doc["exit_code"] == 1


def test_sarif_results_sit_on_the_changed_definitions_in_the_provider(impact_result):
    doc = json.loads(render_impact(impact_result, "sarif"))
    results = doc["runs"][0]["results"]
    placed = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: r["locations"][0]["physicalLocation"]["region"]["startLine"]
        for r in results
    }
    assert placed == {"impactlib/request.py": 4, "impactlib/math_utils.py": 1, "impactlib/proposer.py": 10}
    for uri in placed:
        assert (NEW / uri).is_file()  # a path in the provider's own checkout
    request = next(r for r in results if "eos_token_id" in r["message"]["text"])
    assert request["level"] == "error" and "impact_sampler at " in request["message"]["text"]
    assert [s["downstream"] for s in request["properties"]["sites"]] == ["impact_drafter", "impact_sampler"]


def test_github_annotations_name_the_provider_file_and_the_downstream_sites(impact_result):
    lines = render_impact(impact_result, "github").splitlines()
    assert lines[1].startswith("::error file=impactlib/request.py,line=4,title=apiaudit impact%3A Request lost eos_token_id::")
    assert "impact_sampler at " in lines[1]
    assert lines[2].startswith("::warning file=impactlib/proposer.py,line=10,")
    assert lines[-1].startswith("::notice title=apiaudit impact::")


@pytest.mark.network  # the OASIS schema, fetched once into the shared test cache
def test_the_sarif_validates_against_the_official_schema(impact_result, sarif_validator):
    doc = json.loads(render_impact(impact_result, "sarif"))
    errors = sorted(sarif_validator.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]


def _unused_result():
    from apiaudit.findings import CodeOrigin
    from apiaudit.impact.results import DownstreamResult, ImpactResult

    old, new = CodeOrigin("vllm", "0.16.0", "/old", "release"), CodeOrigin("vllm", "0.17.0", "/new", "release")
    downstreams = (
        DownstreamResult("trl==0.20", "trl 0.20", "clean"),
        DownstreamResult("speculators==0.0.1", "speculators 0.0.1", "unused"),
        DownstreamResult("mooncake-transfer-engine==0.3.4.post2", "mooncake-transfer-engine 0.3.4.post2", "unused"),
    )
    return ImpactResult(old, new, downstreams)


def test_downstreams_that_do_not_use_the_provider_are_said_in_every_format_and_fail_nothing():
    result = _unused_result()
    assert result.exit_code() == 0
    assert result.summary == "vllm 0.16.0 -> vllm 0.17.0: 3 downstreams, 1 clean, 2 do not use vllm; 0 provider changes behind 0 findings"
    table = render_impact(result, "table")
    rows = [line.split() for line in table.splitlines()]
    assert ["speculators", "0.0.1", "does", "not", "use", "vllm"] in rows and "cannot read" not in table
    markdown = render_impact(result, "markdown")
    assert markdown.startswith("### :white_check_mark:") and "| speculators 0.0.1 | does not use vllm | - |" in markdown
    doc = json.loads(render_impact(result, "json"))
    assert doc["schema_version"] == "1.1" and doc["exit_code"] == 0
    assert [d["outcome"] for d in doc["downstreams"]] == ["clean", "unused", "unused"]
    assert all(d["error"] is None and d["breaks"] == [] for d in doc["downstreams"])
    assert json.loads(render_impact(result, "sarif"))["runs"][0]["results"] == []  # nothing to place on the provider
    assert render_impact(result, "github").splitlines() == [f"::notice title=apiaudit impact::{result.summary}"]
