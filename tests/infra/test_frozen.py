"""`@record` (infra/frozen.py): a frozen dataclass that equals, hashes and prints as one does."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from apiaudit.infra.frozen import record


@record
class Point:
    x: int
    label: str = "p"
    tags: tuple[str, ...] = ()
    note: str = dataclasses.field(default="", compare=False, repr=False)


@dataclasses.dataclass(frozen=True)
class PointDataclass:
    x: int
    label: str = "p"
    tags: tuple[str, ...] = ()
    note: str = dataclasses.field(default="", compare=False, repr=False)


@record
class Empty:
    pass


@record(slots=True)
class Slotted:
    value: object


@record
class OwnEquality:
    value: int

    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


@pytest.mark.parametrize("args", [(1,), (2, "q", ("a", "b")), (3, "r", (), "unseen")])
def test_equality_hash_and_repr_are_a_frozen_dataclasss(args):
    made, reference = Point(*args), PointDataclass(*args)
    assert repr(made) == repr(reference).replace("PointDataclass", "Point")
    assert hash(made) == hash(reference)
    assert made == Point(*args) and made != Point(args[0] + 1)
    assert Point(1, note="a") == Point(1, note="b") and hash(Point(1, note="a")) == hash(Point(1, note="b"))
    assert made.__eq__(reference) is NotImplemented  # another class, even with the same fields


def test_it_is_a_frozen_dataclass_to_everything_that_asks():
    point = Point(1, tags=("a",))
    assert dataclasses.is_dataclass(point) and type(point).__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert [f.name for f in dataclasses.fields(point)] == ["x", "label", "tags", "note"]
    assert dataclasses.replace(point, x=2) == Point(2, tags=("a",))
    assert pickle.loads(pickle.dumps(point)) == point
    assert Point.__match_args__ == ("x", "label", "tags", "note")
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 3  # type: ignore[misc]
    assert repr(Empty()) == "Empty()" and Empty() == Empty() and hash(Empty()) == hash(())
    assert Slotted.__slots__ == ("value",) and {Slotted((1,)): 1}[Slotted((1,))] == 1
    assert repr(Slotted("v")) == "Slotted(value='v')"


def test_a_method_the_class_defines_is_kept():
    assert OwnEquality(1) == OwnEquality(2)
    assert hash(OwnEquality(1)) != hash(OwnEquality(1))  # object's, as the body says
