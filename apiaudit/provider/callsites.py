"""The provider's own calls of a method, read from the release's source (the contract it calls).

A consumer that overrides a provider method, or puts a function over one, is called by the
provider with the arguments the provider's call sites pass on that release. Only the methods
a consumer actually overrides are looked up: a bytes search for `.NAME(` picks the few files
worth parsing; in those, a call is kept when its receiver's class is known statically:

- `self.NAME(...)` / `cls.NAME(...)` inside a method of a class (the receiver is that class);
- a parameter or local annotated with a class (`x: Base`, `x: Base | None`);
- `self.attr.NAME(...)` where the class annotates or assigns `attr` (the index's `attribute_type`);
- `f().NAME(...)` / `x = f(); x.NAME(...)` where `f` is annotated `-> Class`.

Anything else (an untyped receiver) is left out: a call on an object of unknown class is no
proof that it reaches the consumer's override. Each call keeps its positional count,
keywords, splats and whether its result is unpacked (`a, b = recv.NAME(...)`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import TYPE_CHECKING

from apiaudit.infra.astutil import module_names, union_members
from apiaudit.provider.records import Found, ProviderCall, SymbolKind

if TYPE_CHECKING:
    from apiaudit.provider.index import ProviderIndex


def find_calls(index: ProviderIndex, methods: Iterable[str]) -> dict[str, tuple[ProviderCall, ...]]:
    """method name -> every provider call of it with a typed receiver, in file and line order."""
    wanted = sorted(set(methods))
    found: dict[str, list[ProviderCall]] = {name: [] for name in wanted}
    needles = [(name, f".{name}(") for name in wanted]
    for module, text in index.loader.source_files():
        present = [name for name, needle in needles if needle in text]
        if not present:
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            continue
        reader = _ModuleCalls(index, module, frozenset(present), module_names(tree, module), text)
        reader.read(tree)
        for call in reader.calls:
            found[call[0]].append(call[1])
    return {name: tuple(calls) for name, calls in found.items()}


class _ModuleCalls:
    def __init__(self, index: ProviderIndex, module: str, methods: frozenset[str], names: dict[str, str], text: str):
        self.lines = text.splitlines()
        self.needles = tuple(f".{m}(" for m in methods)
        self.index = index
        self.module = module
        self.methods = methods
        self.names = names
        self.file = index.loader.relative(index.loader.module_file(module) or module.replace(".", "/") + ".py")
        self.calls: list[tuple[str, ProviderCall]] = []
        self._class_nodes: dict[str, ast.ClassDef] = {}
        # (class, attribute) -> the class every `self.attr = ...` of its methods assigns, asked on demand
        self._attributes: dict[tuple[str, str], str | None] = {}
        self._stores: dict[str, dict[str, list[tuple[str, ast.expr]]]] = {}

    def _attribute_class(self, owner: str, name: str) -> str | None:
        """`self.name = expr` (or `self.name: T = ...`) in the class's methods: the class it holds
        when every assignment that is not `None` agrees (else None)."""
        key = (owner, name)
        if key not in self._attributes:
            self._attributes[key] = None
            seen: set[str | None] = set()
            for kind, expr in self._assignments(owner).get(name, ()):
                seen.add(self._annotation(expr) if kind == "annotation" else self._receiver(expr, None, None, _NO_TYPES))
                if len(seen) > 1 or None in seen:
                    return None
            self._attributes[key] = next(iter(seen)) if seen else None
        return self._attributes[key]

    def _assignments(self, owner: str) -> dict[str, list[tuple[str, ast.expr]]]:
        """attribute -> what its methods store in `self.attribute` (None stores left out), one walk a class."""
        found = self._stores.get(owner)
        if found is None:
            found = self._stores[owner] = {}
            node = self._class_nodes.get(owner)
            for method in node.body if node is not None else ():
                if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                args = [*method.args.posonlyargs, *method.args.args]
                first = args[0].arg if args else None
                for inner in ast.walk(method):
                    if isinstance(inner, ast.AnnAssign) and _is_self(inner.target, first):
                        assert isinstance(inner.target, ast.Attribute)
                        found.setdefault(inner.target.attr, []).append(("annotation", inner.annotation))
                    elif isinstance(inner, ast.Assign) and len(inner.targets) == 1 and _is_self(inner.targets[0], first):
                        if not (isinstance(inner.value, ast.Constant) and inner.value.value is None):
                            target = inner.targets[0]
                            assert isinstance(target, ast.Attribute)
                            found.setdefault(target.attr, []).append(("value", inner.value))
        return found

    def read(self, tree: ast.Module) -> None:
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                self._class(node, f"{self.module}.{node.name}")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._function(node, None)

    def _class(self, node: ast.ClassDef, dotted: str) -> None:
        self._class_nodes[dotted] = node
        for child in node.body:
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._function(child, dotted)
            elif isinstance(child, ast.ClassDef):
                self._class(child, f"{dotted}.{child.name}")

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, owner: str | None) -> None:
        segment = "\n".join(self.lines[node.lineno - 1 : node.end_lineno])
        if not any(needle in segment for needle in self.needles):
            return  # (a call split across lines as `obj.name\n(` is not seen: rare in practice)
        unpacked: dict[int, int] = {}  # id(call node) -> targets it is unpacked into
        calls: list[ast.Call] = []
        # local name -> what types it (an annotation or an assigned expression), read only
        # when a call of a wanted method has that name as its receiver
        sources: dict[str, tuple[str, ast.expr]] = {}
        args = [*node.args.posonlyargs, *node.args.args]
        first = args[0].arg if args and owner is not None else None
        for arg in (*args, *node.args.kwonlyargs):
            if arg.annotation is not None:
                sources[arg.arg] = ("annotation", arg.annotation)
        for inner in ast.walk(node):
            if isinstance(inner, ast.Call):
                if isinstance(inner.func, ast.Attribute) and inner.func.attr in self.methods:
                    calls.append(inner)
            elif isinstance(inner, ast.Assign) and isinstance(inner.value, ast.Call):
                target = inner.targets[0]
                if isinstance(target, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in target.elts):
                    unpacked[id(inner.value)] = len(target.elts)
                elif isinstance(target, ast.Name):
                    sources.setdefault(target.id, ("value", inner.value))
            elif isinstance(inner, ast.AnnAssign) and isinstance(inner.target, ast.Name):
                sources[inner.target.id] = ("annotation", inner.annotation)
        if not calls:
            return
        typed = _LocalTypes(self, sources, owner, first)
        for call in calls:
            assert isinstance(call.func, ast.Attribute)
            receiver = self._receiver(call.func.value, owner, first, typed)
            if receiver is None:
                continue
            keywords = tuple(k.arg for k in call.keywords if k.arg is not None)
            self.calls.append(
                (
                    call.func.attr,
                    ProviderCall(
                        location=f"{self.file}:{call.lineno}",
                        receiver=receiver,
                        positional=sum(1 for a in call.args if not isinstance(a, ast.Starred)),
                        keywords=keywords,
                        star=any(isinstance(a, ast.Starred) for a in call.args),
                        starstar=any(k.arg is None for k in call.keywords),
                        unpacks=unpacked.get(id(call)),
                        caller=node.name if isinstance(call.func.value, ast.Name) and call.func.value.id == first else None,
                    ),
                )
            )

    def _receiver(self, node: ast.expr, owner: str | None, first: str | None, typed: _Types) -> str | None:
        """The class the receiver expression is known to be an instance of (or, for self, to derive from)."""
        if isinstance(node, ast.Name):
            if owner is not None and node.id == first:
                return owner
            return typed.get(node.id)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            base = self._receiver(node.value, owner, first, typed)
            if base is None:
                return None
            if node.value.id == first and base == owner:
                assigned = self._attribute_class(base, node.attr)
                if assigned is not None:
                    return assigned
            found = self.index.attribute_type(base, node.attr)
            return found.path if found is not None else None
        if isinstance(node, ast.Call):
            path = self._dotted(node.func)
            if path is None:
                return None
            if self.index.defines_class(path):
                return path  # `Cls(...)`: an instance of it
            res = self.index.resolve(path)
            if isinstance(res, Found) and res.symbol.kind is SymbolKind.CLASS:
                return res.symbol.path
            if isinstance(res, Found) and res.symbol.kind is SymbolKind.FUNCTION:
                returned = self.index.return_class(res.symbol.path)
                return returned.path if returned is not None else None
        return None

    def _dotted(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self._dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def _class_path(self, path: str) -> str | None:
        """The class `path` names: itself when the release's text defines it there (no module
        visited), else through the index (aliases, re-exports)."""
        if self.index.defines_class(path):
            return path
        found = self.index.class_named(path)
        return found.path if found is not None else None

    def _annotation(self, node: ast.expr) -> str | None:
        """The one class an annotation names (`Cls`, `mod.Cls`, `"Cls"`, `Cls | None`, `Optional[Cls]`)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                node = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                return None
        members = union_members(node)
        if len(members) != 1 or not isinstance(members[0], ast.expr):
            return None
        path = self._dotted(members[0])
        return self._class_path(path) if path else None


