"""Where the consumer puts an object of one of its own classes: read from its text, on demand.

Asked only at a finding, when a member the annotated provider class lacks is defined by a
consumer class of no provider base: that class can stand in for the annotation only where its
objects are seen going there. A class that merely defines a member of the same name is no
evidence (a dataclass of the consumer's own with a request's field names).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from apiaudit.checks.context import CheckContext
from apiaudit.consumer import parse_quietly
from apiaudit.consumer.records import ConsumerFile
from apiaudit.infra.astutil import absolute_import, attribute_store_text, module_names, named_path, names_anywhere
from apiaudit.provider.records import Found, SymbolKind


def passed_as(ctx: CheckContext, dotted: str, holder: str, declared: str = "") -> str | None:
    """`path:line` of a place the consumer puts an object of its class `dotted` under the name
    `holder`: a keyword argument or an assignment (`holder=Cls(...)`, `self.holder = Cls(...)`),
    a call of a consumer function whose parameter `holder` it fills positionally with one, or
    the class passing itself (`self`) there; or where it holds one in a name it annotates with
    the provider class `declared` (`engine: EngineClient | None`, then `engine = Cls(...)`).
    None: nowhere the text shows."""
    short = dotted.rpartition(".")[2]
    if declared:
        held = _held_as_declared(ctx, short, declared.rpartition(".")[2])
        if held is not None:
            return held
    files = [f for f in ctx.files if holder in f.source]
    positions = dict(_parameter_positions(ctx, files, holder))
    for file in files:
        if short not in file.source and "self" not in file.source:
            continue
        tree = consumer_tree(ctx, file)
        if tree is None:
            continue
        for node, inside in _walk_classes(tree, None):
            line = _puts(node, inside, short, dotted.rpartition(".")[0] == file.module, holder, positions)
            if line is not None:
                return f"{file.path}:{line}"
    return None


def _held_as_declared(ctx: CheckContext, short: str, declared: str) -> str | None:
    """`path:line` of `name = Cls(...)` in a function that annotates `name` with the declared
    class (a parameter or a variable annotation naming it)."""
    for file in ctx.files:
        if short not in file.source or declared not in file.source:
            continue
        tree = consumer_tree(ctx, file)
        if tree is None:
            continue
        for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            annotated = {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs) if _names(a.annotation, declared)}
            annotated |= {n.target.id for n in ast.walk(function) if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and _names(n.annotation, declared)}
            for node in ast.walk(function):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and called_name(node.value) == short:
                    if any(isinstance(t, ast.Name) and t.id in annotated for t in node.targets):
                        return f"{file.path}:{node.lineno}"
    return None


def _names(annotation: ast.expr | None, declared: str) -> bool:
    """Whether an annotation names the class (`EngineClient`, `EngineClient | None`, `"EngineClient"`)."""
    if annotation is None:
        return False
    text = annotation.value if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str) else ast.unparse(annotation)
    return declared in text.replace(".", " ").replace("|", " ").replace("[", " ").replace("]", " ").split()


def _puts(node: ast.AST, inside: str | None, short: str, same_module: bool, holder: str, positions: dict[str, int]) -> int | None:
    def is_one(value: ast.expr) -> bool:
        if isinstance(value, ast.Call):
            func = value.func
            return (isinstance(func, ast.Name) and func.id == short) or (isinstance(func, ast.Attribute) and func.attr == short)
        return same_module and inside == short and isinstance(value, ast.Name) and value.id == "self"

    if isinstance(node, ast.Call):
        if any(k.arg == holder and is_one(k.value) for k in node.keywords):
            return node.lineno
        called = node.func.id if isinstance(node.func, ast.Name) else node.func.attr if isinstance(node.func, ast.Attribute) else None
        at = positions.get(called or "")
        if at is not None and at < len(node.args) and is_one(node.args[at]):
            return node.lineno
    elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and is_one(node.value):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            name = target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else None
            if name == holder:
                return node.lineno
    return None


def _parameter_positions(ctx: CheckContext, files: list[ConsumerFile], holder: str) -> Iterator[tuple[str, int]]:
    """(function name, the position a caller fills `holder` at) for each consumer function or
    method with a parameter of that name (`self`/`cls` not counted for a method)."""
    for file in files:
        tree = consumer_tree(ctx, file)
        if tree is None:
            continue
        for node, inside in _walk_classes(tree, None):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            params = [*node.args.posonlyargs, *node.args.args]
            names = [p.arg for p in params]
            if holder not in names:
                continue
            at = names.index(holder)
            if inside is not None and names and names[0] in ("self", "cls"):
                at -= 1
            yield node.name, at


def _walk_classes(tree: ast.AST, inside: str | None) -> Iterator[tuple[ast.AST, str | None]]:
    """Every node, with the name of the class whose body (at any depth) holds it."""
    for child in ast.iter_child_nodes(tree):
        yield child, inside
        yield from _walk_classes(child, child.name if isinstance(child, ast.ClassDef) else inside)


def consumer_tree(ctx: CheckContext, file: ConsumerFile) -> ast.AST | None:
    if file.path not in ctx.trees:
        try:
            ctx.trees[file.path] = parse_quietly(file.source, file.path)
        except (SyntaxError, ValueError):
            ctx.trees[file.path] = None
    tree = ctx.trees[file.path]
    return tree if isinstance(tree, ast.AST) else None


def registered_classes(ctx: CheckContext, registrar: str) -> frozenset[str]:
    """The consumer classes an instance of which the consumer passes to a method named
    `registrar` (`manager.register(MyPlugin(config))`, or a name assigned one first), by dotted
    path. Memoised per consumer."""
    memo = ctx.registered.get(registrar)
    if memo is not None:
        return memo
    by_short: dict[str, list[str]] = {}
    for dotted in ctx.classes:
        by_short.setdefault(dotted.rpartition(".")[2], []).append(dotted)
    found: set[str] = set()
    needle = f".{registrar}("
    for file in ctx.files:
        if needle not in file.source:
            continue
        tree = consumer_tree(ctx, file)
        if tree is None:
            continue
        made: dict[str, str] = {}  # local name -> the class a call assigned it from
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                called = called_name(node.value)
                for target in node.targets:
                    if isinstance(target, ast.Name) and called:
                        made[target.id] = called
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == registrar and node.args):
                continue
            arg = node.args[0]
            short = called_name(arg) if isinstance(arg, ast.Call) else made.get(arg.id) if isinstance(arg, ast.Name) else None
            candidates = by_short.get(short or "", [])
            own = [c for c in candidates if c.rpartition(".")[0] == file.module]
            found.update(own or candidates)
    result = ctx.registered[registrar] = frozenset(found)
    return result


def called_name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def substituted(ctx: CheckContext) -> dict[str, tuple[str, str]]:
    """provider class -> (the consumer class the provider builds in its place, `path:line` of the
    registration), by the [[substitution]] rules' registrations: `@C.method` on a consumer class,
    `C.method(K)`, or a call of a consumer function that passes its parameters on so
    (`def reg(base, cls): base.method(cls)`, `reg(C, K)`). C is the provider class the name
    resolves to, deriving from the rule's base. Memoised per consumer."""
    if ctx.substituted_memo is not None:
        return ctx.substituted_memo
    found: dict[str, tuple[str, str]] = {}
    methods: dict[str, tuple[str, ...]] = {}
    for base, method in ctx.hosts.substitutions:
        methods[method] = (*methods.get(method, ()), base)
    files = [f for f in ctx.files if methods and any(f".{m}" in f.source for m in methods)]
    helpers: dict[str, tuple[int, int, str]] = {}  # consumer function -> (base position, class position, method)
    for file in files:
        tree = consumer_tree(ctx, file)
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
                for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
                    func = call.func
                    if isinstance(func, ast.Attribute) and func.attr in methods and isinstance(func.value, ast.Name) and len(call.args) == 1:
                        arg = call.args[0]
                        if func.value.id in params and isinstance(arg, ast.Name) and arg.id in params:
                            helpers[f"{file.module}.{node.name}"] = (params.index(func.value.id), params.index(arg.id), func.attr)
    for file in files if helpers or methods else ():
        tree = consumer_tree(ctx, file)
        if not isinstance(tree, ast.Module):
            continue
        names = names_anywhere(tree, file.module)
        local_helpers = {name: helpers[dotted] for name, dotted in names.items() if dotted in helpers}
        for node in ast.walk(tree):
            pairs: list[tuple[ast.expr, str, str]] = []  # (the provider class's name, the consumer class, the method)
            if isinstance(node, ast.ClassDef):
                for decorator in node.decorator_list:
                    target = decorator.func if isinstance(decorator, ast.Call) else decorator
                    if isinstance(target, ast.Attribute) and target.attr in methods:
                        pairs.append((target.value, f"{file.module}.{node.name}", target.attr))
            elif isinstance(node, ast.Call) and len(node.args) >= 1:
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr in methods and isinstance(node.args[0], ast.Name) and len(node.args) == 1:
                    pairs.append((func.value, names.get(node.args[0].id, ""), func.attr))
                elif isinstance(func, ast.Name) and func.id in local_helpers:
                    at_base, at_class, method = local_helpers[func.id]
                    if max(at_base, at_class) < len(node.args) and isinstance(node.args[at_class], ast.Name):
                        pairs.append((node.args[at_base], names.get(node.args[at_class].id, ""), method))  # type: ignore[attr-defined]
            for base_node, named_class, method in pairs:
                provider, consumer_class = _imported_through(ctx, named_path(base_node, names)), _imported_through(ctx, named_class)
                if provider is None or consumer_class is None or consumer_class not in ctx.classes:
                    continue
                resolved = ctx.index.resolve(provider)
                if not isinstance(resolved, Found) or resolved.symbol.kind is not SymbolKind.CLASS:
                    continue
                path = resolved.symbol.path
                mro = ctx.index.mro_paths(path)
                if any(base == path or base in mro for base in methods[method]):
                    found.setdefault(path, (consumer_class, f"{file.path}:{getattr(node, 'lineno', 0)}"))
    ctx.substituted_memo = found
    return found


