"""Matrix and explain over a toy provider with a known history (cache entries, no network)."""

from __future__ import annotations

import ast
from pathlib import Path

import matrix_toy as toy
import pytest

from apiaudit.errors import InputError
from apiaudit.evidence import attribute_of
from apiaudit.matrix.emit import write_rules
from apiaudit.matrix.explain import (
    ADDED_PARAMETER,
    RENAMED_ATTRIBUTE,
    RENAMED_PARAMETER,
    explain,
)
from apiaudit.matrix.render import matrix_to_dict, render_explain, render_matrix
from apiaudit.matrix.sweep import run_matrix
from apiaudit.recipes import load_rulebook


@pytest.fixture()
def toy_cache(tmp_path: Path) -> Path:
    cache_dir = tmp_path / "cache"
    toy.publish(cache_dir)
    return cache_dir


def _consumer(tmp_path: Path, requirement: str | None) -> str:
    return str(toy.write_consumer(tmp_path / "project", requirement).parent)


@pytest.mark.parametrize("scan_jobs", [1, 2])
def test_matrix_range_matches_the_history(tmp_path, toy_cache, scan_jobs):
    result = run_matrix(
        [_consumer(tmp_path, "toyprov>=1.0,<1.3")], "toyprov>=1.1", cache_dir=toy_cache,
        available=toy.VERSIONS, scan_jobs=scan_jobs,
    )  # fmt: skip
    assert [r.version for r in result.rows] == ["1.1", "1.2", "1.3", "1.4"]
    changed = toy.VERSIONS.index(toy.FIRST_CHANGED)
    assert result.compatible_versions == toy.VERSIONS[1:changed]
    assert result.compatible_range == (f">={toy.VERSIONS[1]},<={toy.VERSIONS[changed - 1]}", True)
    assert not result.disagreements and result.exit_code() == 0
    assert all(not r.fetched for r in result.rows)  # everything came from the cache


def test_matrix_flags_each_release_where_the_declared_range_is_wrong(tmp_path, toy_cache):
    result = run_matrix([_consumer(tmp_path, "toyprov>=1.2")], "toyprov", cache_dir=toy_cache, available=toy.VERSIONS, scan_jobs=1)
    flagged = {(d.version, d.declared, d.compatible) for d in result.disagreements}
    assert flagged == {("1.0", False, True), ("1.1", False, True), ("1.3", True, False), ("1.4", True, False)}
    assert result.exit_code() == 1


