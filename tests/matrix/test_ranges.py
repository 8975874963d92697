"""Provider ranges, the compatible range in requirement syntax, and declared requirements (no network)."""

from __future__ import annotations

from pathlib import Path

import pytest

from apiaudit.errors import InputError
from apiaudit.matrix.ranges import (
    as_requirement,
    declared_requirements,
    empty_range_reason,
    parse_provider_range,
    select_releases,
)
from apiaudit.sources.base import CodeTree

LISTED = ["0.10.2", "0.11.0", "0.11.1", "0.12.0rc1", "0.12.0", "0.13.0", "0.14.0"]


def test_range_parses_name_and_specifiers():
    provider = parse_provider_range("vllm>=0.11,<=0.13")
    assert provider.name == "vllm"
    assert provider.text == "vllm>=0.11,<=0.13"
    assert provider.contains("0.12.0") and not provider.contains("0.14.0")


@pytest.mark.parametrize("spec", ["", "vllm>=0.11;;", "vllm[extra]>=1", "vllm @ https://example.org/x.whl"])
def test_bad_ranges_are_one_line_errors(spec):
    with pytest.raises(InputError) as caught:
        parse_provider_range(spec)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("spec", ["vllm>=0.20,<0.11", "vllm>=0.11,<0.11", "vllm>0.11,<=0.11", "vllm==0.11,==0.12"])
def test_contradictory_ranges_are_empty(spec):
    with pytest.raises(InputError, match="is empty"):
        parse_provider_range(spec)


@pytest.mark.parametrize("spec", [">=0.11,<=0.11", ">0.11,<0.12", "==0.11.*", "", "~=0.11"])
def test_satisfiable_ranges_are_not_empty(spec):
    assert empty_range_reason(spec) is None


def test_selection_skips_prereleases_unless_asked():
    provider = parse_provider_range("vllm>=0.11,<=0.13")
    assert select_releases(LISTED, provider) == ["0.11.0", "0.11.1", "0.12.0", "0.13.0"]
    assert "0.12.0rc1" in select_releases(LISTED, provider, include_prereleases=True)


def test_a_range_without_releases_names_what_the_index_has():
    with pytest.raises(InputError, match=r"no release of vllm .* falls in vllm>=0\.20 \(the index has 0\.10\.2 \.\.\. 0\.14\.0\)"):
        select_releases(LISTED, parse_provider_range("vllm>=0.20"))


def test_a_range_of_only_prereleases_suggests_pre():
    with pytest.raises(InputError, match="--pre"):
        select_releases(LISTED, parse_provider_range("vllm>0.11.1,<=0.12.0rc1"))


def test_contiguous_releases_read_as_one_range():
    scanned = ["0.11.0", "0.11.1", "0.12.0", "0.13.0", "0.14.0"]
    assert as_requirement(["0.11.1", "0.12.0", "0.13.0"], scanned) == (">=0.11.1,<=0.13.0", True)
    assert as_requirement(["0.12.0"], scanned) == ("==0.12.0", True)
    assert as_requirement([], scanned) == ("", True)


def test_a_gap_makes_a_union_that_says_so():
    scanned = ["0.11.0", "0.11.1", "0.12.0", "0.13.0", "0.14.0"]
    assert as_requirement(["0.11.0", "0.12.0", "0.13.0"], scanned) == ("==0.11.0 | >=0.12.0,<=0.13.0", False)


def _release_tree(tmp_path: Path, requires: list[str]) -> CodeTree:
    info = tmp_path / "user-1.0.dist-info"
    info.mkdir()
    header = "".join(f"Requires-Dist: {r}\n" for r in requires)
    body = "\nRequires-Dist: vllm==9.9 (README text, not metadata)\n"
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: user\nVersion: 1.0\n{header}{body}", encoding="utf-8")
    return CodeTree(name="user", version="1.0", root=tmp_path, packages=(), kind="release")


def test_declared_requirements_include_extras_and_skip_the_readme(tmp_path):
    tree = _release_tree(tmp_path, ["torch>=2", 'vLLM<=0.16.0,>=0.12.0; extra == "datagen"', "vllm-other==1"])
    declared = declared_requirements(tree, "vllm")
    assert [(d.specifier, d.extra) for d in declared] == [("<=0.16.0,>=0.12.0", "datagen")]
    assert declared[0].allows("0.12.0") and declared[0].allows("0.16.0") and not declared[0].allows("0.17.0")


def test_a_consumer_without_a_requirement_declares_nothing(tmp_path):
    assert declared_requirements(_release_tree(tmp_path, ["torch"]), "vllm") == ()


def test_a_path_consumer_declares_through_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "u"\ndependencies = ["vllm>=0.11"]\n[project.optional-dependencies]\ngpu = ["vllm==0.12.0; python_version >= \'3.10\'"]\n',
        encoding="utf-8",
    )
    tree = CodeTree(name="u", version=None, root=tmp_path, packages=(), kind="path")
    assert [(d.specifier, d.extra) for d in declared_requirements(tree, "vllm")] == [(">=0.11", None), ("==0.12.0", "gpu")]
