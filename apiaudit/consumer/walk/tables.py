"""Tables of literals the walk folds: a dict comprehension over a literal tuple whose keys and
values fold (`{v: version("prov").startswith(v) for v in ("0.10.", "0.11.")}`), read by
subscript, `any`/`all` of a generator over a literal tuple or of a display, and list and set
displays of literals (`v in ["0.8.5", "0.9.0"]`): as Python would on the audited release, so
that a version table selects its branch.

Functions of the `Evaluator` (`walk/evaluate.py`), which hands them its `value` to read the
items with: they sit below it and import nothing of it.
"""

from __future__ import annotations

import ast
from typing import Protocol

from apiaudit.consumer import guards as g
from apiaudit.consumer.values import RELEASE_VALUES, UNKNOWN, Const, ConstItems, ConstMap, Value, VersionDerived
from apiaudit.consumer.walk.scopes import Scope
from apiaudit.consumer.walk.state import Found

MAX_UNROLLED = 32  # a comprehension over a literal tuple longer than this is not folded
MAX_ITEMS = 64  # a list or set display longer than this is not folded


class ReadValue(Protocol):
    def __call__(self, node: ast.AST | None, scope: Scope, fresh: bool = False, depth: int = 0) -> Value: ...


def unrolled(value: ReadValue, generators: list[ast.comprehension], scope: Scope, depth: int) -> list[Scope] | None:
    """One scope per item of `for NAME in <literal tuple> [if <test>]` (a lone generator), the
    name bound to the item, where every `if` folds true; None when it does not fold."""
    if len(generators) != 1 or depth > g.MAX_DEPTH:
        return None
    loop = generators[0]
    items = value(loop.iter, scope, depth=depth + 1)
    if loop.is_async or not isinstance(loop.target, ast.Name) or not isinstance(items, Const) or not isinstance(items.value, tuple):
        return None
    if len(items.value) > MAX_UNROLLED:
        return None
    scopes: list[Scope] = []
    for item in items.value:
        inner = scope.child()
        inner.env.vars[loop.target.id] = Const(item)
        kept = [value(test, inner, depth=depth + 1) for test in loop.ifs]
        if not all(isinstance(k, Const) for k in kept):
            return None
        if all(k.value for k in kept if isinstance(k, Const)):
            scopes.append(inner)
    return scopes


def folded_map(value: ReadValue, node: ast.DictComp, scope: Scope, depth: int, found: Found) -> Value:
    """A dict comprehension over a literal tuple whose keys and values all fold: a `ConstMap`."""
    scopes = unrolled(value, node.generators, scope, depth)
    if scopes is None:
        return UNKNOWN
    items: list[tuple[object, object]] = []
    for inner in scopes:
        key, held = value(node.key, inner, depth=depth + 1), value(node.value, inner, depth=depth + 1)
        if not isinstance(key, Const) or not isinstance(held, Const):
            # computed from a release the engine does not know: what it selects stays undecided
            return VersionDerived() if isinstance(key, Const) and isinstance(held, RELEASE_VALUES) else UNKNOWN
        items.append((key.value, held.value))
    found.dicts_seen = True  # its changes are followed (`Dicts.forget_table`)
    return ConstMap(tuple(items))


def table_item(value: ReadValue, table: Value, key_node: ast.expr, scope: Scope, depth: int) -> Value | None:
    """`table[key]` of a folded table (a key it lacks raises there: not folded); None where
    `table` is not one."""
    if not isinstance(table, ConstMap):
        return None
    key, items = value(key_node, scope, depth=depth + 1), dict(table.items)
    return Const(items[key.value]) if isinstance(key, Const) and key.value in items else UNKNOWN


def folded_any_all(value: ReadValue, is_any: bool, arg: ast.expr, scope: Scope, depth: int) -> Value:
    """`any(...)` / `all(...)` of a generator over a literal tuple, or of a list or tuple display,
    whose items all fold: folded as Python would. Anything else is not."""
    if isinstance(arg, (ast.GeneratorExp, ast.ListComp)):
        scopes = unrolled(value, arg.generators, scope, depth)
        if scopes is None:
            return UNKNOWN
        items = [value(arg.elt, inner, depth=depth + 1) for inner in scopes]
    elif isinstance(arg, (ast.List, ast.Tuple)) and not any(isinstance(e, ast.Starred) for e in arg.elts):
        items = [value(e, scope, depth=depth + 1) for e in arg.elts]
    else:
        return UNKNOWN
    if not all(isinstance(i, Const) for i in items):
        return VersionDerived() if all(isinstance(i, (Const, *RELEASE_VALUES)) for i in items) else UNKNOWN
    truths = [bool(i.value) for i in items if isinstance(i, Const)]
    return Const(any(truths) if is_any else all(truths))


def literal_items(value: ReadValue, node: ast.List | ast.Set, scope: Scope, depth: int, found: Found) -> Value:
    """A list or set display whose items all fold to literals (a supported-versions list): a
    `ConstItems`, so that `version in SUPPORTED` folds. Anything else is not."""
    if len(node.elts) > MAX_ITEMS or any(isinstance(e, ast.Starred) for e in node.elts):
        return UNKNOWN
    items = [value(e, scope, depth=depth + 1) for e in node.elts]
    if not all(isinstance(i, Const) for i in items):
        return UNKNOWN
    found.dicts_seen = True  # its changes are followed (`Dicts.forget_table`)
    return ConstItems(tuple(i.value for i in items if isinstance(i, Const)))