def _imported_through(ctx: CheckContext, dotted: str | None, hops: int = 3) -> str | None:
    """A name a consumer module imports from elsewhere, followed there (`pkg.layers.MoERunner`,
    where pkg/layers.py imports it from the provider, is the provider's class)."""
    for _ in range(hops):
        if dotted is None or dotted in ctx.classes:
            return dotted
        module, _, name = dotted.rpartition(".")
        file = next((f for f in ctx.files if f.module == module), None)
        tree = consumer_tree(ctx, file) if file is not None else None
        if not isinstance(tree, ast.Module):
            return dotted
        found = module_names(tree, module).get(name)
        if found is None or found == dotted:
            return dotted
        dotted = found
    return dotted


def built_where(ctx: CheckContext, dotted: str) -> tuple[tuple[str | None, str | None, str | None], ...] | None:
    """Where the consumer builds objects of its class `dotted`: (the consumer class, the method,
    the `self` attribute it stores the object in) for each `self.X = Cls(...)` in a method, with
    None for what a place is not (built elsewhere: in a function, stored in a name, passed on).
    None when the class is used otherwise than built and its bases named (held in a name, named in
    a string, imported under a name the text cannot follow): then who holds its objects is not known."""
    if dotted in ctx.built_memo:
        return ctx.built_memo[dotted]
    module, _, short = dotted.rpartition(".")
    places: list[tuple[str | None, str | None, str | None]] = []
    result: tuple[tuple[str | None, str | None, str | None], ...] | None = None
    # `Cls.helper(...)` of a static method hands no object of the class anywhere
    statics = frozenset(name for name, f in ctx.methods_by_class.get(dotted, {}).items() if f.kind == "staticmethod")
    for file in ctx.files:
        if short not in file.source:
            continue
        tree = consumer_tree(ctx, file)
        if not isinstance(tree, ast.Module):
            break
        names = module_names(tree, file.module)
        if names.get(short) != dotted and (short in names or not _imported_in_functions(tree, file, short, dotted)):
            if module.rpartition(".")[2] in file.source or f"'{short}'" in file.source or f'"{short}"' in file.source:
                break  # imported under another name, or named by a string: not followed
            continue
        seen = _uses_of(tree, short, places, file.module, statics)
        if seen is False:
            break
    else:
        result = tuple(places)
    ctx.built_memo[dotted] = result
    return result


