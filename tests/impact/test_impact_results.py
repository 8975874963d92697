"""The values `impact` hands on: how a change is said, and what makes two breaks one change."""

from __future__ import annotations

from apiaudit.findings import CodeOrigin, Finding, Severity
from apiaudit.impact.results import Break, DownstreamResult, ImpactResult, ProviderChange
from apiaudit.impact.sarif import sarif_dict
from apiaudit.recipes.changes import ChangeKind


def test_a_long_list_in_a_note_is_cut_in_the_summary_and_kept_whole():
    names = ", ".join(f"NAME_{i}" for i in range(40))
    change = ProviderChange(ChangeKind.REMOVED, "pkg.envs", "pkg/envs.py", old_name="USE_V1", note=f"members added in the same release: {names}")
    assert change.summary == "`pkg.envs.USE_V1` was removed (members added in the same release: NAME_0, NAME_1, NAME_2, NAME_3 and 36 more)"
    assert change.note.endswith("NAME_39")


def test_the_short_name_starts_at_the_class():
    assert ProviderChange(ChangeKind.REMOVED_PARAMETER, "vllm.v1.request.Request.__init__", old_name="x").short == "Request.__init__"
    assert ProviderChange(ChangeKind.REMOVED_PARAMETER, "vllm.utils.cdiv", old_name="x").short == "cdiv"


def _result(change: ProviderChange) -> ImpactResult:
    finding = Finding("attribute-missing", Severity.ERROR, "down", "down/a.py", 3, 0, "pkg.envs.USE_V1", None, "gone")
    origin = CodeOrigin("pkg", "2", "/nowhere", "release")
    down = DownstreamResult("down==1", "down 1", "breaks", (Break("down 1", finding, change, "down/a.py:3"),))
    return ImpactResult(origin, origin, (down,))


def test_a_change_located_by_module_only_is_placed_on_the_file_without_a_line():
    doc = sarif_dict(_result(ProviderChange(ChangeKind.REMOVED, "pkg.envs.USE_V1", "pkg/envs.py", old_name="pkg.envs.USE_V1")))
    assert doc["runs"][0]["results"][0]["locations"] == [
        {"physicalLocation": {"artifactLocation": {"uri": "pkg/envs.py", "uriBaseId": "%SRCROOT%"}}}
    ]


def test_a_change_with_no_place_on_either_side_has_no_location():
    doc = sarif_dict(_result(ProviderChange(ChangeKind.REMOVED, "pkg.gone", None, old_name="pkg.gone")))
    result = doc["runs"][0]["results"][0]
    assert "locations" not in result and result["level"] == "error" and "down 1 at down/a.py:3" in result["message"]["text"]


def test_a_rule_range_with_no_definition_is_said_once():
    change = ProviderChange(ChangeKind.RULE_RANGE, "prov-rule", None, note="rule prov-rule applies to prov>=2", rule="prov-rule")
    assert change.summary == "rule prov-rule applies to prov>=2"
