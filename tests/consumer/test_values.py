"""Values and their join: what a name holds after two branches meet."""

from apiaudit.consumer.records import ImportRef, Root, Step
from apiaudit.consumer.values import (
    UNBOUND,
    UNKNOWN,
    Chain,
    Const,
    DictValue,
    ImportChoice,
    OneOf,
    join,
)


def test_the_same_value_is_kept_and_different_constants_are_unknown():
    assert join(Const(1), Const(1)) == Const(1)
    assert join(Const(1), Const(2)) is UNKNOWN
    assert join(None, Const(1)) is UNKNOWN  # unbound on one side


def test_dicts_keep_the_keys_both_hold_and_open_when_they_differ():
    assert join(DictValue(frozenset({"a", "b"})), DictValue(frozenset({"a", "b"}))) == DictValue(frozenset({"a", "b"}))
    assert join(DictValue(frozenset({"a", "b"})), DictValue(frozenset({"a"}))) == DictValue(frozenset({"a"}), True)
    assert join(DictValue(frozenset({"a"}), True), DictValue(frozenset({"a"}))).open


def test_chains_that_differ_only_in_what_was_already_checked_are_one_chain():
    a = Chain(Root("symbol", "p.A"), (Step("call", check=True),))
    b = Chain(Root("symbol", "p.A"), (Step("call", check=False),))
    assert join(a, b) == a
    # Different chains: the name holds one of them (bindings and checks follow each).
    other = Chain(Root("symbol", "p.B"))
    assert join(a, other) == OneOf((a, other))
    assert join(join(a, other), a) == OneOf((a, other))
    assert join(a, UNKNOWN) is UNKNOWN


def test_import_choices_join_side_by_side():
    ref = ImportRef("p.new", "x", 2)
    one = ImportChoice(Chain(Root("symbol", "p.new.x")), UNBOUND, (ref,), "ImportError", ref)
    assert join(one, one) == one
    two = ImportChoice(Chain(Root("symbol", "p.new.x")), Const(None), (ref,), "ImportError", ref)
    assert join(one, two).fallback is UNKNOWN
