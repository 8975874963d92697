"""The atlas over a toy provider with a known history (release cache entries, no network)."""

from __future__ import annotations

import pytest

from apiaudit.errors import InputError
from apiaudit.impact.atlas import AtlasCell, first_broken, run_atlas
from tests.matrix import matrix_toy as toy


def test_each_downstream_gets_a_cell_per_release(toy_atlas):
    assert toy_atlas.releases == ("1.1", "1.2", "1.3", "1.4")
    user, gone = toy_atlas.rows
    assert [c.outcome for c in user.cells] == ["clean", "clean", "breaks", "breaks"]
    assert user.first_broken == toy.FIRST_CHANGED
    broken = user.cells[2]
    assert broken.errors == sum(f.blocking for f in broken.findings) == 4  # connect(host=): host unknown, address missing; Client() without retries; .send
    assert {f.rule for f in broken.findings} == {"unexpected-keyword", "missing-required", "attribute-missing"}, broken.findings
    assert broken.findings[0].site.startswith("toyuser/main.py:")


def test_a_downstream_that_cannot_be_read_is_a_row_of_unreadable_cells(toy_atlas):
    gone = toy_atlas.rows[1]
    assert gone.failure and {c.outcome for c in gone.cells} == {"unreadable"} and gone.first_broken is None


def test_the_first_broken_release_follows_one_that_worked():
    cells = [AtlasCell("1", "breaks", 1), AtlasCell("2", "clean"), AtlasCell("3", "unreadable"), AtlasCell("4", "breaks", 2)]
    assert first_broken(cells) == "4"
    assert first_broken([AtlasCell("1", "breaks", 1), AtlasCell("2", "breaks", 1)]) is None


def test_a_downstream_that_does_not_use_the_provider_is_a_row_of_unused_cells(tmp_path):
    """Not a downstream that cannot be read: each cell says it does not use the provider."""
    import json

    from apiaudit.impact.atlas_page import render_atlas
    from tests.impact.conftest import downstream_path

    cache = tmp_path / "cache"
    toy.publish(cache)
    unused = downstream_path("impact_unused")  # imports nothing of toyprov either
    listed = tmp_path / "downstream.toml"
    listed.write_text(f'replace-bundled = true\ndownstream = ["{unused}"]\n')
    atlas = run_atlas("toyprov>=1.3", downstream_files=[listed], cache_dir=cache, available=toy.VERSIONS)
    (row,) = atlas.rows
    assert row.label == "impact_unused" and [c.outcome for c in row.cells] == ["unused", "unused"]
    assert row.failure is None and row.first_broken is None and all(c.failure is None and not c.findings for c in row.cells)
    doc = json.loads(render_atlas(atlas, "json"))
    assert doc["schema_version"] == "1.1" and doc["counts"] == {"unused": 2}
    assert [c["outcome"] for c in doc["downstreams"][0]["cells"]] == ["unused", "unused"]


def test_unused_cells_are_no_failure_to_read_and_count_as_clean_before_a_break():
    from apiaudit.impact.atlas import _row
    from apiaudit.impact.tasks import TaskOutcome

    never = TaskOutcome(failure="down never uses prov (packages prov), ...", no_report="unused")
    gone = TaskOutcome(failure="down==1: no such release", no_report="unreadable")
    assert _row("down==1", ("1", "2"), [never, never], None).failure is None
    assert _row("down==1", ("1", "2"), [gone, gone], None).failure == "down==1: no such release"
    assert first_broken([AtlasCell("1", "unused"), AtlasCell("2", "breaks", 1)]) == "2"
    assert first_broken([AtlasCell("1", "unreadable"), AtlasCell("2", "breaks", 1)]) is None


def test_a_bad_range_is_bad_input(tmp_path):
    with pytest.raises(InputError):
        run_atlas("toyprov>=2,<1", cache_dir=tmp_path, available=toy.VERSIONS)
