"""What a module `__getattr__` (PEP 562) serves, read from its source, never run.

Python calls a module's `__getattr__(name)` for a name the module does not bind. The reading
follows the function's tests on `name`, in order:

- `if name == "X":`, `if name in ("X", "Y"):` serve those names; `if name in MAP:` serves the
  keys of MAP, a dict (or list, tuple, set of strings) literal bound at module level or in the
  function, with the keys import-time statements add (`MAP["K"] = ...`, `MAP.update({...})`,
  `MAP |= {...}`, a `**OTHER` spread of another such literal); `name in globals()` serves what
  the module binds anyway;
- `if name not in MAP: raise AttributeError(...)` serves the keys of MAP by what follows it;
- what a branch returns is its target where it can be named: MAP's string value for the name
  (`".mod:Name"`, a lazy-import map), or a name the branch imports (`from m import f; return f`,
  a deprecation shim) or the module binds by import, def or class;
- the function is closed when every name it does not serve reaches `raise AttributeError`; one
  that returns for any name may serve anything;
- a branch that warns with a deprecation category (`warnings.warn(msg, DeprecationWarning)`)
  serves its names deprecated, with that message.

Where the served names cannot be read whole (a computed key, a map changed where a reader
cannot follow, a test on `name` other than those above), `partial` says why: a name outside
those read is then likely missing, not proven missing.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from apiaudit.infra.astutil import absolute_import
from apiaudit.infra.frozen import record
from apiaudit.provider import deprecation_marks

# `name in globals()`: the module's own bindings, which a lookup finds before __getattr__ runs.
_OWN = "<globals>"


@record
class Service:
    """What the module's `__getattr__` answers: each name it serves with its target (an import
    spec such as "pkg.mod:Name", or None where the value cannot be named), whether every other
    name raises AttributeError (`closed`), and why the served names may be more than those read."""

    targets: tuple[tuple[str, str | None], ...]
    closed: bool
    partial: str | None = None
    deprecated: tuple[tuple[str, str], ...] = ()  # names served with a DeprecationWarning: its message


@dataclass
class _Map:
    """A literal of names (a dict's keys, a list's items) and the string values of a dict."""

    keys: dict[str, str | None]
    partial: str | None = None

    def absorb(self, other: _Map) -> None:
        """Take another literal's names (the first value of a key stays) and its doubt."""
        for key, value in other.keys.items():
            self.keys.setdefault(key, value)
        self.partial = self.partial or other.partial


def read(module: ast.Module, module_path: str, package: str) -> Service | None:
    """The service of the module's `__getattr__` (None: it defines none at module level)."""
    defs = [n for n in _top_level(module.body) if isinstance(n, ast.FunctionDef) and n.name == "__getattr__"]
    if not defs:
        return None
    maps = _module_maps(module, package)
    bound = _module_bindings(module.body, module_path, package)
    targets: dict[str, str | None] = {}
    deprecated: dict[str, str] = {}
    closed = True
    partial: str | None = None
    for func in defs:
        reader = _Reader(func, module_path, package, maps, bound)
        served, ends_closed, why = reader.flow(_skip_docstring(func.body), None)
        for name, target in served.items():
            targets.setdefault(name, target)
        for name, message in reader.deprecated.items():
            deprecated.setdefault(name, message)
        closed = closed and ends_closed
        partial = partial or why
    return Service(tuple(sorted(targets.items())), closed, partial, tuple(sorted(deprecated.items())))


