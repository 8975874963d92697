"""`cause.py`: each break's provider change, located on NEW (and on OLD)."""

from __future__ import annotations

from apiaudit.recipes.changes import ChangeKind

from tests.impact.conftest import NEW, OLD


def _line(root, location: str) -> str:
    path, line = location.rsplit(":", 1)
    return (root / path).read_text().splitlines()[int(line) - 1].strip()


def _change(result, kind):
    return next(c.change for c in result.by_change if c.change.kind is kind)


def test_a_removed_keyword_is_placed_on_the_constructor_on_both_sides(impact_result):
    change = _change(impact_result, ChangeKind.REMOVED_PARAMETER)
    assert (change.symbol, change.old_name) == ("impactlib.request.Request", "eos_token_id")
    assert _line(NEW, change.location).startswith("def __init__(self, request_id: str, prompt: str, max_tokens")
    assert "eos_token_id" in _line(OLD, change.old_location)
    assert change.before and "eos_token_id" in change.before and change.after and "eos_token_id" not in change.after


def test_a_moved_name_is_placed_where_it_went(impact_result):
    change = _change(impact_result, ChangeKind.MOVED_SYMBOL)
    assert change.location == "impactlib/math_utils.py:1" and change.old_location == "impactlib/utils.py:1"
    assert change.new_name == "impactlib.math_utils.cdiv"


def test_a_grown_abstract_set_is_placed_on_the_new_abstract_member(impact_result):
    change = _change(impact_result, ChangeKind.OTHER)
    assert change.rule == "abstract-unimplemented" and change.new_name == "prepare_inputs"
    # the definition starts at its decorator, as Griffe dates it
    path, line = change.location.rsplit(":", 1)
    lines = (NEW / path).read_text().splitlines()[int(line) - 1 : int(line) + 1]
    assert [text.strip() for text in lines] == ["@abstractmethod", "def prepare_inputs(self, tokens: list[int]) -> list[int]: ..."]
