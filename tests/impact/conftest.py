"""The impact fixtures: a provider at two versions (impactlib_v1 -> impactlib_v2: a keyword
removed, a function moved, an abstract member added) and three downstreams of it."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROVIDERS = REPO / "fixtures" / "providers"
CONSUMERS = REPO / "fixtures" / "consumers"
OLD = PROVIDERS / "impactlib_v1"
NEW = PROVIDERS / "impactlib_v2"
DOWNSTREAMS = ("impact_drafter", "impact_sampler", "impact_clean")


def downstream_path(name: str) -> Path:
    return CONSUMERS / name / name


def write_list(folder: Path, names=DOWNSTREAMS, extra: str = "", replace_bundled: bool = True) -> Path:
    specs = ", ".join(f'"{downstream_path(n)}"' for n in names)
    path = folder / "downstream.toml"
    path.write_text(f"replace-bundled = {str(replace_bundled).lower()}\ndownstream = [{specs}{extra}]\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def impact_result(tmp_path_factory):
    from apiaudit.impact.run import run_impact

    folder = tmp_path_factory.mktemp("impact")
    listed = write_list(folder)
    return run_impact(str(OLD), str(NEW), downstream_files=[listed], cache_dir=folder / "cache")


@pytest.fixture(scope="session")
def toy_atlas(tmp_path_factory):
    """The atlas of the toy provider (tests/matrix/matrix_toy.py) from 1.1 on: a downstream that
    breaks on 1.3, and one that cannot be read. Swept once for the atlas's tests and its page's."""
    from apiaudit.impact.atlas import run_atlas
    from tests.matrix import matrix_toy as toy

    root = tmp_path_factory.mktemp("atlas")
    cache = root / "cache"
    toy.publish(cache)
    user = toy.write_consumer(root / "project")
    listed = root / "downstream.toml"
    listed.write_text(f'replace-bundled = true\ndownstream = ["{user}", "{root / "gone"}"]\n')
    return run_atlas("toyprov>=1.1", downstream_files=[listed], cache_dir=cache, available=toy.VERSIONS)
