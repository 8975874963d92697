"""The rule files' bytes (apiaudit/recipes/files.py): what the whole-scan key knows of the rules."""

from __future__ import annotations

import pytest

from apiaudit.errors import InputError
from apiaudit.recipes.files import bundled_rules_dir, rule_files, rules_digest


def test_the_digest_follows_every_rule_file_byte(tmp_path):
    (tmp_path / "a.toml").write_text('[provider]\nname = "x"\n')
    first = rules_digest([tmp_path])
    assert rules_digest([tmp_path]) == first
    (tmp_path / "a.toml").write_text('[provider]\nname = "y"\n')
    changed = rules_digest([tmp_path])
    assert changed != first
    (tmp_path / "b.toml").write_text("")
    assert rules_digest([tmp_path]) not in (first, changed)
    (tmp_path / "notes.txt").write_text("not a rule file")
    assert rules_digest([tmp_path]) == rules_digest([tmp_path])


def test_the_bundled_rules_count_unless_left_out(tmp_path):
    assert rule_files(bundled_rules_dir())
    assert rules_digest([]) != rules_digest([], include_bundled=False)
    # A file moved from one --rules directory to the next is a different set of rules (load order).
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    (one / "a.toml").write_text("")
    before = rules_digest([one, two], include_bundled=False)
    (one / "a.toml").rename(two / "a.toml")
    assert rules_digest([one, two], include_bundled=False) != before


def test_a_missing_rules_directory_is_the_loaders_error(tmp_path):
    with pytest.raises(InputError, match="rules directory does not exist"):
        rules_digest([tmp_path / "nowhere"])
