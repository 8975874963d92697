"""Code of a plugin nothing calls: classes nothing builds and methods nothing calls (docs/rules.md,
"Modules nothing runs"; issue 37, N18).

A plugin (a distribution whose entry points the provider loads, `consumer.reach.is_plugin`) runs
only what the provider or its entry points call, so a line in a live module runs only when its
function is called. A finding inside such a function is `conditional` (`nothing in the plugin or
the provider calls it`) where neither side can call it:

- **a class nothing builds**: a top-level class of provider bases whose decorators register it
  only in a registry the provider never reads a class from (a provider function storing the
  class in `Owner.registry[key]`, where the release's every other use of `registry` is a store or
  an `in` test: a table of op names to enable, not of classes to build), that no consumer code
  that may run names (a call, a subclass, a string naming it, an import of it: `_named_live`),
  and none of whose provider bases defines `__init_subclass__` (which may register every
  subclass) or is a `[[plugin]]` rule's base (its factory builds the class a user names). A class
  no decorator registers may be one a user names in the provider's configuration (an executor
  backend, a logits processor); any other decorator, or one the index cannot read, may build it.
  The bodies of its methods never run; its class body (run at import) and decorators still do;
- **a method nothing calls**, of a class of provider bases none of which lies outside the
  provider (that base could call anything): no provider class it derives from declares the name
  (an override the provider calls), the consumer's code never names it (`consumer_names`), the
  release never names it on a receiver the class can be (`ProviderIndex.references_of`: an
  untyped receiver, or one typed as a class of its MRO) nor holds it as a string literal; and it
  is no dunder, property, or method decorated by the provider or the consumer (which may register
  it as a callback; a third party's wrapper, `contextlib.contextmanager`, does not).

A library's public methods stay live: a user calls them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from apiaudit.checks.context import CheckContext
from apiaudit.checks.contracts import consumer_names, provider_mro_of
from apiaudit.checks.hooks import declared_nowhere, quoted_names
from apiaudit.consumer import parse_quietly
from apiaudit.consumer.reach import is_plugin
from apiaudit.consumer.records import ClassFacts, ConsumerFile, DefinedFunction
from apiaudit.findings import Finding
from apiaudit.provider.records import Found

# Builtin method decorators: the method stays one called by its name or not at all.
_BUILTIN_DECORATORS = frozenset({"staticmethod", "classmethod", "property"})
# How deep the search for live code naming a name follows the definitions naming it.
_MAX_DEPTH = 6

# (first line, last line, why the lines there may never run)
Span = tuple[int, int, str]


def unreached_findings(ctx: CheckContext, file: ConsumerFile, findings: list[Finding]) -> list[Finding]:
    """`findings` with those inside a function nothing calls made conditional, saying why."""
    if not findings or not file.classes or not is_plugin(ctx.entry_points):
        return findings
    spans = unreached_spans(ctx, file)
    if not spans:
        return findings
    out = []
    for f in findings:
        why = next((reason for start, end, reason in spans if start <= f.line <= end), None)
        out.append(f if why is None else replace(f, conditional=True, reason="; ".join(filter(None, (why, f.reason)))))
    return out


def unreached_spans(ctx: CheckContext, file: ConsumerFile) -> list[Span]:
    """The line spans of `file`'s methods that nothing calls (the module's doc)."""
    tree = _tree(ctx, file)
    if tree is None:
        return []
    classes = {node.lineno: node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    imported = _imported_names(tree)
    spans: list[Span] = []
    for facts in file.classes:
        node = classes.get(facts.site.line)
        if node is None or not facts.provider_bases:
            continue
        methods = [f for f in ctx.methods_by_class.get(facts.dotted, {}).values() if f.site.end_line]
        unbuilt = _unbuilt(ctx, file, facts, node, imported)
        if unbuilt is not None:
            spans += [(f.site.line, f.site.end_line or f.site.line, unbuilt) for f in methods]
            continue
        spans += _uncalled(ctx, facts, node, methods, imported, file.module.split(".")[0])
    return spans


def _unbuilt(ctx: CheckContext, file: ConsumerFile, facts: ClassFacts, node: ast.ClassDef, imported: dict[str, str]) -> str | None:
    """Why nothing builds the class, or None where something may."""
    name = node.name
    if facts.dotted != f"{file.module}.{name}" or facts.unread_bases or not node.decorator_list:
        # a nested class, bases the walk could not read, or a class no decorator registers: one a
        # user may name in the provider's configuration (an executor backend, a logits processor)
        return None
    heads, mro = provider_mro_of(ctx, facts)
    # a provider base's own `__init_subclass__` may register every subclass (one outside the
    # provider, `torch.nn.Module`'s, is Python's or a framework's, and builds nothing)
    if not heads or any(_provider_defines(ctx, h, "__init_subclass__") for h in heads):
        return None
    if any(_resolved(ctx, rule.base) in mro for rule in ctx.hosts.plugins):
        return None  # a [[plugin]] base: the provider's factory builds the class a user names
    registries = []
    for decorator in node.decorator_list:
        registry = _idle_registry(ctx, decorator, imported)
        if registry is None:
            return None
        registries.append(registry)
    if _named_live(ctx, name, file, _span(node), 0):
        return None
    return (
        f"nothing in {ctx.consumer} or the provider builds {name}: no code that may run names it, and the provider never "
        f"reads a class from {', '.join(dict.fromkeys(registries))}, where its decorator registers it"
    )


def _quoted(ctx: CheckContext, names: set[str]) -> set[str]:
    """`quoted_names`, remembered per name for the consumer (one pass over the release per batch)."""
    memo = ctx.unreached_memo
    unknown = {n for n in names if ("quoted", n) not in memo}
    if unknown:
        found = quoted_names(ctx, unknown)
        memo.update({("quoted", n): n in found for n in unknown})
    return {n for n in names if memo[("quoted", n)]}


def _resolved(ctx: CheckContext, dotted: str) -> str:
    found = ctx.index.resolve(dotted)
    return found.symbol.path if isinstance(found, Found) else dotted


def _provider_defines(ctx: CheckContext, class_path: str, name: str) -> bool:
    found = ctx.index.class_member(class_path, name, instance=False)
    return isinstance(found, Found) and ctx.index.loader.owns(found.symbol.path)


def _uncalled(
    ctx: CheckContext, facts: ClassFacts, node: ast.ClassDef, methods: list[DefinedFunction], imported: dict[str, str], top: str
) -> list[Span]:
    """The spans of the class's methods nothing calls."""
    if _outside_base(ctx, facts):
        return []
    heads, mro = provider_mro_of(ctx, facts)
    if not heads:
        return []
    defs = {n.lineno: n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    candidates: dict[str, DefinedFunction] = {}
    for function in methods:
        name = function.dotted.rpartition(".")[2]
        fn = defs.get(function.site.line)
        if fn is None or (name.startswith("__") and name.endswith("__")) or function.kind == "property":
            continue
        if any(_may_register(ctx, d, imported, top) for d in fn.decorator_list):
            continue
        if declared_nowhere(ctx, heads, name) and not consumer_names(ctx, name):
            candidates[name] = function
    if not candidates:
        return []
    kinds = set(mro)
    named = ctx.index.references_of(candidates)
    left = {n for n in candidates if not any(ref.receiver is None or ref.receiver in kinds for ref in named[n])}
    left -= _quoted(ctx, left)
    cls = facts.dotted.rpartition(".")[2]
    return [
        (f.site.line, f.site.end_line or f.site.line,
         f"nothing in {ctx.consumer} or the provider calls {cls}.{n}: no provider class it derives from declares it, and no code names it")
        for n, f in candidates.items() if n in left
    ]  # fmt: skip


def _may_register(ctx: CheckContext, decorator: ast.expr, imported: dict[str, str], top: str) -> bool:
    """Whether a method decorator may hand the method to someone who calls it (a registry of
    callbacks): one of the provider's or the consumer's own. A builtin, or a third party's wrapper
    (`contextlib.contextmanager`, `functools.lru_cache`, `torch.no_grad`), leaves it a method
    called by its name."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    while isinstance(target, ast.Attribute):
        target = target.value
    if not isinstance(target, ast.Name):
        return True
    if target.id in _BUILTIN_DECORATORS and target.id not in imported:
        return False
    dotted = imported.get(target.id)
    if dotted is None:
        return True  # defined in the module itself
    return dotted.split(".")[0] == top or ctx.index.loader.owns(dotted)


def _named_live(ctx: CheckContext, name: str, home: ConsumerFile, span: tuple[int, int], depth: int) -> bool:
    """Whether consumer code that may run names `name` (defined in `home` over `span`): a line
    at module or class-body level, or inside a function or lambda that such code names in turn
    (a module function, a module-level name a lambda is stored under), an entry point's function
    or a hook implementation (named with a rule's hook prefix: the provider calls it by its name).
    A file that imports the name from another module means another object; a method, a nested
    function, or anything deeper than the search goes counts as code that may run."""
    if depth > _MAX_DEPTH:
        return True
    if any(e.module == home.module and e.attr == name for e in ctx.entry_points):
        return True
    word = re.compile(rf"\b{re.escape(name)}\b")
    for f in ctx.files:
        if name not in f.source:
            continue
        tree = _tree(ctx, f)
        if tree is None:
            return True
        if f.path != home.path:
            bound = _imported_names(tree).get(name)
            if bound is not None and bound != f"{home.module}.{name}":
                continue
        for number, line in enumerate(f.lines, start=1):
            if f.path == home.path and span[0] <= number <= span[1]:
                continue
            if not word.search(line) or line.lstrip().startswith("#"):
                continue
            if _runs_if_named(ctx, f, tree, number, depth):
                return True
    return False


def _runs_if_named(ctx: CheckContext, file: ConsumerFile, tree: ast.Module, line: int, depth: int) -> bool:
    """Whether line `line` of `file` may run: the innermost definition holding it is none, a class
    body, or a module function or lambda whose own name live code holds."""
    chain = _holders(tree, line)
    if not chain:
        return True
    inner = chain[-1]
    if isinstance(inner, ast.ClassDef):
        return True
    if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if len(chain) > 1 or inner.decorator_list:
            return True  # a method, a nested function, or a decorated one: may run
        if any(rule.hook_prefix and inner.name.startswith(rule.hook_prefix) for rule in ctx.hosts.entry_points):
            return True  # a hook implementation: the provider calls it by its name
        return _named_live(ctx, inner.name, file, _span(inner), depth + 1)
    # a lambda: stored under a module-level name, it runs where that name is used
    statement = next((s for s in tree.body if s.lineno <= line <= (s.end_lineno or s.lineno)), None)
    if len(chain) == 1 and isinstance(statement, (ast.Assign, ast.AnnAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if len(targets) == 1 and isinstance(targets[0], ast.Name):
            return _named_live(ctx, targets[0].id, file, _span(statement), depth + 1)
    return True


Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda


def _holders(tree: ast.Module, line: int) -> list[Definition]:
    """The definitions (functions, lambdas, classes) holding line `line`, outermost first."""
    holding: list[Definition] = [
        n for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)) and n.lineno <= line <= (n.end_lineno or n.lineno)
    ]  # fmt: skip
    return sorted(holding, key=lambda n: (n.lineno, -(n.end_lineno or n.lineno)))


def _span(node: ast.AST) -> tuple[int, int]:
    """A definition's lines, its decorators included."""
    decorators = getattr(node, "decorator_list", [])
    start = min([getattr(node, "lineno", 1), *(d.lineno for d in decorators)])
    return start, getattr(node, "end_lineno", None) or start


def _outside_base(ctx: CheckContext, facts: ClassFacts) -> bool:
    """Whether a class of the consumer class's bases, consumer or provider, lies outside both
    (`torch.nn.Module`): its members are not known, and it may call any of the class's methods."""
    seen: set[str] = set()
    stack = [facts.dotted]
    while stack:
        dotted = stack.pop()
        if dotted in seen:
            continue
        seen.add(dotted)
        own = ctx.classes.get(dotted)
        if own is None or own.unread_bases:
            return True
        for base in own.provider_bases:
            res = ctx.index.resolve(base)
            if not isinstance(res, Found) or ctx.index.mro_unknowns(res.symbol.path):
                return True
        stack.extend(own.consumer_bases)
    return False


def _idle_registry(ctx: CheckContext, decorator: ast.expr, imported: dict[str, str]) -> str | None:
    """`Owner.registry` where the class decorator is a provider function that stores the class
    there and the release never reads a class from it; None otherwise (it may build the class)."""
    func = decorator.func if isinstance(decorator, ast.Call) else decorator
    dotted = _dotted(func, imported)
    if dotted is None:
        return None
    res = ctx.index.resolve(dotted)
    if not isinstance(res, Found):
        return None
    stored = _stored_registries(ctx, res.symbol.path)
    if not stored or any(_read_anywhere(ctx, attr) for attr in stored):
        return None
    owner = res.symbol.path.rpartition(".")[0].rpartition(".")[2]
    return ", ".join(f"{owner}.{attr}" for attr in stored)


def _stored_registries(ctx: CheckContext, path: str) -> tuple[str, ...]:
    """The attributes a provider function stores items into (`cls.registry[name] = op_cls`, in it
    or a function nested in it)."""
    module, parts = path, list[str]()
    while module and ctx.index.loader.module_file(module) is None:
        module, _, part = module.rpartition(".")
        parts.insert(0, part)
    file = ctx.index.loader.module_file(module) if module else None
    text = ctx.index.loader.read_text(file) if file is not None else None
    if text is None or not parts:
        return ()
    node: ast.AST | None = parse_quietly(text, str(file))
    for part in parts:
        node = next((n for n in getattr(node, "body", ()) if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == part), None)
        if node is None:
            return ()
    stores: list[str] = []
    assert node is not None
    for n in ast.walk(node):
        if isinstance(n, ast.Assign):
            for target in n.targets:
                if isinstance(target, ast.Subscript) and isinstance(target.value, (ast.Attribute, ast.Name)):
                    stores.append(target.value.attr if isinstance(target.value, ast.Attribute) else target.value.id)
    return tuple(dict.fromkeys(stores))


def _read_anywhere(ctx: CheckContext, attr: str) -> bool:
    """Whether the release uses `attr` other than to store into it (`x.attr[k] = v`), declare it
    (`attr: dict = {}`) or test a key's membership (`k in x.attr`): an item read from it."""
    key = ("registry-read", attr)
    memo = ctx.unreached_memo
    if key not in memo:
        memo[key] = any(_reads(text, attr) for _module, text in ctx.index.loader.source_files() if attr in text)
    return bool(memo[key])


def _reads(text: str, attr: str) -> bool:
    try:
        tree = parse_quietly(text)
    except (SyntaxError, ValueError, RecursionError):
        return True
    parents: dict[int, ast.AST] = {}
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            parents[id(child)] = parent
    for n in ast.walk(tree):
        if not ((isinstance(n, ast.Attribute) and n.attr == attr) or (isinstance(n, ast.Name) and n.id == attr)):
            continue
        up = parents.get(id(n))
        if isinstance(up, ast.Subscript) and up.value is n and isinstance(up.ctx, ast.Store):
            continue
        if isinstance(up, (ast.Assign, ast.AnnAssign)) and n is not getattr(up, "value", None):
            continue
        if isinstance(up, ast.Compare) and n in up.comparators and all(isinstance(op, (ast.In, ast.NotIn)) for op in up.ops):
            continue
        return True
    return False


def _tree(ctx: CheckContext, file: ConsumerFile) -> ast.Module | None:
    if file.path not in ctx.trees:
        try:
            ctx.trees[file.path] = parse_quietly(file.source, file.path)
        except (SyntaxError, ValueError, RecursionError):
            ctx.trees[file.path] = None
    tree = ctx.trees[file.path]
    return tree if isinstance(tree, ast.Module) else None


def _imported_names(tree: ast.Module) -> dict[str, str]:
    """local name -> the dotted name an import statement binds it to."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.partition(".")[0]] = alias.name if alias.asname else alias.name.partition(".")[0]
    return names


def _dotted(node: ast.expr, imported: dict[str, str]) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in imported:
        return None
    return ".".join([imported[node.id], *parts])