def _type_positions(node: ast.AST) -> Iterator[int]:
    """Ids of the nodes `node` holds in a type position (an annotation, a return annotation, the
    class of an `isinstance`/`issubclass` test): a class named there is not built or called."""
    held: ast.AST | None = None
    if isinstance(node, (ast.arg, ast.AnnAssign)):
        held = node.annotation
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        held = node.returns
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
        held = node.args[1]
    return (id(n) for n in ast.walk(held)) if held is not None else iter(())


def _imported_in_functions(tree: ast.Module, file: ConsumerFile, short: str, dotted: str) -> bool:
    """Whether the file's functions import the class under its own name (`from pkg.mod import
    Cls` inside a function, to put off an import), and nowhere under another."""
    package = file.module if file.path.endswith("__init__.py") else file.module.rpartition(".")[0]
    found = False
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = absolute_import(package, node.module, node.level)
        for alias in node.names:
            if f"{base}.{alias.name}" == dotted:
                if (alias.asname or alias.name) != short:
                    return False
                found = True
    return found


def _uses_of(tree: ast.AST, short: str, places: list, module: str, statics: frozenset[str] = frozenset()) -> bool:
    """Record each building of `short` in `places`; False at a use the reading cannot follow
    (a call of one of the class's `statics` through its name is no use of an object)."""
    allowed: set[int] = set()  # ids of Name nodes that are bases, annotations or isinstance classes
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            allowed.update(id(b) for b in node.bases)
        elif isinstance(node, ast.Attribute) and node.attr in statics and isinstance(node.value, ast.Name) and node.value.id == short:
            allowed.add(id(node.value))
        allowed.update(_type_positions(node))
    for node, cls, function in _walk_defs(tree, None, None):
        if (
            isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name) and node.value.func.id == short
        ):  # fmt: skip
            allowed.add(id(node.value.func))
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            target = targets[0] if len(targets) == 1 else None
            held = target.attr if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self" else None
            places.append((f"{module}.{cls}" if cls and held else None, function if held else None, held))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == short and id(node.func) not in allowed:
            allowed.add(id(node.func))
            places.append((None, None, None))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == short and id(node) not in allowed:
            return False
    return True