class _Types:
    def get(self, name: str) -> str | None:
        return None


_NO_TYPES = _Types()


class _LocalTypes(_Types):
    """A function's local names typed on demand: a parameter's or local's annotation, or the
    receiver class of the call first assigned to it."""

    def __init__(self, reader: _ModuleCalls, sources: dict[str, tuple[str, ast.expr]], owner: str | None, first: str | None):
        self.reader, self.sources, self.owner, self.first = reader, sources, owner, first
        self.known: dict[str, str | None] = {}

    def get(self, name: str) -> str | None:
        if name not in self.known:
            self.known[name] = None  # a name typed through itself stays unknown
            source = self.sources.get(name)
            if source is not None:
                kind, expr = source
                self.known[name] = (
                    self.reader._annotation(expr) if kind == "annotation" else self.reader._receiver(expr, self.owner, self.first, self)
                )
        return self.known[name]


def _is_self(node: ast.expr, first: str | None) -> bool:
    """`self.<attribute>` as a store target (`first` is the method's first parameter)."""
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == first


def construction_calls(index: ProviderIndex, factory: str, class_variable: str) -> tuple[ProviderCall, ...]:
    """The calls of the local `class_variable` inside the provider function `factory`: how it
    builds an instance of the class it looked up (each call an alternative it may choose)."""
    res = index.resolve(factory)
    if not isinstance(res, Found) or res.symbol.location is None:
        return ()
    relative, _, line = res.symbol.location.rpartition(":")
    path = index.loader.root / relative
    text = index.loader.read_text(path)
    if text is None or not line.isdigit():
        return ()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return ()
    function = next(
        (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and _def_line(n) == int(line)),
        None,
    )
    if function is None:
        return ()
    calls = [
        ProviderCall(
            location=f"{relative}:{n.lineno}",
            receiver=factory,
            positional=sum(1 for a in n.args if not isinstance(a, ast.Starred)),
            keywords=tuple(k.arg for k in n.keywords if k.arg is not None),
            star=any(isinstance(a, ast.Starred) for a in n.args),
            starstar=any(k.arg is None for k in n.keywords),
        )
        for n in ast.walk(function)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == class_variable
    ]
    return tuple(sorted(calls, key=lambda c: int(c.location.rpartition(":")[2])))


def _def_line(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The line Griffe reports for a function: its `def`, or its first decorator's."""
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])
