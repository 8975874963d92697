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


def test_a_bad_range_is_bad_input(tmp_path):
    with pytest.raises(InputError):
        run_atlas("toyprov>=2,<1", cache_dir=tmp_path, available=toy.VERSIONS)