class _Reader:
    def __init__(self, func: ast.FunctionDef, module_path: str, package: str, maps: dict[str, _Map], bound: dict[str, str]):
        args = func.args.posonlyargs + func.args.args
        self.param = args[0].arg if args else ""
        self.module_path, self.package = module_path, package
        self.maps = dict(maps)
        self.bound = bound
        self.imported: dict[str, str] = {}  # names the function body imports -> their spec
        self.looked_up: dict[str, _Map] = {}  # `value = MAP.get(name)`: value -> MAP
        self.deprecated: dict[str, str] = {}  # names whose branch warns with a deprecation category

    def flow(self, stmts: list[ast.stmt], restrict: _Map | None) -> tuple[dict[str, str | None], bool, str | None]:
        """(names served with their targets, closed, partial) from here to the function's end."""
        served: dict[str, str | None] = {}
        partial: str | None = None
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self.imported.update(_import_specs(stmt, self.package))
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                local = _literal_map(stmt.value, {}) if stmt.value is not None else None
                looked_up = self._lookup(stmt.value)
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    if isinstance(target, ast.Name) and local is not None:
                        self.maps[target.id] = local
                    if isinstance(target, ast.Name) and looked_up is not None:
                        self.looked_up[target.id] = looked_up
            elif isinstance(stmt, ast.If):
                names, negated = self._test(stmt.test)
                after = stmts[i + 1 :]
                falls_through = not _terminates(stmt.body)
                # Each way on from here: (statements, the names that take it); None: they get an answer.
                ways: list[tuple[list[ast.stmt], _Map | None] | None] = []
                if names is None:
                    if _returns(stmt.body):
                        partial = partial or f"its __getattr__ tests `{_text(stmt.test)}`"
                    ways.append((stmt.orelse + after, restrict))
                    if falls_through:
                        ways.append((after, restrict))
                elif not negated:
                    if _returns(stmt.body):
                        self._serve(stmt.body, names, served)
                        partial = partial or names.partial
                    ways.append((stmt.orelse + after, restrict))
                    if falls_through:
                        ways.append((after, names))
                else:  # `if name not in MAP:` the body is for the names outside MAP
                    if falls_through:
                        ways.append((after, restrict))
                    elif not _raises_attribute_error(stmt.body):
                        ways.append(None)  # answered (or another exception): any name may pass
                    ways.append((stmt.orelse + after, names))
                closed = True
                for way in ways:
                    if way is None:
                        closed = False
                        continue
                    more, way_closed, why = self.flow(*way)
                    for name, spec in more.items():
                        served.setdefault(name, spec)
                    closed = closed and way_closed
                    partial = partial or why
                return served, closed, partial
            elif isinstance(stmt, ast.Return):
                if restrict is None:
                    return served, False, partial  # any name gets an answer
                self._serve([stmt], restrict, served)
                return served, True, partial or restrict.partial
            elif isinstance(stmt, ast.Raise):
                return served, _raises_attribute_error([stmt]), partial
            elif _returns([stmt]):
                # A return inside try/with/for: the names it answers are not read.
                partial = partial or f"its __getattr__ returns from a `{type(stmt).__name__.lower()}` block (line {stmt.lineno})"
        return served, False, partial  # falls off the end: None for any name

    def _serve(self, body: list[ast.stmt], names: _Map, served: dict[str, str | None]) -> None:
        """The names a block answers, with what it returns for each (and its deprecation)."""
        target = self._returned(body, names)
        warning = deprecation_marks.warning_in(body)
        for name in names.keys:
            if name != _OWN:
                served.setdefault(name, target(name))
                if warning:
                    self.deprecated.setdefault(name, warning)

    def _test(self, test: ast.expr) -> tuple[_Map | None, bool]:
        """The names a test on the parameter selects, and whether it is negated (None: unread)."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            names, negated = self._test(test.operand)
            return names, not negated
        if isinstance(test, ast.BoolOp):
            parts = [self._test(v) for v in test.values]
            read = [(n, neg) for n, neg in parts if n is not None]
            if isinstance(test.op, ast.And) and read and all(not neg for _, neg in read):
                # Every side must hold: the names one side selects include those served.
                return read[0][0], False
            if isinstance(test.op, ast.Or) and len(read) == len(parts) and all(not neg for _, neg in read):
                keys: dict[str, str | None] = {}
                partial = None
                for names, _ in read:
                    assert names is not None
                    keys.update(names.keys)
                    partial = partial or names.partial
                return _Map(keys, partial), False
            return None, False
        if isinstance(test, ast.Name) and test.id in self.looked_up:
            return self.looked_up[test.id], False  # `if value:` after `value = MAP.get(name)`
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and len(test.comparators) == 1):
            return None, False
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if (
            isinstance(op, (ast.Is, ast.IsNot))
            and isinstance(left, ast.Name)
            and left.id in self.looked_up
            and isinstance(right, ast.Constant)
            and right.value is None
        ):
            return self.looked_up[left.id], isinstance(op, ast.Is)
        if isinstance(op, (ast.Eq, ast.NotEq)):
            if _is_name(right, self.param):
                left, right = right, left
            if _is_name(left, self.param) and isinstance(right, ast.Constant) and isinstance(right.value, str):
                return _Map({right.value: None}), isinstance(op, ast.NotEq)
            return None, False
        if isinstance(op, (ast.In, ast.NotIn)) and _is_name(left, self.param):
            return self._container(right), isinstance(op, ast.NotIn)
        return None, False

    def _container(self, node: ast.expr) -> _Map | None:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "keys" and not node.args:
            node = node.func.value
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "globals" and not node.args:
            return _Map({_OWN: None})
        if isinstance(node, ast.Name):
            found = self.maps.get(node.id)
            if found is None:
                return _Map({}, f"its __getattr__ serves the names in `{node.id}`, which is not a literal")
            return found
        literal = _literal_map(node, self.maps)
        return literal

    def _lookup(self, node: ast.expr | None) -> _Map | None:
        """`MAP.get(name)` (with a default of None or none): the map looked up by the parameter."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"):
            return None
        if not node.args or not _is_name(node.args[0], self.param) or node.keywords:
            return None
        if len(node.args) == 2 and not (isinstance(node.args[1], ast.Constant) and node.args[1].value is None):
            return None
        return self._container(node.func.value) if len(node.args) <= 2 else None

    def _returned(self, body: list[ast.stmt], names: _Map):
        """The target of each name the block returns a value for."""
        returns = [n for n in _walk(body) if isinstance(n, ast.Return)]
        value = returns[-1].value if len(returns) == 1 else None
        imported = dict(self.imported)
        for node in _walk(body):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                imported.update(_import_specs(node, self.package))

        def target(name: str) -> str | None:
            if isinstance(value, ast.Name) and value.id != self.param:
                return imported.get(value.id) or self.bound.get(value.id)
            given = names.keys.get(name)  # the map's string for the name: where it is imported from
            if given and ":" not in given and _getattr_of(value, self.param):
                # `getattr(import_module(MAP[name]), name)`: a dotted module path is where the name
                # is; a bare word may be relative to anything the function makes of it.
                return f"{given}:{name}" if "." in given else None
            return given

        return target