def _signature_params(source: str, function: str) -> dict[str, bool]:
    """name -> has a default, for a top-level def or a class's __init__ in `source` (read, never run)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            args = node.args
            positional = args.posonlyargs + args.args
            defaults = [False] * (len(positional) - len(args.defaults)) + [True] * len(args.defaults)
            out = {a.arg: d for a, d in zip(positional, defaults)}
            out.update({a.arg: d is not None for a, d in zip(args.kwonlyargs, args.kw_defaults)})
            out.pop("self", None)
            return out
    raise AssertionError(f"no def {function}")


def test_explain_dates_renames_and_added_parameters(tmp_path, toy_cache):
    result = explain(_consumer(tmp_path, "toyprov==1.0"), "toyprov==1.4", cache_dir=toy_cache, available=toy.VERSIONS)
    assert result.baseline == "1.0" and "declares" in result.baseline_reason
    by_key = {(e.finding.rule, e.finding.param or attribute_of(e.finding.facts)): e for e in result.explanations}
    assert set(by_key) == {("unexpected-keyword", "host"), ("missing-required", "address"),
                           ("missing-required", "retries"), ("attribute-missing", "send")}  # fmt: skip
    for explanation in result.explanations:
        before, after = explanation.last_without, explanation.introduced_in
        assert toy.VERSIONS.index(after) == toy.VERSIONS.index(before) + 1
        # The dating agrees with the sources of the two neighbouring releases.
        old = _signature_params(toy.SOURCES[before], "connect") | _signature_params(toy.SOURCES[before], "__init__")
        new = _signature_params(toy.SOURCES[after], "connect") | _signature_params(toy.SOURCES[after], "__init__")
        param = explanation.finding.param
        if explanation.finding.rule == "unexpected-keyword":
            assert param in old and param not in new
        if explanation.finding.rule == "missing-required":
            assert new[param] is False and old.get(param, True) is True
        # Bisection, not a linear walk: at most ceil(log2(len)) probes.
        assert len(explanation.probes) <= 3
    rename = by_key[("unexpected-keyword", "host")].change
    assert (rename.kind, rename.old_name, rename.new_name) == (RENAMED_PARAMETER, "host", "address")
    assert rename.before.startswith("connect(host") and rename.after.startswith("connect(address")
    assert by_key[("missing-required", "retries")].change.kind == ADDED_PARAMETER
    attribute = by_key[("attribute-missing", "send")].change
    assert (attribute.kind, attribute.old_name, attribute.new_name) == (RENAMED_ATTRIBUTE, "send", "transmit")


def test_a_finding_present_at_the_baseline_is_not_dated(tmp_path, toy_cache):
    result = explain(_consumer(tmp_path, None), "toyprov==1.4", since="1.3", cache_dir=toy_cache, available=toy.VERSIONS)
    assert result.explanations and all(e.introduced_in is None for e in result.explanations)
    assert all("already present in 1.3" in e.why_undated for e in result.explanations)


def test_explain_without_a_declared_requirement_asks_for_since(tmp_path, toy_cache):
    with pytest.raises(InputError, match="--since"):
        explain(_consumer(tmp_path, None), "toyprov==1.4", cache_dir=toy_cache, available=toy.VERSIONS)


def test_emitted_rules_load_back_and_feed_the_scan(tmp_path, toy_cache):
    consumer = _consumer(tmp_path, "toyprov==1.0")
    result = explain(consumer, "toyprov==1.4", cache_dir=toy_cache, available=toy.VERSIONS)
    path, recipes = write_rules(result, tmp_path / "rules")
    assert path is not None and path.parent == tmp_path / "rules"
    book = load_rulebook([tmp_path / "rules"], "toyprov")
    assert {(r.kind.value, r.change.old, r.change.new, r.versions) for r in book.recipes} == {
        ("renamed-parameter", "host", "address", f">={toy.FIRST_CHANGED}"),
        ("renamed-attribute", "send", "transmit", f">={toy.FIRST_CHANGED}"),
    }
    # A second explain with those rules in force finds nothing new to emit.
    again = explain(consumer, "toyprov==1.4", cache_dir=toy_cache, available=toy.VERSIONS, rules_dirs=[tmp_path / "rules"])
    renamed = [f for f in again.report.findings if f.recipe and f.recipe.renamed_to]
    assert {f.recipe.renamed_to for f in renamed if f.recipe} == {"address", "transmit"}
    assert write_rules(again, tmp_path / "more", rules_dirs=[tmp_path / "rules"]) == (None, [])


# --- a consumer whose coupling is in a dependency it declares (scan follows it) ------------


def test_matrix_names_the_dependency_that_breaks_and_reads_its_declared_range(tmp_path, toy_cache):
    consumer = toy.publish_coupled(toy_cache, bridge_requires=("toyprov>=1.0,<1.4",))
    result = run_matrix([consumer], "toyprov", cache_dir=toy_cache, available=toy.VERSIONS, scan_jobs=1)
    assert [d.name_version for d in result.dependencies] == ["toybridge 1.0"]
    assert result.dependencies[0].required_by == "toyapp 1.0" and result.dependencies[0].requirement == "toybridge==1.0"
    breaking = [r for r in result.rows if not r.compatible]
    assert breaking and all(r.dependencies == ("toybridge 1.0",) for r in breaking)
    # toyapp declares nothing on toyprov; toybridge's range is read and compared: 1.3 is allowed but breaks.
    assert {(d.consumer, d.version) for d in result.disagreements} == {("toybridge", "1.3")}
    table = render_matrix(result, "table")
    assert "(in toybridge 1.0)" in table
    assert "dependency: toybridge 1.0, required by toyapp 1.0 (toybridge==1.0), imports toyprov" in table
    assert "declared:   toybridge requires toyprov<1.4,>=1.0" in table
    assert matrix_to_dict(result)["dependencies"][0]["required_by"] == "toyapp 1.0"


def test_explain_dates_a_finding_in_a_followed_dependency_from_its_declared_range(tmp_path, toy_cache):
    consumer = toy.publish_coupled(toy_cache, bridge_requires=("toyprov>=1.1",))
    result = explain(consumer, "toyprov==1.4", cache_dir=toy_cache, available=toy.VERSIONS)
    assert result.baseline == "1.1" and "toybridge 1.0 declares (toyprov>=1.1): the dependency of toyapp that imports toyprov" in result.baseline_reason
    assert result.explanations and all(e.introduced_in == toy.FIRST_CHANGED for e in result.explanations)
    assert all(e.finding.consumer == "toybridge" for e in result.explanations)
    text = render_explain(result, "table")
    assert text.count("in toybridge 1.0, required by toyapp 1.0 (toybridge==1.0), which imports toyprov:") == 1


def test_explain_without_any_declared_range_names_the_dependency_and_dates_with_since(tmp_path, toy_cache):
    consumer = toy.publish_coupled(toy_cache)
    with pytest.raises(InputError, match=r"nor does toybridge 1\.0 \(the dependency of toyapp that imports toyprov\).*--since"):
        explain(consumer, "toyprov==1.4", cache_dir=toy_cache, available=toy.VERSIONS)
    result = explain(consumer, "toyprov==1.4", since="1.0", cache_dir=toy_cache, available=toy.VERSIONS)
    assert result.explanations and all(e.introduced_in == toy.FIRST_CHANGED for e in result.explanations)
