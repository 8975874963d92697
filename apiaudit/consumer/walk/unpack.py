"""Unpacking: what each target of `a, b, *rest = value` holds, and what a consumer method's
`return a, b, *rest` gives the unpacking of its call (`ReturnedItems`). Apart from the statement
walk because the item and length arithmetic is its own concern."""

from __future__ import annotations

import ast
from dataclasses import replace

from apiaudit.consumer.records import Step
from apiaudit.consumer.values import UNKNOWN, Chain, ReturnedItems, Value, has_chain, step_over
from apiaudit.consumer.walk.scopes import Scope


def unpacked(targets: list[ast.expr], value: Value | None) -> list[Value | None]:
    """What each target of `a, b, *rest = value` holds: the items before a starred target are the
    value's items by their index (and, with no starred target, the value must have exactly that
    many: the step's `arity`); the starred one holds the slice it takes (`"2:"`). What a consumer
    method returns (`ReturnedItems`) gives its own items, as its display and the value the
    method unpacked say (`_returned_item`)."""
    star = next((i for i, t in enumerate(targets) if isinstance(t, ast.Starred)), None)
    after = len(targets) - star - 1 if star is not None else 0
    if isinstance(value, ReturnedItems):
        return [_returned_item(value, i, len(targets)) if star is None else None for i in range(len(targets))]
    if value is None or not has_chain(value):
        return [None] * len(targets)
    out: list[Value | None] = []
    for index in range(len(targets)):
        if star is None or index < star:
            step = Step("subscript", name=str(index), check=False, arity=None if star is not None else len(targets))
        elif index == star:
            step = Step("subscript", name=f"{index}:" + (f"-{after}" if after else ""), check=False)
        else:
            out.append(None)  # after a starred target: counted from the end, not followed
            continue
        item = step_over(value, step)
        out.append(item if has_chain(item) else None)
    return out


def _returned_item(value: ReturnedItems, index: int, count: int) -> Value | None:
    """Item `index` of `count` targets unpacked from what a consumer method returns. Its display's
    items are known where they are items of one value the method unpacked, and so is the number
    of items that value must have for this unpacking to work: the display's own items plus the
    slice its `*rest` took (`return a, b, *rest` of `a, b, *rest = v`: as many as `v`). Any other
    length (a display ending with `*rest` of another value): not known, nor are its items."""
    items = value.items
    if value.rest is None:
        if count != len(items):
            return None  # ValueError at the unpacking: what follows never runs
        chosen = items[index]
        return replace(chosen, steps=chosen.steps[:-1] + (replace(chosen.steps[-1], via=value.via),)) if isinstance(chosen, Chain) else None
    rest = value.rest
    source, taken = rest.steps[:-1], rest.steps[-1].name or ""
    start, _, dropped = taken.partition(":")
    # len(display) == len(items) + (len(v) - start - dropped): `v` must have this many items
    arity = count - len(items) + int(start) + (int(dropped.lstrip("-")) if dropped else 0)
    if arity < int(start):
        return None
    if index < len(items):
        chosen = items[index]
        if not isinstance(chosen, Chain) or chosen.root != rest.root or _kinds(chosen.steps[:-1]) != _kinds(source):
            return None  # not an item of the value the slice is of: the length is not tied to it
        step = chosen.steps[-1]
    else:
        chosen, step = rest, Step("subscript", name=str(int(start) + index - len(items)), check=False)
    return Chain(chosen.root, chosen.steps[:-1] + (replace(step, arity=arity, via=value.via),))


def _kinds(steps: tuple[Step, ...]) -> tuple:
    return tuple((s.kind, s.name) for s in steps)


def returned_items(node: ast.expr | None, scope: Scope) -> Value:
    """What a `return` of a method returns, where it is a tuple display whose items are names bound
    by unpacking (`return a, b, *rest`): `ReturnedItems`; each other item is unknown, and a starred
    item before the last, or one that is no slice a starred target took, leaves the length unknown
    (the whole: not known)."""
    if not isinstance(node, ast.Tuple):
        return UNKNOWN
    items: list[Value] = []
    rest: Chain | None = None
    for position, elt in enumerate(node.elts):
        named = elt.value if isinstance(elt, ast.Starred) else elt
        held = scope.env.lookup(named.id) if isinstance(named, ast.Name) else None
        taken = held.steps[-1].name if isinstance(held, Chain) and held.steps and held.steps[-1].kind == "subscript" else None
        if isinstance(elt, ast.Starred):
            if position != len(node.elts) - 1 or not isinstance(held, Chain) or taken is None or ":" not in taken:
                return UNKNOWN  # a starred item before the last, or one of unknown length
            rest = held
        else:
            items.append(held if isinstance(held, Chain) and taken is not None and taken.isdigit() else UNKNOWN)
    if not any(isinstance(i, Chain) for i in items):
        return UNKNOWN
    return ReturnedItems(tuple(items), rest, "")
