"""Matrix and explain on real released wheels: speculators against vLLM 0.11.0 ... 0.17.0."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from packaging.version import Version

from apiaudit.cli.group import cli
from apiaudit.matrix.explain import explain
from apiaudit.matrix.sweep import run_matrix
from apiaudit.sources import release_versions
from apiaudit.sources.cache import entry_dir

pytestmark = pytest.mark.network

RANGE = "vllm>=0.11.0,<=0.17.0"
GENERATOR = "speculators/data_generation/vllm_hidden_states_generator.py"


def test_speculators_040_compatible_range_agrees_with_its_declared_range(release_cache):
    result = run_matrix(["speculators==0.4.0"], RANGE, cache_dir=release_cache)
    assert result.scanned_versions[0] == "0.11.0" and result.scanned_versions[-1] == "0.17.0"
    assert result.compatible_range == (">=0.12.0,<=0.16.0", True)
    (declared,) = result.declared
    assert declared.extra == "datagen"
    assert [v for v in result.scanned_versions if declared.allows(v)] == list(result.compatible_versions)
    assert result.disagreements == ()
    assert result.exit_code() == 0


def test_speculators_030_is_compatible_with_0110_alone_through_the_cli(release_cache):
    outcome = CliRunner().invoke(
        cli,
        ["matrix", "--consumer", "speculators==0.3.0", "--provider", RANGE, "--cache-dir", str(release_cache),
         "--format", "json", "--no-progress"],
    )  # fmt: skip
    assert outcome.exit_code == 0, outcome.output
    document = json.loads(outcome.stdout)
    assert document["compatible"] == {"releases": ["0.11.0"], "requirement": "==0.11.0", "contiguous": True}
    assert [d["requirement"] for d in document["declared"]] == ["==0.11.0"]
    assert document["disagreements"] == []
    broken = [row for row in document["rows"] if not row["compatible"]]
    assert broken and all(row["error"] > 0 and row["rules"] for row in broken)


def _param_state(source: Path, line: int, param: str) -> str:
    """'absent' | 'required' | 'optional': `param` of the def or class (its fields) defined at `line`."""
    tree = ast.parse(source.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if line not in {node.lineno, *(d.lineno for d in node.decorator_list)}:
            continue
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == param:
                    return "optional" if stmt.value is not None else "required"
            return "absent"
        args = node.args
        positional = args.posonlyargs + args.args
        padded = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        for arg, default in [*zip(positional, padded), *zip(args.kwonlyargs, args.kw_defaults)]:
            if arg.arg == param:
                return "optional" if default is not None else "required"
        return "absent"
    raise AssertionError(f"nothing is defined at {source}:{line}")


def _location(shown: str) -> tuple[str, int]:
    match = re.search(r"\((\S+\.py):(\d+)\)$", shown)
    assert match, shown
    return match[1], int(match[2])


def test_explain_dates_the_three_generator_findings(release_cache):
    result = explain("speculators==0.3.0", "vllm==0.16.0", cache_dir=release_cache)
    assert result.baseline == "0.11.0"  # speculators 0.3.0 declares vllm==0.11.0
    errors = [e for e in result.explanations if e.finding.path == GENERATOR and e.finding.severity.value == "error"]
    # Pattern errors are dated by their rule's version range; the three signature errors by bisection.
    assert {e.change.kind.value for e in errors if e.finding.rule.startswith("vllm-")} == {"rule-version-range"}
    dated = [e for e in errors if not e.finding.rule.startswith("vllm-")]
    assert len(dated) == 3
    finals = [v for v in release_versions("vllm") if not Version(v).is_prerelease]
    for explanation in dated:
        before, after = explanation.last_without, explanation.introduced_in
        assert after is not None, explanation.why_undated
        assert finals.index(after) == finals.index(before) + 1  # neighbouring releases
        assert len(explanation.probes) < len(result.releases) - 1  # bisected, not walked
        param = explanation.finding.param
        old_file, old_line = _location(explanation.change.before)
        new_file, new_line = _location(explanation.change.after)
        old_state = _param_state(entry_dir(release_cache, "vllm", before) / old_file, old_line, param)
        new_state = _param_state(entry_dir(release_cache, "vllm", after) / new_file, new_line, param)
        if explanation.finding.rule == "unexpected-keyword":
            assert (old_state != "absent", new_state) == (True, "absent"), (param, before, after)
        else:
            assert explanation.finding.rule == "missing-required"
            assert old_state in ("absent", "optional") and new_state == "required", (param, before, after, old_state)
        assert explanation.change.kind.value in ("removed-parameter", "added-parameter", "default-removed")


def test_speculators_090_matrix_and_explain_follow_hs_connectors(release_cache):
    # speculators 0.9.0 imports nothing of vLLM; hs-connectors==0.9.0, which it pins, does, and
    # imports a name vLLM added only after 0.20.0: both commands must say where the finding is.
    available = ["0.18.0", "0.20.0"]  # releases the shared test cache holds already
    result = run_matrix(["speculators==0.9.0"], "vllm>=0.18.0,<=0.20.0", cache_dir=release_cache, available=available)
    assert [d.name_version for d in result.dependencies] == ["hs-connectors 0.9.0"]
    assert all(r.rules == ("import-missing",) and r.dependencies == ("hs-connectors 0.9.0",) for r in result.rows)
    with pytest.raises(Exception, match=r"nor does hs-connectors 0\.9\.0 \(the dependency of speculators that imports vllm\)"):
        explain("speculators==0.9.0", "vllm==0.20.0", cache_dir=release_cache, available=available)
    dated = explain("speculators==0.9.0", "vllm==0.20.0", since="0.18.0", cache_dir=release_cache, available=available)
    (explanation,) = dated.explanations
    assert explanation.finding.consumer == "hs-connectors"
    # Re-checked in hs-connectors' own file: present at the start of the window, not "not reproduced".
    assert explanation.why_undated == "already present in 0.18.0, where the search starts"