# ------------------------------------------------------------------ module-level maps
def _module_maps(module: ast.Module, package: str) -> dict[str, _Map]:
    """Every module-level name bound to a literal of names, with the keys import-time statements
    add; a map changed anywhere else (a function, a loop, a computed key) is partial."""
    maps: dict[str, _Map] = {}
    handled: set[int] = set()
    for stmt in _top_level(module.body):
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            literal = _literal_map(stmt.value, maps)
            for target in targets:
                if isinstance(target, ast.Name):
                    if literal is not None:
                        old = maps.get(target.id)
                        if old is not None:  # bound twice (an if/else): either may hold
                            literal = _Map({**old.keys, **literal.keys}, old.partial or literal.partial)
                        maps[target.id] = literal
                        handled.add(id(stmt))
                    elif target.id in maps:
                        maps[target.id].partial = f"`{target.id}` is rebound (line {stmt.lineno})"
                        handled.add(id(stmt))
                elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id in maps:
                    key = target.slice
                    entry = maps[target.value.id]
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        entry.keys.setdefault(key.value, _string(stmt.value))
                    else:
                        entry.partial = f"a key of `{target.value.id}` is computed (line {stmt.lineno})"
                    handled.add(id(stmt))
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id in maps:
            _add(maps, stmt.target.id, _literal_map(stmt.value, maps), stmt.lineno)
            handled.add(id(stmt))
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            func = call.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in maps:
                handled.add(id(call))
                if func.attr == "update" and len(call.args) <= 1:
                    added = _literal_map(call.args[0], maps) if call.args else _Map({})
                    if added is not None:
                        added = _keywords(call.keywords, added)
                    _add(maps, func.value.id, added, stmt.lineno)
                elif func.attr in ("setdefault", "append", "add") and call.args:
                    added_key = _string(call.args[0])
                    _add(maps, func.value.id, _Map({added_key: None}) if added_key is not None else None, stmt.lineno)
                elif func.attr == "extend" and call.args:
                    _add(maps, func.value.id, _literal_map(call.args[0], maps), stmt.lineno)
                elif func.attr not in ("get", "keys", "values", "items", "copy", "__contains__"):
                    handled.discard(id(call))
    # Changes elsewhere (in a function, a loop, through a computed key) are not followed.
    for node in ast.walk(module):
        if id(node) in handled:
            continue
        changed = _changed_map(node)
        if changed in maps and maps[changed].partial is None:
            maps[changed].partial = f"`{changed}` is changed where a reader cannot follow (line {getattr(node, 'lineno', '?')})"
    return maps


def _changed_map(node: ast.AST) -> str | None:
    """The name whose contents the node changes: `M[k] = v`, `M |= ...`, `M.update(...)`, ..."""
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                return target.value.id
            if isinstance(node, ast.AugAssign) and isinstance(target, ast.Name):
                return target.id
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.attr in ("update", "setdefault", "__setitem__", "append", "extend", "add", "insert", "clear")
    ):
        return node.func.value.id
    return None


