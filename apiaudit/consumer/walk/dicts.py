"""What a dict holds as the code changes it: the keys known, and whether others may be there.

A name or `self.X` holding a `DictValue` (a literal, `dict(...)`) keeps its known keys through
`d["k"] = v`, `d.update(...)`, `d.pop("k")`, `d.setdefault(...)`, `d.clear()` and `del d["k"]`;
passed to a function, aliased or touched by an unknown method, it escapes and its keys are no
longer known. A `**d` splat then binds the keys known (`Evaluator`'s call shapes). A name
holding a `ConstMap` (a table of literals) or a `ConstItems` (a list or set of literals) is
forgotten on any change or escape.
"""

from __future__ import annotations

import ast

from apiaudit.consumer.values import UNKNOWN, ConstItems, ConstMap, DictValue
from apiaudit.consumer.walk.evaluate import Evaluator
from apiaudit.consumer.walk.scopes import Scope, forget_self_attr, is_self, set_self_attr
from apiaudit.consumer.walk.state import WalkState

_DICT_MUTATIONS = frozenset({"update", "pop", "setdefault", "clear", "popitem"})
_DICT_READS = frozenset({"get", "items", "keys", "values", "copy", "__contains__", "__getitem__"})


class Dicts:
    """The dicts of one module's walk."""

    __slots__ = ("state", "values")

    def __init__(self, state: WalkState, values: Evaluator):
        self.state = state
        self.values = values

    def holder(self, node, scope: Scope):
        """(current dict value, writer) for a name or `self.X` holding a DictValue."""
        if isinstance(node, ast.Name):
            current = scope.env.lookup(node.id)
            if isinstance(current, DictValue):
                return current, lambda v: scope.env.vars.__setitem__(node.id, v)
            return None
        if isinstance(node, ast.Attribute) and scope.cls is not None and is_self(node.value, scope):
            current = scope.cls.attr_values.get(node.attr)
            if isinstance(current, DictValue):
                if not scope.function.endswith(".__init__"):
                    return current, lambda v: forget_self_attr(node, scope)
                return current, lambda v: set_self_attr(scope, node.attr, v, replace_ok=True)
        return None

    def forget_table(self, node, scope: Scope) -> bool:
        """A name holding a `ConstMap` or `ConstItems` that the code changes (an item set or
        deleted, a method other than a read, passed on): its items are no longer known (True)."""
        if isinstance(node, ast.Name) and isinstance(scope.env.lookup(node.id), (ConstMap, ConstItems)):
            scope.env.vars[node.id] = UNKNOWN
            return True
        return False

    def effects(self, call: ast.Call, scope: Scope) -> bool:
        """What a call does to the dicts it touches: a known mutation, or an escape (passed to a
        function, or an unknown method) after which its keys are no longer known. True where
        it changed what a name or `self.X` holds."""
        if not self.state.found.dicts_seen:
            return False
        changed = False
        func = call.func
        if type(func) is ast.Attribute and func.attr not in _DICT_READS:
            changed = self.forget_table(func.value, scope)
        for arg in call.args:
            changed = self._escapes(arg.value if isinstance(arg, ast.Starred) else arg, scope) or changed
        for kw in call.keywords:
            if kw.arg is not None:
                changed = self._escapes(kw.value, scope) or changed
        if type(func) is ast.Attribute and (holder := self.holder(func.value, scope)) is not None:
            changed = True
            if func.attr in _DICT_MUTATIONS:
                self._mutation(call, scope)
            elif func.attr not in _DICT_READS:
                holder[1](DictValue(frozenset(), True))
        return changed

    def _escapes(self, arg: ast.expr, scope: Scope) -> bool:
        """A name or `self.X` passed to a call: a table it holds is forgotten, a dict's keys are no
        longer known (True where that changed what it holds). Any other argument (a literal, a
        call) holds nothing a name keeps."""
        if type(arg) is ast.Name:
            # `forget_table` and `holder` at once: one lookup of the name
            held = scope.env.lookup(arg.id)
            if isinstance(held, (ConstMap, ConstItems)):
                scope.env.vars[arg.id] = UNKNOWN
                return True
            if isinstance(held, DictValue):
                scope.env.vars[arg.id] = DictValue(frozenset(), True)
                return True
        elif type(arg) is ast.Attribute:  # `self.X` holding a dict (no table is held there)
            holder = self.holder(arg, scope)
            if holder is not None:
                holder[1](DictValue(frozenset(), True))
                return True
        return False

    def _mutation(self, call: ast.Call, scope: Scope) -> None:
        """`d.update(...)`, `d.pop("k")`, `d.setdefault("k", v)`, `d.clear()` on a known dict."""
        if not isinstance(call.func, ast.Attribute):
            return
        holder = self.holder(call.func.value, scope)
        if holder is None:
            return
        current, write = holder
        method = call.func.attr
        if method == "update":
            write(self.values.dict_of_arguments(call, scope, current))
        elif method in ("pop", "setdefault") and call.args:
            key = call.args[0]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                keys = current.keys - {key.value} if method == "pop" else current.keys | {key.value}
                write(DictValue(keys, current.open))
            elif method == "setdefault":
                write(DictValue(current.keys, True))
            else:
                write(DictValue(frozenset(), True))
        elif method == "clear":
            write(DictValue(frozenset(), False))
        elif method in ("popitem",):
            write(DictValue(frozenset(), True))
