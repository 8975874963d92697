"""The provider's own calls of a method, read from the release's source (the contract it calls).

A consumer that overrides a provider method, or puts a function over one, is called by the
provider with the arguments the provider's call sites pass on that release. Only the methods
a consumer actually overrides are looked up: a bytes search for `.NAME(` picks the few files
worth parsing; in those, a call is kept when its receiver's class is known statically:

- `self.NAME(...)` / `cls.NAME(...)` inside a method of a class (the receiver is that class);
- a parameter or local annotated with a class (`x: Base`, `x: Base | None`);
- `self.attr.NAME(...)` where the class annotates or assigns `attr` (the index's `attribute_type`;
  `self.attr = param` of an annotated parameter holds the annotation's class);
- `f().NAME(...)` / `x = f(); x.NAME(...)` where `f` is annotated `-> Class`.

Anything else (an untyped receiver) is left out: a call on an object of unknown class is no
proof that it reaches the consumer's override. Each call keeps its positional count,
keywords, splats and whether its result is unpacked (`a, b = recv.NAME(...)`), and the
provider's `if` that makes it one configuration's (`branch_guard`).

More readings, asked only when a call would make a finding or where rules say calling an
object runs a method: `find_references` (every place the release names a method, its object
typed or not: does an instance come to run it?), `find_self_uses` (`self.name` in a method and
where its value goes: an attribute of `self`, the method's return) and `find_instance_calls`
(`self.model(...)` on an attribute of a known class: `[[call_dispatch]]`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from collections.abc import Callable, Iterable

from apiaudit.infra.astutil import absolute_import, assignment_targets, attribute_store_text, descendants, lone_carriage_return, module_names, statements_breadth_first, union_members
from apiaudit.infra.gcpause import paused_gc
from apiaudit.provider.arguments import not_none, stored_value
from apiaudit.provider.branches import branch_guard, parent_map
from apiaudit.provider.queries import ReceiverClasses
from apiaudit.provider.records import (
    Found,
    ProviderAssignment,
    ProviderCall,
    ProviderReference,
    ProviderStore,
    SelfUse,
    SymbolKind,
)
from apiaudit.provider.shared import read_shared


def _files_naming(index: ReceiverClasses, present_in, keep: Callable[[str], bool] | None = None):
    """(module, text, parsed tree, what `present_in(text)` found) for every release file in which
    it finds something: the cheap text test first, a parse only where it passes. With `keep`, only
    the definitions whose text it accepts are parsed (`_partial_tree`)."""
    for module, text in index.loader.source_files():
        present = present_in(text)
        if not present:
            continue
        tree = _syntax(text, keep)
        if tree is not None:
            yield module, text, tree, present


def _syntax(text: str, keep: Callable[[str], bool] | None, parsed: _Statements | None = None) -> ast.Module | None:
    """The module's tree (None: it does not parse); with `keep`, `_partial_tree`'s where it can
    (`parsed`: the text's statements as an earlier call parsed them, reused)."""
    try:
        with paused_gc():  # an acyclic tree: nothing for the collector to find in it
            return (_partial_tree(text, keep, parsed) if keep is not None else None) or ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None


# A top-level statement starts at column 0 with a name, a keyword or a decorator (one of these
# keywords goes on the statement before it; a decorator, on the definition after it).
_STARTS = re.compile(r"\n(?=[A-Za-z_@])(?!(?:else|elif|except|finally)\b)")
_DEFINITION = re.compile(r"(?:@[^\n]*\n)*(async[ \t]+def|def|class)[ \t]+(\w+)")


class _Statements:
    """A module text's top-level statements: where each starts, and the parse of each one read
    so far (by its start), for `_partial_tree` calls on that text with different `keep`s."""

    def __init__(self, text: str) -> None:
        self.starts = [0, *(found.start() + 1 for found in _STARTS.finditer(text)), len(text)]
        self.parsed: dict[int, list[ast.stmt]] = {}


def _partial_tree(text: str, keep: Callable[[str], bool], parsed: _Statements | None = None) -> ast.Module | None:
    """The module with only the top-level functions and classes whose text `keep` accepts parsed
    (each with its own line numbers); the others stand as empty definitions of their name, and
    every other top-level statement (imports, assignments, `if` blocks) is parsed as it is.

    Call-site readers need no more: a call is read in a function whose text names the method,
    and a class's attributes in the class holding that function. None (parse it whole) when the
    text does not split into top-level statements that each parse alone (a split inside a string
    or brackets leaves a part that does not), or nothing is left out.

    `parsed` (the same text's): each statement's parse is kept there, and read again from it
    by a later call with a `keep` that accepts more; with it, a module is returned even when
    nothing is left out (every statement parsed, as a whole parse reads them)."""
    if lone_carriage_return(text):
        return None  # a line end the split below does not see
    shared, parsed = parsed is not None, parsed or _Statements(text)
    starts = parsed.starts
    body: list[ast.stmt] = []
    skipped, line, at = 0, 1, 0  # `at`: where the statement read next starts (its decorators)
    for start, end in zip(starts, starts[1:]):
        if text.startswith("@", start):
            continue  # a decorator: part of the definition below it
        block = text[at:end]
        definition = _DEFINITION.match(block)
        if definition is not None and not keep(block):
            keyword, name = definition.groups()
            stub: list[ast.stmt] = [ast.Pass(lineno=line, col_offset=0, end_lineno=line, end_col_offset=0)]
            node: ast.stmt = (
                ast.ClassDef(name=name, bases=[], keywords=[], body=stub, decorator_list=[])
                if keyword == "class"
                else ast.FunctionDef(name=name, args=ast.arguments([], [], None, [], [], None, []), body=stub, decorator_list=[])
            )
            node.lineno, node.col_offset, node.end_lineno, node.end_col_offset = line, 0, line, 0
            body.append(node)
            skipped += 1
        else:
            statements = parsed.parsed.get(at)
            if statements is None:
                try:
                    statements = parsed.parsed[at] = ast.parse("\n" * (line - 1) + block).body  # its own line numbers
                except (SyntaxError, ValueError):
                    return None
            if definition is not None and not (
                len(statements) == 1 and isinstance(statements[0], (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            ):
                return None
            body += statements
        line += block.count("\n")
        at = end
    if at < len(text):
        return None  # decorators with nothing below them
    return ast.Module(body=body, type_ignores=[]) if skipped or shared else None


def find_calls(index: ReceiverClasses, methods: Iterable[str], *, workers: int = 1) -> dict[str, tuple[ProviderCall, ...]]:
    """method name -> every provider call of it with a typed receiver, in file and line order;
    the files naming one are read shared among `workers` processes (`provider/shared.py`)."""
    wanted = sorted(set(methods))
    if not wanted:
        return {}
    # one scan of each file for all the names (`.name(`), not one a name
    needles = re.compile(r"\.(" + "|".join(re.escape(name) for name in wanted) + r")\(")

    def names_one(block: str) -> bool:
        return needles.search(block) is not None

    def calls_in(named: tuple[str, str, list[str]]) -> list[tuple[str, ProviderCall]]:
        module, text, present = named
        tree = _syntax(text, names_one)
        if tree is None:
            return []
        reader = _ModuleCalls(index, module, frozenset(present), module_names(tree, module), text)
        reader.read(tree)
        return reader.calls

    naming = [(module, text, sorted(set(present))) for module, text in index.loader.source_files() if (present := needles.findall(text))]
    found: dict[str, list[ProviderCall]] = {name: [] for name in wanted}
    for calls in read_shared(index, naming, calls_in, workers=workers, weight=lambda named: len(named[1])):
        for name, call in calls:
            found[name].append(call)
    return {name: tuple(calls) for name, calls in found.items()}


class _ModuleCalls:
    def __init__(self, index: ReceiverClasses, module: str, methods: frozenset[str], names: dict[str, str], text: str):
        self.lines = text.splitlines()
        self.needles = tuple(f".{m}(" for m in methods)
        self.index = index
        self.module = module
        self.methods = methods
        self.names = names
        self.file = index.loader.relative(index.loader.module_file(module) or module.replace(".", "/") + ".py")
        self.calls: list[tuple[str, ProviderCall]] = []
        # set when every reference to the methods is read, typed or not (`find_references`)
        self.references: list[tuple[str, ProviderReference]] | None = None
        self.seen_funcs: set[int] = set()  # the calls read as references (by id of their `func`)
        # set when reading calls of instances of these classes (`obj(...)`: `find_instance_calls`)
        self.instances: frozenset[str] | None = None
        self._class_nodes: dict[str, ast.ClassDef] = {}
        # (class, attribute) -> the class every `self.attr = ...` of its methods assigns, asked on demand
        self._attributes: dict[tuple[str, str], str | None | _Untyped] = {}
        self._stores: dict[str, dict[str, list[tuple[str, ast.expr]]]] = {}

    def _attribute_class(self, owner: str, name: str) -> str | None | _Untyped:
        """`self.name = expr` (or `self.name: T = ...`) in the class's methods: the class it holds
        when every assignment that is not `None` agrees; `UNTYPED` when its `__init__` stores what
        no reading can type (not a call: a name, an `x if c else y`, a subscript) and nothing
        annotates it: the index reads the same class and stops there (an `__init__` store makes
        the attribute the class's own); None when the text does not tell."""
        key = (owner, name)
        if key not in self._attributes:
            self._attributes[key] = None
            stores = self._assignments(owner).get(name, ())
            kinds = {kind for kind, _ in stores}
            if "declared" in kinds:
                # the class declares it (its body, `self.name: T` in `__init__`): that wins, as in
                # the index, which reads one class there and nothing from a union of several
                stores = [(kind, expr) for kind, expr in stores if kind == "declared"]
                if any(len(union_members(_unquoted(expr))) != 1 for _, expr in stores):
                    self._attributes[key] = UNTYPED
                    return UNTYPED
            elif "opaque" in kinds and "annotation" not in kinds:
                self._attributes[key] = UNTYPED
                return UNTYPED
            elif "annotation" in kinds:  # an annotation wins over what is stored, as in the index
                stores = [(kind, expr) for kind, expr in stores if kind == "annotation"]
            seen: set[str | None] = set()
            for kind, expr in stores:
                seen.add(self._annotation(expr) if kind in ("annotation", "declared") else self._receiver(expr, None, None, _NO_TYPES))
                if len(seen) > 1 or None in seen:
                    return None
            self._attributes[key] = next(iter(seen)) if seen else None
        return self._attributes[key]

    def _typable(self, value: ast.expr) -> bool:
        """Whether the index could type what `value` makes: a call, of a name that is not
        imported from outside the provider (`ThreadPoolExecutor(...)` is no provider class)."""
        if not isinstance(value, ast.Call):
            return False
        path = self._dotted(value.func)
        return path is None or self.index.loader.owns(path)

    def _assignments(self, owner: str) -> dict[str, list[tuple[str, ast.expr]]]:
        """attribute -> what the class annotates (`name: T` in its body, `self.name: T`) or its
        methods store in `self.name` (None stores left out; "opaque": what `__init__` stores that
        is not a call), one walk a class."""
        found = self._stores.get(owner)
        if found is None:
            found = self._stores[owner] = {}
            node = self._class_nodes.get(owner)
            for method in node.body if node is not None else ():
                if isinstance(method, ast.AnnAssign) and isinstance(method.target, ast.Name):
                    found.setdefault(method.target.id, []).append(("declared", method.annotation))
                if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                args = [*method.args.posonlyargs, *method.args.args]
                first = args[0].arg if args else None
                # `self.x = x` of an annotated parameter `x: T` holds a T
                annotated = {a.arg: a.annotation for a in (*args, *method.args.kwonlyargs) if a.annotation is not None}
                for inner in statements_breadth_first(method):  # assignments are statements
                    if isinstance(inner, ast.AnnAssign) and _is_self(inner.target, first):
                        assert isinstance(inner.target, ast.Attribute)
                        kind = "declared" if method.name == "__init__" else "annotation"
                        found.setdefault(inner.target.attr, []).append((kind, inner.annotation))
                    elif isinstance(inner, ast.Assign) and len(inner.targets) == 1 and _is_self(inner.targets[0], first):
                        if not (isinstance(inner.value, ast.Constant) and inner.value.value is None):
                            target = inner.targets[0]
                            assert isinstance(target, ast.Attribute)
                            value = inner.value
                            if isinstance(value, ast.Name) and value.id in annotated:
                                found.setdefault(target.attr, []).append(("annotation", annotated[value.id]))
                            else:
                                opaque = method.name == "__init__" and not self._typable(value)
                                found.setdefault(target.attr, []).append(("opaque" if opaque else "value", value))
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
            elif isinstance(inner, (ast.For, ast.AsyncFor)) and isinstance(inner.target, ast.Name):
                # `for proc in self.processors: proc.apply(x)`: an element of a typed collection
                sources.setdefault(inner.target.id, ("element", inner.iter))
            elif isinstance(inner, ast.ImportFrom):  # `from pkg.platforms import current_platform` here
                base = absolute_import(self.module if self.file.endswith("__init__.py") else self.module.rpartition(".")[0], inner.module, inner.level)
                for alias in inner.names:
                    sources.setdefault(alias.asname or alias.name, ("imported", ast.Constant(f"{base}.{alias.name}")))
        if not calls:
            return
        typed = _LocalTypes(self, sources, owner, first)
        parents: dict[int, ast.AST] | None = None
        for call in calls:
            assert isinstance(call.func, ast.Attribute)
            if self.instances is not None:
                # `self.model(...)`: the attribute's object is the receiver, and it is called
                held = self._receiver(call.func, owner, first, typed)
                if held in self.instances:
                    if parents is None:
                        parents = parent_map(node)
                    self.calls.append(("__call__", self._call(call, held, None, unpacked, parents, call.func)))
                continue
            receiver = self._receiver(call.func.value, owner, first, typed)
            on_self = _on_self(call.func.value, first)
            if self.references is not None:
                self.seen_funcs.add(id(call.func))
                # `super().name(...)` runs on an instance of this class too (never on an override
                # below it: no call of the override, only a way into the method it is made in)
                reached = owner if receiver is None and on_self else receiver
                self.references.append((
                    call.func.attr,
                    ProviderReference(f"{self.file}:{call.lineno}", reached, node.name if on_self else None, _enclosing(self.module, owner, node)),
                ))  # fmt: skip
                continue
            if receiver is None:
                continue
            if parents is None:
                parents = parent_map(node)
            self.calls.append((
                call.func.attr,
                self._call(call, receiver, node.name if on_self else None, unpacked, parents, call.func.value, _enclosing(self.module, owner, node), first),
            ))  # fmt: skip

    def _call(
        self, call: ast.Call, receiver: str, caller: str | None, unpacked: dict[int, int], parents: dict[int, ast.AST], target: ast.expr,
        enclosing: str | None = None, first: str | None = None,
    ) -> ProviderCall:
        held = target.attr if isinstance(target, ast.Attribute) and _on_self(target.value, first) and first is not None else None
        return ProviderCall(
            location=f"{self.file}:{call.lineno}",
            receiver=receiver,
            **_arguments(call),
            unpacks=unpacked.get(id(call)),
            caller=caller,
            guard=branch_guard(call, target, parents, self.lines, self.file),
            enclosing=enclosing,
            holder=held,
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
                if isinstance(assigned, _Untyped):
                    return None
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

    def _module_name_class(self, path: str) -> str | None:
        """The class a module-level name of another provider module, imported here, is annotated
        with there (`current_platform: Platform`, declared for type checkers and served by a module
        `__getattr__`): what the release says every use of it holds."""
        if not self.index.loader.owns(path) or path.rpartition(".")[0] == self.module:
            return None
        # a class or a module (read from the text, no module visited) holds no instance
        if self.index.defines_class(path) or self.index.loader.module_file(path) is not None:
            return None
        found = self.index.module_attribute_type(path)
        return found.path if found is not None else None

    def _dotted(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self._dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def _class_path(self, path: str) -> str | None:
        """The class `path` names: itself, or the class it re-exports, when the release's text
        tells (no module visited), else through the index (aliases, conditional imports)."""
        moved = self.index.reexported_class(path)
        if moved is not None:
            return moved
        found = self.index.class_named(path)
        return found.path if found is not None else None

    def _element_class(self, iterable: ast.expr, owner: str | None, first: str | None, sources: dict[str, tuple[str, ast.expr]]) -> str | None:
        """The class of the elements of a collection the annotation of `iterable` types
        (`list[Cls]`, `Sequence[Cls]`, `tuple[Cls, ...]`, `set[Cls]`): a local or parameter
        annotated so, or `self.attr` the class annotates so."""
        annotation: ast.expr | None = None
        if isinstance(iterable, ast.Name) and sources.get(iterable.id, ("", None))[0] == "annotation":
            annotation = sources[iterable.id][1]
        elif isinstance(iterable, ast.Attribute) and owner is not None and _is_self(iterable, first):
            typed = [e for kind, e in self._assignments(owner).get(iterable.attr, ()) if kind in ("declared", "annotation")]
            annotation = typed[0] if len(typed) == 1 else None
        if annotation is None:
            return None
        members = union_members(_unquoted(annotation))
        if len(members) != 1 or not isinstance(members[0], ast.Subscript):
            return None
        container = (self._dotted(members[0].value) or (members[0].value.id if isinstance(members[0].value, ast.Name) else "")).rpartition(".")[2]
        if container not in _COLLECTIONS:
            return None
        item = members[0].slice
        if isinstance(item, ast.Tuple):  # tuple[Cls, ...]
            if not (len(item.elts) == 2 and isinstance(item.elts[1], ast.Constant) and item.elts[1].value is Ellipsis):
                return None
            item = item.elts[0]
        return self._annotation(item)

    def _annotation(self, node: ast.expr) -> str | None:
        """The one class an annotation names (`Cls`, `mod.Cls`, `"Cls"`, `Cls | None`, `Optional[Cls]`)."""
        members = union_members(_unquoted(node))
        if len(members) != 1 or not isinstance(members[0], ast.expr):
            return None
        path = self._dotted(members[0])
        return self._class_path(path) if path else None


# Generic collections whose one parameter is the class of their elements.
_COLLECTIONS = frozenset({
    "list", "List", "Sequence", "MutableSequence", "Iterable", "Iterator", "Collection", "set", "Set", "frozenset",
    "FrozenSet", "tuple", "Tuple", "deque", "Deque",
})  # fmt: skip


def _unquoted(node: ast.expr) -> ast.expr:
    """A string annotation's expression (`"Cls | None"`); the node itself otherwise, or when the
    string does not parse (then it names no class)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return ast.parse(node.value, mode="eval").body
        except (SyntaxError, ValueError, RecursionError):
            return node
    return node


class _Untyped:
    """An attribute the class assigns something no reading can type (`_attribute_class`)."""


UNTYPED = _Untyped()


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
                if kind == "imported" and isinstance(expr, ast.Constant):
                    self.known[name] = self.reader._module_name_class(str(expr.value))
                elif kind == "element":
                    self.known[name] = self.reader._element_class(expr, self.owner, self.first, self.sources)
                else:
                    self.known[name] = (
                        self.reader._annotation(expr) if kind == "annotation" else self.reader._receiver(expr, self.owner, self.first, self)
                    )
            elif name in self.reader.names:
                self.known[name] = self.reader._module_name_class(self.reader.names[name])
        return self.known[name]


def _is_self(node: ast.expr, first: str | None) -> bool:
    """`self.<attribute>` as a store target (`first` is the method's first parameter)."""
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == first


def _enclosing(module: str, owner: str | None, node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The dotted name of the function or method a call is read in."""
    return f"{owner}.{node.name}" if owner is not None else f"{module}.{node.name}"


def _on_self(node: ast.expr, first: str | None) -> bool:
    """`self` (the method's first parameter) or `super()` as a call's receiver."""
    if isinstance(node, ast.Name):
        return first is not None and node.id == first
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def find_references(index: ReceiverClasses, methods: Iterable[str]) -> dict[str, tuple[ProviderReference, ...]]:
    """method name -> every place the release names it: its calls in functions (receiver typed
    or not), and any other use of the name (`obj.name` not called there, the name as a string),
    whose object may be any."""
    wanted = sorted(set(methods))
    found: dict[str, list[ProviderReference]] = {name: [] for name in wanted}
    # only a file naming it as an attribute or a string can refer to it (no parse otherwise)
    def naming(text: str) -> list[str]:
        return [name for name in wanted if f".{name}" in text or f'"{name}"' in text or f"'{name}'" in text]

    for module, text, tree, present in _files_naming(index, naming):
        reader = _ModuleCalls(index, module, frozenset(present), module_names(tree, module), text)
        reader.references = []
        reader.read(tree)
        data = _data_names(tree)
        named: list[tuple[str, ast.Attribute | ProviderReference]] = []  # in the order of the walk
        for node in ast.walk(tree):
            # an attribute read or a call at module level, on an object of unknown class, unless
            # the module itself declares the name as data (`handle: T` in a class, `x.handle = v`)
            if (
                isinstance(node, ast.Attribute)
                and node.attr in present
                and isinstance(node.ctx, ast.Load)
                and id(node) not in reader.seen_funcs
                and node.attr not in data
            ):
                named.append((node.attr, node))
            elif isinstance(node, ast.Call):
                # the name passed to a call (`getattr(obj, "name")`, `collective_rpc("name")`)
                for arg in (*node.args, *(k.value for k in node.keywords)):
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value in present:
                        named.append((arg.value, ProviderReference(f"{reader.file}:{arg.lineno}", None)))
        # `self.name` read as a value in a method (`find_executable_batch_size(self._loop, ...)`):
        # the method of this very object, handed on from the method it is read in (the methods
        # are walked only where a plain name's attribute is read so)
        on_self: dict[int, ProviderReference] = {}
        lines = {item.lineno for _, item in named if isinstance(item, ast.Attribute) and isinstance(item.value, ast.Name)}
        if lines:
            for owner, method, node in _self_reads(tree, module, lines):
                on_self[id(node)] = ProviderReference(f"{reader.file}:{node.lineno}", owner, method.name)
        for name, item in named:
            if isinstance(item, ast.Attribute):
                item = on_self.get(id(item)) or ProviderReference(f"{reader.file}:{item.lineno}", None)
            found[name].append(item)
        for name, reference in reader.references:
            found[name].append(reference)
    return {name: tuple(refs) for name, refs in found.items()}


def find_self_uses(index: ReceiverClasses, names: Iterable[str]) -> dict[str, tuple[SelfUse, ...]]:
    """name -> every `self.name` in a method of a release class (its first parameter's
    attribute, nested functions included), called or read as a value, with the attribute of
    `self` it is stored into or whether the method returns it (`SelfUse`): where a method handed
    on as a value ends up (`self._forward = self.dispatch()`, whose `dispatch` returns
    `self.forward_xpu`)."""
    wanted = sorted(set(names))
    found: dict[str, list[SelfUse]] = {name: [] for name in wanted}

    def naming(text: str) -> list[str]:
        return [name for name in wanted if f".{name}" in text]

    for module, _text, tree, present in _files_naming(index, naming):
        file = index.loader.relative(index.loader.module_file(module) or module.replace(".", "/") + ".py")  # as `_ModuleCalls.file`
        parents: dict[int, dict[int, ast.AST]] = {}  # id(method) -> its nodes' parents, on demand
        for owner, method, node in _self_reads(tree, module, None):
            if node.attr in present:
                if id(method) not in parents:
                    parents[id(method)] = parent_map(method)
                found[node.attr].append(_self_use(node, method, owner, parents[id(method)], file))
    return {name: tuple(uses) for name, uses in found.items()}


def _self_use(node: ast.Attribute, method: ast.FunctionDef | ast.AsyncFunctionDef, owner: str, parents: dict[int, ast.AST], file: str) -> SelfUse:
    """Where `self.name` (`node`, in `method`) goes: called or not, stored into an attribute of
    `self` or returned, directly or as one branch of a conditional expression."""
    up = parents.get(id(node))
    called = isinstance(up, ast.Call) and up.func is node
    value: ast.AST = up if called and up is not None else node
    up = parents.get(id(value))
    while isinstance(up, ast.IfExp) and value is not up.test:
        value, up = up, parents.get(id(up))
    place = SelfUse(f"{file}:{node.lineno}", owner, method.name, called)
    step = up
    while step is not None and step is not method:  # a nested function's or lambda's value is its own
        if isinstance(step, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return place
        step = parents.get(id(step))
    if isinstance(up, ast.Return) and up.value is value:
        return replace(place, returned=True)
    targets = up.targets if isinstance(up, ast.Assign) and up.value is value else [up.target] if isinstance(up, ast.AnnAssign) and up.value is value else []
    me = node.value.id if isinstance(node.value, ast.Name) else None  # the method's `self`
    if len(targets) == 1 and isinstance(target := targets[0], ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == me:
        return replace(place, stored=target.attr)
    return place


def find_attribute_stores(index: ReceiverClasses, names: Iterable[str]) -> dict[str, tuple[ProviderStore, ...]]:
    """attribute name -> every place a function of the release sets it on an object that is not
    its own `self` (`node.origin = v`, `node` a parameter or a local), with the class the object's
    annotation names and the other attributes the function reads on it."""
    wanted = sorted(set(names))
    found: dict[str, list[ProviderStore]] = {name: [] for name in wanted}
    stores = {name: re.compile(rf"\.{re.escape(name)}\s*(?::[^=\n]*)?=(?!=)") for name in wanted}

    def stored(text: str, name: str) -> bool:
        """`holder.name = v` (or `holder.name: T = v`) with a plain name other than `self` as holder."""
        if f".{name}" not in text:
            return False
        for match in stores[name].finditer(text):
            start = at = match.start()
            while at > 0 and (text[at - 1].isalnum() or text[at - 1] == "_"):
                at -= 1
            holder = text[at:start]
            if holder and holder != "self" and not holder[0].isdigit() and (at == 0 or text[at - 1] != "."):
                return True
        return False

    def naming(text: str) -> list[str]:
        return [name for name in wanted if stored(text, name)]

    def storing(block: str) -> bool:  # only the definitions that store one are parsed
        return any(stored(block, name) for name in wanted)

    for module, text, tree, present in _files_naming(index, naming, storing):
        reader = _ModuleCalls(index, module, frozenset(), module_names(tree, module), text)
        methods = {id(f) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for f in c.body}
        functions = sorted((f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))), key=lambda f: f.lineno)
        for func in functions:  # in line order (each function's own code: a nested one is read on its own)
            for name, store in _stores_in(reader, func, frozenset(present), id(func) in methods):
                found[name].append(store)
    return {name: tuple(found_stores) for name, found_stores in found.items()}


def _stores_in(reader: _ModuleCalls, func: ast.FunctionDef | ast.AsyncFunctionDef, names: frozenset[str], method: bool):
    """(name, store) for each `x.name = v` in the function (its nested functions apart) whose `x`
    is a plain name other than a method's `self`."""
    args = [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]
    me = args[0].arg if method and args else None
    annotations = {a.arg: a.annotation for a in args if a.annotation is not None}
    body: list[ast.AST] = []
    todo: list[ast.AST] = list(func.body)
    while todo:  # the function's own code: a nested function or class is another scope
        node = todo.pop()
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            body.append(node)
            todo.extend(ast.iter_child_nodes(node))
    for node in body:
        for target in assignment_targets(node) if isinstance(node, ast.stmt) else ():
            if not (isinstance(target, ast.Attribute) and target.attr in names and isinstance(target.value, ast.Name)):
                continue
            holder = target.value.id
            if holder == me:
                continue  # the class's own attribute: the extension records those
            uses = sorted({
                n.attr for n in body
                if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and isinstance(n.value, ast.Name)
                and n.value.id == holder and n.attr != target.attr
            })  # fmt: skip
            annotation = annotations.get(holder)
            annotated = reader._annotation(annotation) if annotation is not None else None
            yield target.attr, ProviderStore(f"{reader.file}:{target.lineno}", annotated, tuple(uses))


def find_attribute_values(index: ReceiverClasses, name: str, near: str | None = None) -> tuple[ProviderAssignment, ...]:
    """Every place the release binds the attribute `name` (`x.name = v` on any object, `self`
    too; `setattr(x, "name", v)`; a store through a subscript naming it; `name = v`, `name: T`
    or `def name` in a class body), with what each stores (`arguments.stored_value`). The module
    `near` (where the class reading it defines it) is read first, and the reading stops at the
    first store of anything but a literal or a built object: the answer then ends with it, and
    says all a caller needs (the attribute may hold anything). A file that does not parse is
    such a store."""
    binds = re.compile(
        attribute_store_text(name)  # x.name = v, x.name += v, x.name, y = v
        + rf"|[\"']{re.escape(name)}[\"']"  # setattr(x, "name", v), x.__dict__["name"] = v
        rf"|^[ \t]+(?:(?:async[ \t]+)?def[ \t]+)?{re.escape(name)}\b",  # a class body's `name = v` or `def name`
        re.MULTILINE,
    )
    files = sorted(index.loader.source_files(), key=lambda item: item[0] != near)
    found: list[ProviderAssignment] = []
    for module, text in files:
        if name not in text or binds.search(text) is None:
            continue
        tree = _syntax(text, lambda block: binds.search(block) is not None)
        file = index.loader.relative(index.loader.module_file(module) or module.replace(".", "/") + ".py")
        stores = [ProviderAssignment(f"{file}:1", "other")] if tree is None else _assignments_in(index, module, file, tree, name)
        for store in stores:
            found.append(store)
            if store.stored == "other":
                return tuple(found)
    return tuple(found)


def _assignments_in(index: ReceiverClasses, module: str, file: str, tree: ast.Module, name: str) -> list[ProviderAssignment]:
    """The bindings of the attribute `name` in one module, in no promised order (see
    `find_attribute_values`)."""
    found: list[ProviderAssignment] = []

    def add(node: ast.AST, function: ast.FunctionDef | ast.AsyncFunctionDef | None, value: ast.expr | None) -> None:
        stored, shown = stored_value(index, function, module, value) if value is not None else ("other", "")
        found.append(ProviderAssignment(f"{file}:{getattr(node, 'lineno', 1)}", stored, shown))

    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for stmt in node.body:  # the class's own names: what every instance reads without a store
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
                add(stmt, None, None)  # a method or a property: what it gives is computed
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
                add(stmt, None, stmt.value)  # a declared field without a value: its caller fills it
            elif isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
                add(stmt, None, stmt.value)
            elif isinstance(stmt, ast.Assign) and any(isinstance(leaf, ast.Name) and leaf.id == name for t in stmt.targets for leaf in _flatten_target(t)):
                add(stmt, None, None)  # unpacked into it
    for function, nodes in _scopes(tree):
        read: set[int] = set()  # the attribute targets whose stores were read with their value
        for node in nodes:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and _is_attribute(node.targets[0], name):
                read.add(id(node.targets[0]))
                add(node, function, node.value)
            elif isinstance(node, ast.AnnAssign) and _is_attribute(node.target, name):
                read.add(id(node.target))
                if node.value is not None:  # `self.name: T` alone stores nothing
                    add(node, function, node.value)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" and len(node.args) == 3:
                if isinstance(node.args[1], ast.Constant) and node.args[1].value == name:
                    add(node, function, node.args[2])
        for node in nodes:
            if id(node) in read:
                continue
            if _is_attribute(node, name) and isinstance(getattr(node, "ctx", None), ast.Store):
                add(node, None, None)  # a tuple target, `+=`, a loop's or a `with`'s target
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and isinstance(node.slice, ast.Constant) and node.slice.value == name:
                add(node, None, None)  # `x.__dict__["name"] = v`
    return found


def _is_attribute(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == name


def _flatten_target(target: ast.expr):
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _flatten_target(element.value if isinstance(element, ast.Starred) else element)
    else:
        yield target


def _scopes(tree: ast.Module):
    """(the function, or None for module and class bodies; the nodes of its own code) for every
    scope of the module: a nested function is a scope of its own (its parameters and locals are
    its own), as in `_stores_in`."""
    todo: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef | None, ast.AST]] = [(None, tree)]
    while todo:
        function, root = todo.pop()
        nodes: list[ast.AST] = []
        stack = list(ast.iter_child_nodes(root))
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                todo.append((node, node))
                continue
            nodes.append(node)
            stack.extend(ast.iter_child_nodes(node))
        yield function, nodes


def find_instance_calls(index: ReceiverClasses, classes: Iterable[str]) -> tuple[ProviderCall, ...]:
    """Every provider call of an object held in an attribute typed as one of `classes`
    (`self.model(a, b)`, `self.model` a `LlamaModel`), in file and line order: where calling an
    instance runs one of its methods (`[[call_dispatch]]`: nn.Module's `forward`). Only files
    naming one of the classes are read."""
    wanted = frozenset(classes)
    shorts = {c.rpartition(".")[2] for c in wanted}
    found: list[ProviderCall] = []
    # one search for a part every name shares (`Model` of `LlamaModel`, `Qwen2Model`) before one a name
    common = _common_part(shorts)

    def naming(text: str) -> bool:
        return (not common or common in text) and any(short in text for short in shorts)

    for module, text in index.loader.source_files():
        if not naming(text):
            continue
        # Parsed in part, twice over the same statements (each parsed once): the classes naming
        # one of the classes tell which attributes may hold one; then the definitions naming one
        # of those attributes too (where their calls and stores are) are read. Model files are
        # large, and most of their classes (layers, attention) are neither.
        parsed = _Statements(text)
        tree = _syntax(text, naming, parsed)
        held = _held_attributes(tree, text.splitlines(), shorts) if tree is not None else frozenset()
        if not held:
            continue
        uses = re.compile(r"\.(?:" + "|".join(map(re.escape, sorted(held))) + r")\b")  # `.model`, not `.model_config`
        tree = _syntax(text, lambda block: naming(block) or uses.search(block) is not None, parsed)
        if tree is None:
            continue
        reader = _ModuleCalls(index, module, held, module_names(tree, module), text)
        reader.instances = wanted
        reader.read(tree)
        found.extend(call for _, call in reader.calls)
    return tuple(found)


def _common_part(names: set[str], least: int = 4) -> str:
    """The longest text every name contains, if it has `least` characters ("" otherwise)."""
    shortest = min(names, key=len, default="")
    for size in range(len(shortest), least - 1, -1):
        for start in range(len(shortest) - size + 1):
            part = shortest[start : start + size]
            if all(part in name for name in names):
                return part
    return ""


def _held_attributes(tree: ast.Module, lines: list[str], shorts: set[str]) -> frozenset[str]:
    """The attributes a class naming one of the `shorts` stores (`self.model = ...`, `model: T`):
    the only ones whose calls may call an instance of those classes in this file. Resolving the
    receiver of every other call would load modules for nothing (a cold scan's largest cost)."""
    held: set[str] = set()
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    while classes:
        node = classes.pop()
        segment = "\n".join(lines[node.lineno - 1 : node.end_lineno])
        if not any(short in segment for short in shorts):
            continue
        # stores are statements (a comprehension's `for self.x in` is not read): expressions are not walked
        for inner in statements_breadth_first(node):
            if isinstance(inner, ast.AnnAssign) and isinstance(inner.target, ast.Name):
                held.add(inner.target.id)
            for target in assignment_targets(inner):
                held.update(leaf.attr for leaf in descendants(target) if isinstance(leaf, ast.Attribute) and isinstance(leaf.ctx, ast.Store))
    return frozenset(held)


def _self_reads(tree: ast.Module, module: str, lines: set[int] | None):
    """(class, method, node) for each `self.name` read in a method of a class of the module (its
    nested functions too: their `self` is the method's), `self` being the method's first
    parameter, `method` its definition; only the methods spanning one of `lines` are walked
    (None: every method)."""
    todo = [(stmt, f"{module}.{stmt.name}") for stmt in tree.body if isinstance(stmt, ast.ClassDef)]
    while todo:
        klass, dotted = todo.pop()
        for stmt in klass.body:
            if isinstance(stmt, ast.ClassDef):
                todo.append((stmt, f"{dotted}.{stmt.name}"))
            elif (
                isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and (stmt.args.posonlyargs or stmt.args.args)
                and not any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in stmt.decorator_list)
            ):  # fmt: skip
                if lines is not None and not any(stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno) for line in lines):
                    continue
                me = (stmt.args.posonlyargs or stmt.args.args)[0].arg
                for node in ast.walk(stmt):
                    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name) and node.value.id == me:
                        yield dotted, stmt, node


def _data_names(tree: ast.Module) -> set[str]:
    """Names the module declares as data: annotated in a class body, or stored as `x.name = ...`."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            names.update(s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name))
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return names


def construction_calls(index: ReceiverClasses, factory: str, class_variable: str) -> tuple[ProviderCall, ...]:
    """The calls of the local `class_variable` inside the provider function `factory`: how it
    builds an instance of the class it looked up (each call an alternative it may choose), each
    with what it passes that is never None (`provider/arguments.py`)."""
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
    module = relative.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    calls = [
        ProviderCall(
            location=f"{relative}:{n.lineno}", receiver=factory, **_arguments(n),
            not_none=not_none(index, function, res.symbol.path, module, n),
        )  # fmt: skip
        for n in ast.walk(function)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == class_variable
    ]
    return tuple(sorted(calls, key=lambda c: int(c.location.rpartition(":")[2])))


def _arguments(call: ast.Call) -> dict:
    """What a call passes, as ProviderCall counts it: positionals, keywords and splats."""
    return {
        "positional": sum(1 for a in call.args if not isinstance(a, ast.Starred)),
        "keywords": tuple(k.arg for k in call.keywords if k.arg is not None),
        "star": any(isinstance(a, ast.Starred) for a in call.args),
        "starstar": any(k.arg is None for k in call.keywords),
    }


def _def_line(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The line Griffe reports for a function: its `def`, or its first decorator's."""
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])