def _walk_defs(tree: ast.AST, cls: str | None, function: str | None) -> Iterator[tuple[ast.AST, str | None, str | None]]:
    """Every node, with the class and the method (of that class) it is in."""
    for child in ast.iter_child_nodes(tree):
        yield child, cls, function
        if isinstance(child, ast.ClassDef):
            yield from _walk_defs(child, child.name, None)
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _walk_defs(child, cls, child.name if function is None else function)
        else:
            yield from _walk_defs(child, cls, function)


def built_only_by_provider(ctx: CheckContext, dotted: str) -> bool:
    """Whether nothing of the consumer can call the `__init__` of its class `dotted` (so only the
    provider's factories build it): no consumer class derives from it (whose `super().__init__`
    would pass its own arguments), no entry point names it and no injection mixes it in, no method
    of it or of its consumer bases builds one of its own kind again (`cls(...)`, `type(self)(...)`,
    `self.__class__(...)`, `self.__init__(...)`), and its name appears in the consumer's code only
    where it is defined or imported, in annotations and `isinstance`/`issubclass` tests, in
    `__all__`, and as the string a plugin registration or configuration names it by (a
    `PluginName`), or on a provider's launch line. False at anything else (built, passed on, held
    in a name, named by another string, imported under another name). Memoised per consumer."""
    memo = ctx.provider_built_memo
    if dotted not in memo:
        memo[dotted] = _built_only_by_provider(ctx, dotted)
    return memo[dotted]


def _built_only_by_provider(ctx: CheckContext, dotted: str) -> bool:
    module, _, short = dotted.rpartition(".")
    if dotted not in ctx.classes or ctx.subclasses_of(dotted) or dotted in ctx.injected or dotted in ctx.injected_behind:
        return False
    if any(e.module == module and e.attr == short for e in ctx.entry_points):
        return False
    for file in ctx.files:
        if short not in file.source:
            continue
        if not file.path.endswith(".py"):
            if file.launch_lines:
                continue  # a job file starting the provider names it for the provider to build
            return False
        tree = consumer_tree(ctx, file)
        if not isinstance(tree, ast.Module):
            return False
        if _another_of_the_name(tree, file, module, short, dotted):
            continue
        if not _names_it_only_for_the_provider(tree, file, module, short):
            return False
    return all(_builds_no_other(ctx, cls) for cls in (dotted, *_consumer_bases(ctx, dotted)))


def _another_of_the_name(tree: ast.Module, file: ConsumerFile, module: str, short: str, dotted: str) -> bool:
    """A file that defines a class of the same name of its own (a copy kept for another provider
    release), never imports the name, and never names the other's module: its uses of the name
    are its own class's."""
    own = f"{file.module}.{short}"
    if own == dotted or module_names(tree, file.module).get(short) != own or module.rpartition(".")[2] in file.source:
        return False
    return not any(isinstance(n, ast.alias) and short in (n.name, n.asname) for n in ast.walk(tree))


