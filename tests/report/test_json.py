from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import get_args

import pytest

from apiaudit.audit import scan
from apiaudit.errors import InputError
from apiaudit.evidence import BindingFacts, Facts, GuardFacts, ImportFacts, RecipeFacts
from apiaudit.findings import SCHEMA_VERSION, Finding, Report, Severity
from apiaudit.model import load_model
from apiaudit.policy.config import Settings
from apiaudit.report import render, report_from_dict, report_to_dict
from apiaudit.report.json_format import (
    _facts_details,
    facts_from_details,
    finding_details,
)

TOP_LEVEL_KEYS = ["schema_version", "tool", "consumer", "consumers", "provider", "rules_version", "summary", "extras", "findings",
                  "suppressed", "baseline", "delta", "notices"]
FINDING_KEYS = [
    "id",  # since 2.0
    "rule", "severity", "consumer", "path", "line", "column", "end_line", "end_column", "callee", "param",
    "message", "provider_location", "signature", "source", "advice", "details", "conditional", "guard",
    "reason", "unreachable",  # since 1.4
    "fix",  # since 2.0
]
ORIGIN_KEYS = ["name", "version", "root", "kind", "label", "display_root"]


def _sorted(report: Report) -> Report:
    return replace(report, findings=tuple(sorted(report.findings, key=lambda f: f.sort_key)))


def test_round_trip_through_json_text_restores_the_report(report):
    text = render(report, "json")
    assert report_from_dict(json.loads(text)) == _sorted(report)


def test_round_trip_keeps_empty_and_versionless_reports(make_report):
    empty = make_report(findings=(), rules_version=None, extras=(), duration_s=0.0)
    assert report_from_dict(report_to_dict(empty)) == empty


def test_top_level_keys_types_and_order(report):
    d = report_to_dict(report)
    assert list(d) == TOP_LEVEL_KEYS
    assert d["schema_version"] == SCHEMA_VERSION
    assert d["tool"]["name"] == "apiaudit" and isinstance(d["tool"]["version"], str) and d["tool"]["version"]
    assert list(d["consumer"]) == ORIGIN_KEYS and d["consumer"] == d["consumers"][0]
    assert [c["name"] for c in d["consumers"]] == [c.name for c in report.consumers]
    assert d["consumers"][1]["version"] is None
    assert list(d["provider"]) == ORIGIN_KEYS and d["provider"]["name"] == "vllm"
    assert isinstance(d["extras"], dict)


def test_summary_counts_add_up_and_separate_cannot_judge(report):
    summary = report_to_dict(report)["summary"]
    assert list(summary) == [
        "error", "warning", "info", "cannot_judge", "files_scanned", "calls_checked", "duration_s", "suppressed", "unreachable",
    ]  # fmt: skip
    by_rule = [f.rule for f in report.findings]
    assert summary["cannot_judge"] == by_rule.count("cannot-judge") == 2
    assert summary["error"] == sum(1 for f in report.findings if f.severity is Severity.ERROR)
    assert summary["warning"] == 2 and summary["info"] == 0
    assert summary["error"] + summary["warning"] + summary["info"] + summary["cannot_judge"] == len(report.findings)
    assert (summary["files_scanned"], summary["calls_checked"], summary["duration_s"]) == (41, 230, 0.4213)


def test_every_finding_has_required_keys_with_json_types(report):
    findings = report_to_dict(report)["findings"]
    assert len(findings) == len(report.findings)
    for f in findings:
        assert list(f) == FINDING_KEYS
        assert f["severity"] in ("error", "warning", "info")
        for key in ("rule", "consumer", "path", "message"):
            assert isinstance(f[key], str)
        for key in ("line", "column"):
            assert isinstance(f[key], int) and not isinstance(f[key], bool)
        for key in ("callee", "param", "provider_location", "signature", "source", "advice"):
            assert f[key] is None or isinstance(f[key], str)
        for key in ("end_line", "end_column"):
            assert f[key] is None or isinstance(f[key], int)
        assert isinstance(f["details"], dict)
    import_missing = next(f for f in findings if f["rule"] == "import-missing")
    assert import_missing["param"] is None
    assert import_missing["details"] == {
        "module": "vllm.model_executor.models.llama_eagle3",
        "name": "Eagle3LlamaForCausalLM",
        "moved_to": "vllm.model_executor.models.llama_eagle3_v2",
        "candidate": ["vllm.model_executor.models.llama_eagle3_v2.Eagle3LlamaForCausalLM"],
    }


def test_findings_are_sorted_by_sort_key_whatever_the_input_order(report):
    reversed_report = replace(report, findings=tuple(reversed(report.findings)))
    rows = report_to_dict(reversed_report)["findings"]
    keys = [(r["consumer"], r["path"], r["line"], r["column"], r["rule"], r["param"] or "") for r in rows]
    assert keys == sorted(keys)
    assert render(reversed_report, "json") == render(report, "json")