def _add(maps: dict[str, _Map], name: str, added: _Map | None, line: int) -> None:
    entry = maps[name]
    if added is None:
        entry.partial = entry.partial or f"keys added to `{name}` are computed (line {line})"
        return
    entry.absorb(added)


def _literal_map(node: ast.expr | None, maps: dict[str, _Map]) -> _Map | None:
    """The names a literal holds: a dict's keys (with their string values), a list's, tuple's or
    set's strings; `dict(...)` with keywords. None: not a literal of names."""
    if isinstance(node, ast.Dict):
        entry = _Map({})
        for key, value in zip(node.keys, node.values):
            if key is None:  # `**OTHER`
                spread = maps.get(value.id) if isinstance(value, ast.Name) else None
                if spread is None:
                    entry.partial = entry.partial or f"a `**{_text(value)}` spread is not a literal (line {node.lineno})"
                    continue
                entry.absorb(spread)
            elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                entry.keys.setdefault(key.value, _string(value))
            else:
                entry.partial = entry.partial or f"a key is computed (line {node.lineno})"
        return entry
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        entry = _Map({})
        for item in node.elts:
            if isinstance(item, ast.Constant) and isinstance(item.value, str):
                entry.keys.setdefault(item.value, None)
            else:
                entry.partial = entry.partial or f"an item is computed (line {node.lineno})"
        return entry
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        return _keywords(node.keywords, _Map({}))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("frozenset", "set", "tuple", "list", "dict")
        and len(node.args) == 1
        and not node.keywords
    ):
        return _literal_map(node.args[0], maps)  # `frozenset({...})`: the literal's names
    if isinstance(node, (ast.DictComp, ast.SetComp, ast.ListComp)):
        return _Map({}, f"its names are computed (line {node.lineno})")
    return None


def _keywords(keywords: list[ast.keyword], entry: _Map) -> _Map:
    for kw in keywords:
        if kw.arg is None:
            entry.partial = entry.partial or f"a `**{_text(kw.value)}` spread is not a literal"
        else:
            entry.keys.setdefault(kw.arg, _string(kw.value))
    return entry


def _string(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


# ------------------------------------------------------------------ small readings
def _module_bindings(body: list[ast.stmt], module_path: str, package: str) -> dict[str, str]:
    """Module-level names bound by import, def or class, as import specs (a variable's value,
    which the module may reassign, is not a target)."""
    bound: dict[str, str] = {}
    for stmt in _top_level(body):
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            bound.update(_import_specs(stmt, package))
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and stmt.name != "__getattr__":
            bound[stmt.name] = f"{module_path}:{stmt.name}"
    return bound


def _import_specs(stmt: ast.Import | ast.ImportFrom, package: str) -> dict[str, str]:
    specs: dict[str, str] = {}
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.asname:
                specs[alias.asname] = alias.name
        return specs
    source = absolute_import(package, stmt.module, stmt.level)
    for alias in stmt.names:
        if alias.name != "*":
            specs[alias.asname or alias.name] = f"{source}:{alias.name}"
    return specs


def _top_level(body: list[ast.stmt]):
    """Module statements, looking inside if/else and try blocks."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _top_level(stmt.body)
            yield from _top_level(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            yield from _top_level(stmt.body)
            for handler in stmt.handlers:
                yield from _top_level(handler.body)
            yield from _top_level(stmt.orelse)


def _walk(body: list[ast.stmt]):
    """The nodes of a block, not entering nested functions, classes or lambdas."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        yield node
        stack.extend(
            child for child in ast.iter_child_nodes(node) if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))
        )


def _returns(body: list[ast.stmt]) -> bool:
    return any(isinstance(node, ast.Return) for node in _walk(body))


def _terminates(body: list[ast.stmt]) -> bool:
    """Whether a block always returns or raises (never reaches the statement after it)."""
    last = body[-1] if body else None
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    return isinstance(last, ast.If) and bool(last.orelse) and _terminates(last.body) and _terminates(last.orelse)


def _raises_attribute_error(body: list[ast.stmt]) -> bool:
    last = body[-1] if body else None
    if not isinstance(last, ast.Raise) or last.exc is None:
        return False
    exc = last.exc.func if isinstance(last.exc, ast.Call) else last.exc
    return isinstance(exc, ast.Name) and exc.id == "AttributeError"


def _skip_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        return body[1:]
    return body


def _getattr_of(node: ast.expr | None, param: str) -> bool:
    """`getattr(<module>, name)`: the attribute of the parameter's own name."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) == 2
        and _is_name(node.args[1], param)
    )


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _text(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."
