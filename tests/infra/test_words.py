"""Counts in words: one of a thing is singular."""

from apiaudit.infra.words import counted


def test_one_is_singular_and_every_other_count_plural() -> None:
    assert counted(1, "file") == "1 file"
    assert counted(0, "file") == "0 files"
    assert counted(2, "release") == "2 releases"
    assert counted(1, "fix", "fixes") == "1 fix" and counted(3, "fix", "fixes") == "3 fixes"
