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
