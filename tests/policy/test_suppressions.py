"""Inline suppressions: each form, counted in every format, listed on request, unused ones reported."""

from __future__ import annotations

import json
import textwrap

import pytest
from policy_helpers import run, validate_report

from apiaudit.errors import InputError
from apiaudit.policy.suppressions import Scope, parse_file

SCAN = ("scan", "--consumer", "jobs", "--provider", "prov/tinyprov")


def _write(project, body: str) -> None:
    (project / "jobs" / "bad.py").write_text(textwrap.dedent(body))


def _scan(*extra: str) -> tuple[int, dict]:
    code, out = run(*SCAN, "--format", "json", *extra)
    return code, validate_report(json.loads(out))


def test_line_suppression_with_reason(project):
    _write(project, """\
        from tinyprov import make, other
        make(1, b=2, c=3)  # apiaudit: ignore[unexpected-keyword] -- c is popped by our wrapper first
        other(1, y=2)
    """)
    code, doc = _scan()
    assert code == 1 and [f["param"] for f in doc["findings"]] == ["y"]
    [s] = doc["suppressed"]
    assert (s["by"], s["where"], s["reason"]) == ("inline", "jobs/bad.py:2", "c is popped by our wrapper first")
    assert doc["summary"]["suppressed"] == 1


def test_first_line_of_a_multi_line_call_and_several_rules(project):
    _write(project, """\
        from tinyprov import make, other
        make(  # apiaudit: ignore[missing-required, unexpected-keyword] -- legacy call, removed with v2
            1,
            c=3,
        )
        other(1, y=2)
    """)
    code, doc = _scan()
    assert [f["param"] for f in doc["findings"]] == ["y"]
    assert sorted(s["finding"]["param"] for s in doc["suppressed"]) == ["b", "c"]


def test_file_suppression_and_a_marker_inside_a_string_is_not_one(project):
    _write(project, """\
        # apiaudit: ignore-file[unexpected-keyword] -- generated code, regenerated on upgrade
        from tinyprov import make, other
        make(1, b=2, c=3)
        other(1, y=2)
        text = "# apiaudit: ignore[whatever"
    """)
    code, doc = _scan()
    assert code == 0 and doc["findings"] == []
    assert {s["by"] for s in doc["suppressed"]} == {"file"} and len(doc["suppressed"]) == 2


def test_unused_suppression_is_a_warning(project):
    _write(project, """\
        from tinyprov import make, other
        make(1, b=2)  # apiaudit: ignore[unexpected-keyword] -- was c=3
        other(1, y=2)  # apiaudit: ignore[unexpected-keyword] -- y is accepted by our fork
    """)
    code, doc = _scan()
    assert code == 0
    [unused] = doc["findings"]
    assert (unused["rule"], unused["severity"], unused["line"]) == ("unused-suppression", "warning", 2)
    code, _ = run(*SCAN, "--format", "json", "--fail-on", "warning")
    assert code == 1


def test_a_misspelt_rule_id_is_named_in_the_unused_warning(project):
    _write(project, """\
        from tinyprov import make
        make(1, b=2, c=3)  # apiaudit: ignore[unexpected-kwarg] -- typo
    """)
    code, doc = _scan()
    unused = next(f for f in doc["findings"] if f["rule"] == "unused-suppression")
    assert "'unexpected-kwarg' is not a rule id (did you mean 'unexpected-keyword'?)" in unused["message"]
    assert code == 1  # the finding it meant to silence is still reported


def test_every_format_counts_and_show_suppressed_lists(project):
    _write(project, """\
        from tinyprov import make, other
        make(1, b=2, c=3)  # apiaudit: ignore[unexpected-keyword] -- reviewed
        other(1, y=2)
    """)
    _, table = run(*SCAN, "--format", "table")
    assert "1 suppressed (1 inline; --show-suppressed to list)" in table
    _, listed = run(*SCAN, "--format", "table", "--show-suppressed")
    assert "Suppressed (1):" in listed and "[inline: jobs/bad.py:2 -- reviewed]" in listed
    _, sarif = run(*SCAN, "--format", "sarif")
    run_ = json.loads(sarif)["runs"][0]
    assert run_["properties"]["suppressed"] == 1 and len(run_["results"]) == 1
    _, sarif = run(*SCAN, "--format", "sarif", "--show-suppressed")
    results = json.loads(sarif)["runs"][0]["results"]
    assert [r.get("suppressions", [{}])[0].get("kind") for r in results] == [None, "inSource"]
    _, github = run(*SCAN, "--format", "github")
    assert github.strip().splitlines()[-1].startswith("::notice title=apiaudit::1 suppressed")


@pytest.mark.parametrize(
    "comment, problem",
    [
        ("# apiaudit: ignore[unexpected-keyword]", "gives no reason"),
        ("# apiaudit: ignore[] -- why", "names no rule id"),
        ("# apiaudit: ignore[Bad Rule] -- why", "is not a rule id"),
        ("# apiaudit: ignore unexpected-keyword -- why", "cannot parse suppression"),
        ("# apiaudit: ignor[unexpected-keyword] -- why", "cannot parse suppression"),
    ],
)
def test_an_unparsable_suppression_is_one_line_and_exit_2(project, comment, problem):
    _write(project, f"from tinyprov import make\nmake(1, b=2)  {comment}\n")
    code, out = run(*SCAN, "--format", "json")
    lines = out.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("apiaudit: error: bad.py:2: ") and problem in lines[0]


def test_parse_file_forms():
    text = "x = 1  # noqa: E501  # apiaudit: ignore[a-rule, b] -- because\n# apiaudit: ignore-file[c] -- all\n"
    line, whole = parse_file(text, consumer="c", path="p.py")
    assert (line.scope, line.rules, line.reason, line.line) == (Scope.LINE, ("a-rule", "b"), "because", 1)
    assert (whole.scope, whole.rules, whole.line) == (Scope.FILE, ("c",), 2)
    assert parse_file("print('no marker')\n", consumer="c", path="p.py") == []
    with pytest.raises(InputError):
        parse_file("# apiaudit: ignore-file -- x\n", consumer="c", path="p.py")