def test_cannot_judge_is_always_in_json(report):
    for show in (False, True):
        rows = json.loads(render(report, "json", show_unresolved=show))["findings"]
        assert sum(r["rule"] == "cannot-judge" for r in rows) == 2


def test_other_major_schema_version_is_refused(report):
    d = report_to_dict(report)
    d["schema_version"] = "3.0"
    with pytest.raises(InputError, match="schema_version 3.0"):
        report_from_dict(d)


def test_minor_schema_version_is_read(report):
    d = report_to_dict(report)
    d["schema_version"] = SCHEMA_VERSION.split(".")[0] + ".99"
    assert report_from_dict(d) == _sorted(report)


@pytest.mark.parametrize(
    "breakage, expected",
    [
        (lambda d: d.pop("findings"), "no 'findings'"),
        (lambda d: d["findings"][0].pop("line"), r"findings\[0\] has no 'line'"),
        (lambda d: d["findings"][1].update(line="7"), r"findings\[1\]\.line has the wrong type"),
        (lambda d: d["findings"][0].update(column=True), "wrong type"),
        (lambda d: d["findings"][0].update(severity="fatal"), "'fatal' is not one of"),
        (lambda d: d["provider"].pop("root"), "provider has no 'root'"),
        (lambda d: d["summary"].pop("files_scanned"), "no 'files_scanned'"),
        (lambda d: d["findings"][0].update(details={"a": 1.5}), "details must be an object of strings, whole numbers"),
    ],
)
def test_broken_documents_raise_one_line_input_errors(report, breakage, expected):
    d = report_to_dict(report)
    breakage(d)
    with pytest.raises(InputError, match=expected) as info:
        report_from_dict(d)
    assert "\n" not in str(info.value)


def test_non_object_document_is_refused():
    with pytest.raises(InputError, match="top level"):
        report_from_dict([])


def test_unknown_format_is_an_input_error(report):
    with pytest.raises(InputError, match="unknown output format 'xml'"):
        render(report, "xml")


# --- details <-> typed facts, on real scans of the fixture packages -------------------------

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PROVIDERS = FIXTURES / "providers"
CONSUMERS = FIXTURES / "consumers"


def _real_reports(tmp_path: Path) -> list[Report]:
    """Scans whose findings carry every family of facts, a recipe's facts and behind_guard."""
    settings = Settings()
    engine = str(PROVIDERS / "engine_v2" / "engine")
    suppressed = tmp_path / "suppressed"
    suppressed.mkdir()
    (suppressed / "job.py").write_text("from engine.entry import LLM\n\nLLM('m')  # apiaudit: ignore[unexpected-keyword, cannot-judge] -- gone\n")

    def run(consumer: Path, provider: Path | str, rules=(PROVIDERS,), **kw) -> Report:
        return scan([str(consumer)], str(provider), rules_dirs=list(rules), cache_dir=None, use_index_cache=False,
                    settings=settings, **kw)  # fmt: skip

    return [
        run(CONSUMERS / "driver" / "driver", engine, rules=(FIXTURES / "fixes" / "rules", PROVIDERS)),
        run(CONSUMERS / "jobs", engine),
        run(CONSUMERS / "protocol", engine, rules=(FIXTURES / "fixes" / "rules",)),
        run(CONSUMERS / "compat" / "compat", PROVIDERS / "shim_v1" / "shim"),
        run(CONSUMERS / "compat" / "compat", PROVIDERS / "shim_v2" / "shim"),
        run(CONSUMERS / "capture", PROVIDERS / "modelhub_v1" / "modelhub", model=load_model(FIXTURES / "models" / "hub-wrapper")),
        run(CONSUMERS / "capture", PROVIDERS / "modelhub_v2" / "modelhub"),
        run(CONSUMERS / "loaders", PROVIDERS / "modelhub_v1" / "modelhub", model=load_model(FIXTURES / "models" / "hub-wrapper")),
        run(CONSUMERS / "deprecating", PROVIDERS / "deprecating" / "depprov"),
        run(suppressed, engine),
        run(CONSUMERS / "launch_jobs", PROVIDERS / "launcher_v2" / "launcher"),
    ]


def test_details_of_real_scans_read_back_into_the_same_typed_facts(tmp_path):
    families: set[type] = set()
    recipe_fields: set[str] = set()
    behind = False
    for report in _real_reports(tmp_path):
        document = json.loads(render(report, "json"))
        again = report_from_dict(document)
        assert again.findings == tuple(sorted(report.findings, key=lambda f: f.sort_key))
        # The same details a second time: the reading loses nothing the writing put in.
        assert json.loads(render(again, "json"))["findings"] == document["findings"]
        for f in report.findings:
            if f.facts is not None:
                families.add(type(f.facts))
            if f.recipe is not None:
                recipe_fields |= {k for k, v in vars(f.recipe).items() if v not in (None, ())}
            behind = behind or bool(f.behind_guard)
    assert families == set(get_args(Facts)), set(get_args(Facts)) - families
    assert recipe_fields >= {"id", "renamed_to", "value"} and behind