def _names_it_only_for_the_provider(tree: ast.Module, file: ConsumerFile, module: str, short: str) -> bool:
    allowed: set[int] = set()  # ids of nodes under annotations, isinstance/issubclass tests, `__all__`
    for node in ast.walk(tree):
        allowed.update(_type_positions(node))
        if isinstance(node, (ast.Assign, ast.AugAssign)) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        ):
            allowed.update(id(n) for n in ast.walk(node.value))
    sites = [p.site for p in file.plugin_names if p.module == module and p.name == short]
    for node in ast.walk(tree):
        if id(node) in allowed:
            continue
        if isinstance(node, ast.Name) and node.id == short or isinstance(node, ast.Attribute) and node.attr == short:
            return False
        if isinstance(node, ast.alias) and node.asname is not None and short in (node.name, node.name.rpartition(".")[2]) and node.asname != short:
            return False  # imported under another name: its uses are not followed
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _names_class(node.value, short):
            if not any(s.line <= node.lineno <= (s.end_line or s.line) for s in sites):
                return False
    return True


def _names_class(text: str, short: str) -> bool:
    return text == short or text.endswith((f".{short}", f":{short}"))


def _consumer_bases(ctx: CheckContext, dotted: str) -> list[str]:
    found: list[str] = []
    todo = list(ctx.classes[dotted].consumer_bases)
    while todo:
        base = todo.pop()
        if base not in found and base in ctx.classes:
            found.append(base)
            todo.extend(ctx.classes[base].consumer_bases)
    return found


def _builds_no_other(ctx: CheckContext, dotted: str) -> bool:
    """Whether the body of the consumer class `dotted` never builds an object of its own kind
    again (`cls(...)`, `type(x)(...)`, `x.__class__(...)`) nor calls `__init__` but through
    `super()`: each would call the `__init__` of whatever class the object is. A decorated class
    is handed to its decorator, which may build it: False."""
    module, _, short = dotted.rpartition(".")
    file = next((f for f in ctx.files if f.module == module), None)
    tree = consumer_tree(ctx, file) if file is not None else None
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == short), None) if isinstance(tree, ast.Module) else None
    if node is None or node.decorator_list:
        return False  # a decorator is handed the class: it may build it
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
        func = call.func
        if isinstance(func, ast.Name) and func.id == "cls":
            return False
        if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "type":
            return False
        if isinstance(func, ast.Attribute) and func.attr == "__class__":
            return False
        if isinstance(func, ast.Attribute) and func.attr == "__init__":
            inner = func.value
            if not (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "super"):
                return False
    return True


def stored_by_consumer(ctx: CheckContext, name: str, holders: tuple[str, ...] = ()) -> str | None:
    """Where the consumer's code may bind the attribute (or module name) `name`: `path:line` of
    `x.name = v` on any object (`self` too; `+=` and the like), or of a string naming it, alone
    (`setattr(x, "name", v)`, `vars(x)["name"]`) or after a dotted path into the provider
    (`mock.patch("prov.mod.name", ...)`; a string naming one of the consumer's own modules is not
    one); or the consumer class that defines a member of that name and derives from one of the
    provider classes `holders`. Live or not, reached or not: any counts. None: nowhere. The text
    is searched once a name per consumer."""
    memo = ctx.consumer_stores_memo
    if name not in memo:
        memo[name] = _stored_by_consumer(ctx, name)
    found = memo[name]
    if found is None and holders:
        for dotted in sorted(ctx.classes):
            if name in ctx.classes[dotted].own_members and any(
                holder in ctx.index.mro_paths(base) for base in ctx.provider_classes_of(dotted) for holder in holders
            ):
                return dotted
    return found


def _stored_by_consumer(ctx: CheckContext, name: str) -> str | None:
    binds = re.compile(attribute_store_text(name) + rf"|[\"']((?:[\w.]+[.:])?){re.escape(name)}[\"']")
    for file in ctx.files:
        if name not in file.source:
            continue
        for found in binds.finditer(file.source):
            path = found.group(1)
            if path and not ctx.index.loader.owns(path.rstrip(".:")):
                continue  # a dotted string into the consumer's own modules (a message, a module path)
            return f"{file.path}:{file.source.count(chr(10), 0, found.start()) + 1}"
    return None