def test_details_are_typed_and_schema_1_strings_still_read():
    # Issue 36, item 2: numbers as numbers, lists as lists, a flag as true (1.x wrote strings).
    facts = BindingFacts(arg_line=7, via_splat=True, positional_names=("a", "b"), max_positional=1, positional_given=2)
    finding = Finding("too-many-positional", Severity.ERROR, "c", "p.py", 3, 0, "m.f", None, "m", facts=facts,
                      recipe=RecipeFacts("r", value="1", imports=("import a", "from b import c")), behind_guard=(2, 5))  # fmt: skip
    assert finding_details(finding) == {
        "arg_line": 7, "via_splat": True, "positional_names": ["a", "b"], "max_positional": 1, "positional_given": 2,
        "behind_guard": [2, 5], "recipe": "r", "value": "1", "import": ["import a", "from b import c"],
    }  # fmt: skip
    assert facts_from_details("too-many-positional", finding_details(finding), "x") == (facts, finding.recipe, (2, 5))
    schema_1 = {
        "arg_line": "7", "via_splat": "1", "positional_names": "a,b", "max_positional": "1", "positional_given": "2",
        "behind_guard": "2,5", "recipe": "r", "value": "1", "import": "import a; from b import c",
    }  # fmt: skip
    assert facts_from_details("too-many-positional", schema_1, "x") == (facts, finding.recipe, (2, 5))
    imported = ImportFacts("a.b", "X", candidates=("a.c.X", "a.d.X"), moved_to="a.c")
    assert _facts_details(imported) == {"module": "a.b", "name": "X", "moved_to": "a.c", "candidate": ["a.c.X", "a.d.X"]}
    guard = GuardFacts("isinstance(m, X)", False, ("X",))
    assert _facts_details(guard) == {"guard": "isinstance(m, X)", "expect": False, "classes": ["X"]}
    assert facts_from_details("guard-fails", {"guard": "isinstance(m, X)", "expect": "false", "classes": "X"}, "x")[0] == guard


def test_a_bad_number_in_details_is_one_input_error(report):
    d = report_to_dict(report)
    binding = next(f for f in d["findings"] if f["rule"] == "unexpected-keyword" and f["details"])
    binding["details"]["arg_line"] = "seven"
    with pytest.raises(InputError, match=r"details\.arg_line must be a whole number"):
        report_from_dict(d)


def test_each_finding_has_the_stable_id_sarif_and_gitlab_name_it_by(make_report, make_finding):
    # Issue 36, item 2: one id for a finding, whatever the format; identical calls in one file differ by `:N`.
    twin = make_finding(line=30)
    report = make_report(findings=(make_finding(), twin, make_finding(rule="missing-required", param="model")))
    ids = [f["id"] for f in json.loads(render(report, "json"))["findings"]]
    assert len(set(ids)) == 3 and all(re.fullmatch(r"[0-9a-f]{64}:[12]", i) for i in ids)
    assert sorted(i.rsplit(":", 1)[1] for i in ids) == ["1", "1", "2"]
    sarif = json.loads(render(report, "sarif"))["runs"][0]["results"]
    assert [r["partialFingerprints"]["apiauditFinding/v1"] for r in sarif] == ids
    assert [i["fingerprint"] for i in json.loads(render(report, "gitlab"))] == ids
    moved = make_report(findings=(make_finding(line=99), replace(twin, line=120), make_finding(rule="missing-required", param="model")))
    assert [f["id"] for f in json.loads(render(moved, "json"))["findings"]] == ids  # code moved: the same ids


def test_an_exact_fix_is_written_as_edits_and_read_back(make_report, make_finding):
    # Issue 36, item 2: the fix as a structured edit (file, range, replacement).
    from apiaudit.findings import ExactFix, Replacement

    edit = ExactFix("removed keyword legacy", (Replacement(3, 8, 3, 18, ""),))
    report = make_report(findings=(make_finding(exact_fix=edit), make_finding(line=20)))
    document = json.loads(render(report, "json"))
    fixed, plain = document["findings"]
    assert fixed["fix"] == {"description": "removed keyword legacy", "file": fixed["path"], "edits": [
        {"range": {"start_line": 3, "start_column": 8, "end_line": 3, "end_column": 18}, "replacement": ""}]}  # fmt: skip
    assert plain["fix"] is None
    assert report_from_dict(document).findings == tuple(sorted(report.findings, key=lambda f: f.sort_key))
