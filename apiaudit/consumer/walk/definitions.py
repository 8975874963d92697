"""Function and class definitions: the scope a body runs in, and the class learning pass.

A function body runs once, in a scope of its own: its parameters hold what their annotations
name, `self` of a method is the class's own `self` chain, and a module function written with
`self` first is recorded as one that may be bound onto an object. A class body is walked twice:
the first time only to learn what each `self.X` holds (emitting nothing, and skipping the
bodies of methods that store or delete no attribute while no `self.X` holds a dict, since they
cannot change what it learns), the second to emit with that knowledge. The statements of a body
are the `Statements`' to walk (`statements`: the part above this one, handed to it by the visitor
once it exists).
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import replace
from typing import Protocol

from apiaudit.consumer.contracts import defined_function
from apiaudit.consumer.patching import copies_members
from apiaudit.consumer.records import AttributeStore, ClassFacts, MethodBinding, Replacement, Root
from apiaudit.consumer.values import (
    UNKNOWN,
    Chain,
    ConsumerRef,
    DictValue,
    Helper,
    ImportChoice,
    OneOf,
    ReturnedItems,
    Value,
    symbol_path,
)
from apiaudit.consumer.walk.evaluate import Evaluator
from apiaudit.consumer.walk.record import Recorder
from apiaudit.consumer.walk.scopes import ClassScope, Env, Scope
from apiaudit.consumer.walk.state import WalkState, site_of
from apiaudit.infra.astutil import assignment_targets, descendants, dotted_text, statements_breadth_first


class Block(Protocol):
    """What a definition asks of the statements (`Statements`): its body walked."""

    def block(self, body: list[ast.stmt], scope: Scope) -> bool: ...


class Definitions:
    """The functions and classes of one module's walk."""

    __slots__ = ("state", "values", "record", "statements", "_members", "_methods", "_stmt_stores")

    # The part above this one, called back (set by the visitor, emptied after the walk).
    statements: Block

    def __init__(self, state: WalkState, values: Evaluator, record: Recorder):
        self.state = state
        self.values = values
        self.record = record
        self._members: dict[int, frozenset[str]] = {}  # id(class node) -> own_members, read once
        # id(method of a class read) -> (it stores an attribute, it returns a tuple display): what
        # the learning pass asks of it, read in the same pass over the class's statements
        self._methods: dict[int, tuple[bool, bool]] = {}
        self._stmt_stores: dict[int, bool] = {}  # id(statement) -> `_stores_attribute`, read once

    def own_members(self, node: ast.ClassDef) -> frozenset[str]:
        """`own_members(node)`, read once a walk (the module's names and the class's scope both ask)."""
        found = self._members.get(id(node))
        if found is None:
            found = self._members[id(node)] = frozenset(own_members(node, self._methods))
        return found

    def function_def(self, node, outer: Scope, qual: str) -> None:
        if self.state.top_only:
            return
        cls = outer.cls
        if cls is not None and cls.learning and not outer.emit:
            stores, returns_tuple = self._methods.get(id(node)) or (None, None)
            if not (_may_teach(node, cls, stores) or (returns_tuple if returns_tuple is not None else _returns_tuple(node))):
                return  # the learning pass learns only what self.X holds (and what a method returns): this body cannot change it
        # A function defined in the class body is a method; one nested in a method is a plain
        # function (its first parameter is not self) that sees the method's names, `self` included.
        in_body = cls is not None and not _in_method(outer.function, cls)
        # Methods see module names, not the class body's; nested functions see their enclosing scope.
        env = Env(self.state.module_env if in_body else outer.env)
        scope = Scope(env, cls, qual, live=outer.live, emit=outer.emit)
        args = node.args
        all_args = list(args.posonlyargs) + list(args.args)
        first = all_args[0].arg if all_args else None
        is_method = in_body and not any(_decorator_name(d) == "staticmethod" for d in node.decorator_list)
        reading = outer.outside_class()  # where `annotation_value` reads annotations: made once for every parameter
        for a in all_args + list(args.kwonlyargs) + [x for x in (args.vararg, args.kwarg) if x]:
            env.vars[a.arg] = (self.values.annotation_value(a.annotation, reading) if a.annotation is not None else None) or UNKNOWN
        plain = is_method and not any(_decorator_name(d) in ("classmethod", "property") for d in node.decorator_list)
        if plain and cls is not None and cls.derived:
            # An unannotated parameter of a method that may override a provider's holds what the
            # provider passes: the checks read the overridden method's annotation (none: unknown).
            for position, a in [(i, x) for i, x in enumerate(all_args) if i > 0] + [(-1, x) for x in args.kwonlyargs]:
                if a.annotation is None:
                    env.vars[a.arg] = Chain(Root("param", cls.dotted, method=node.name, param=a.arg, position=position))
        hook = _hook_name(node, self.state.options.hook_prefixes)
        if hook is not None and (cls is None or not cls.derived):
            # A hook implementation: the provider passes its parameters by keyword, as the hook's
            # specification on the release names and annotates them (a method of an object
            # registered at run time as well as a module function).
            lead = 1 if is_method and not any(_decorator_name(d) == "staticmethod" for d in node.decorator_list) else 0
            for a in all_args[lead:] + list(args.kwonlyargs):
                if a.annotation is None:
                    env.vars[a.arg] = Chain(Root("hparam", hook, param=a.arg))
        for default in list(args.defaults) + [d for d in args.kw_defaults if d is not None]:
            self.record.expr(default, outer)
        if is_method and cls is not None and node.name == "__init__" and _defaults_none(args):
            self.state.found.init_nodes[qual] = (cls.dotted, node)  # read on a test of a parameter
        if not self.state.postponed:
            # An annotation is evaluated when the `def` runs: a call in it (`x: constr(regex=...)`) is made then.
            annotations = [a.annotation for a in all_args + list(args.kwonlyargs) + [x for x in (args.vararg, args.kwarg) if x]] + [node.returns]
            for annotation in annotations:
                if annotation is not None and _has_call(annotation):
                    self.record.expr(annotation, outer)
        if not is_method:
            self._installed(node, outer, qual, env)
        if is_method and first and cls is not None:
            env.vars[first] = Chain(Root("self", cls.dotted))
            if any(_decorator_name(d) == "classmethod" for d in node.decorator_list):
                env.vars[first] = UNKNOWN
        elif cls is None and first == "self":
            # A module-level function written to be bound onto an object (types.MethodType).
            env.vars[first] = Chain(Root("fself", f"{self.state.module}.{node.name}"))
            self.state.found.self_functions.add(f"{self.state.module}.{node.name}")
            _replacement_params(env, node, f"{self.state.module}.{node.name}", 0)
        # What a call of the method returns, learned once (pass 1): only a plain method no
        # decorator wraps (a decorator may return anything), whose call runs its body (not a
        # generator's or a coroutine's), every path ending in a `return`.
        learns = cls is not None and cls.learning and plain and in_body and not node.decorator_list and isinstance(node, ast.FunctionDef)
        if learns:
            scope.returns = []
        if cls is not None and cls.learning and not outer.emit and not learns:
            falls = self._learning_body(node.body, scope, cls)
        else:
            falls = self.statements.block(node.body, scope)
        if learns and cls is not None and scope.returns is not None:
            # a generator's call returns no display: looked for only where a display was returned
            if any(isinstance(r, ReturnedItems) for r in scope.returns) and any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in descendants(node)):
                scope.returns = [UNKNOWN]
            _learn_returned(cls, node.name, scope.returns, falls)

    def _learning_body(self, body: list[ast.stmt], scope: Scope, cls: ClassScope) -> bool:
        """A body in the learning pass, whose returns are not learned: the statements up to its last
        one that stores an attribute, and the rest only where a dict `self.X` holds may change
        there (as `_may_teach` decides for a whole method). What follows the last store binds only
        the function's own names, which die with it, and emits nothing."""
        last = max((i for i, stmt in enumerate(body) if self._stores(stmt)), default=-1)
        falls = self.statements.block(body[: last + 1], scope)
        if falls and last + 1 < len(body) and any(isinstance(value, DictValue) for value in cls.attr_values.values()):
            falls = self.statements.block(body[last + 1 :], scope)
        return falls

    def _stores(self, stmt: ast.stmt) -> bool:
        """`_stores_attribute(stmt)`, read once a walk (both a method and the functions nested in it ask)."""
        found = self._stmt_stores.get(id(stmt))
        if found is None:
            found = self._stmt_stores[id(stmt)] = _stores_attribute(stmt)
        return found

    def _installed(self, node, outer: Scope, qual: str, env: Env) -> None:
        """`@helper(obj, "name")` of a consumer patching helper (consumer/patching.py): the function
        is put where obj's attribute was, as `obj.name = f` would, behind the helper's own leading
        arguments. Its `self` (the parameter after them) is obj, or an instance of obj's class; the
        replacement and the binding are recorded as for `Cls.name = f`."""
        for decorator in node.decorator_list:
            if not isinstance(decorator, ast.Call) or any(isinstance(a, ast.Starred) for a in decorator.args):
                continue
            called = self.values.value(decorator.func, outer)
            helper = self.state.found.patch_helpers.get(called.dotted) if isinstance(called, (ConsumerRef, Helper)) and called.dotted else None
            if helper is None or not helper.decorates or len(decorator.args) <= max(helper.obj, helper.name):
                continue
            if helper.func is not None and len(decorator.args) > helper.func:
                continue  # the function is given: the call installs it, not the decorated one
            named = decorator.args[helper.name]
            if not (isinstance(named, ast.Constant) and isinstance(named.value, str)):
                continue
            # A function nested in another is named by its line too: several may share a name.
            dotted = f"{self.state.module}.{qual}" + (f"@{node.lineno}" if outer.function != "<module>" or outer.cls is not None else "")
            params = [*node.args.posonlyargs, *node.args.args]
            if len(params) > helper.lead and params[helper.lead].arg == "self" and params[helper.lead].annotation is None:
                env.vars["self"] = Chain(Root("fself", dotted))
                _replacement_params(env, node, dotted, helper.lead)
            if not outer.emit:
                return
            site = site_of(decorator)
            target = self.values.value(decorator.args[helper.obj], outer)
            path = None
            for option in target.options if isinstance(target, OneOf) else (target,):
                chain = (option.root, option.steps) if isinstance(option, Chain) else None
                self.state.found.method_bindings.append(MethodBinding(dotted, chain, site))
                if isinstance(option, Chain) and option.root.kind == "symbol" and all(s.kind == "attr" for s in option.steps):
                    path = ".".join([option.root.name, *(s.name or "" for s in option.steps)])
            if dotted != f"{self.state.module}.{node.name}":
                self.state.found.functions.append(defined_function(node, dotted, None))
            self.state.found.replacements.append(Replacement(named.value, dotted, path, "helper", True, site, helper.lead))
            return

    def class_def(self, node: ast.ClassDef, scope: Scope) -> None:
        function = scope.function
        dotted = f"{self.state.module}.{node.name}" if function == "<module>" else f"{self.state.module}.{function}.{node.name}"
        scope.env.vars[node.name] = ConsumerRef(dotted)
        if self.state.top_only:
            return
        provider_bases, consumer_bases, unread = [], [], []
        patched: list[tuple[str, ast.expr]] = []  # (consumer base, target) of each `Base[Target]`
        for base in node.bases:
            self.record.expr(base, scope)
            # `Base[T]`: the class is Base's (its subscript only parametrizes it).
            read = base.value if isinstance(base, ast.Subscript) else base
            value = self.values.value(read, scope)
            path = symbol_path(value)
            if path is not None:
                if read is base:
                    provider_bases.append(path)
            elif isinstance(value, ConsumerRef):
                consumer_bases.append(value.dotted)
                if isinstance(base, ast.Subscript):
                    patched.append((value.dotted, base.slice))
            elif isinstance(value, ImportChoice) and read is base and (chosen := symbol_path(value.ok)) is not None:
                # `try: from prov import Base` / `except ImportError: class Base: ...`: the provider's
                # class where the import works (the checks resolve it on the release; where it does
                # not, it resolves to nothing), else the consumer's stand-in
                provider_bases.append(chosen)
                if isinstance(value.fallback, ConsumerRef):
                    consumer_bases.append(value.fallback.dotted)
            elif isinstance(read, ast.Name) and scope.env.lookup(read.id) is None and hasattr(builtins, read.id):
                if read.id != "object":
                    consumer_bases.append(f"builtins.{read.id}")  # `str`, `Exception`: a class of neither side
            else:
                # A base the walk cannot name may supply any member: the checks prove nothing missing.
                unread.append(dotted_text(read) or "<computed base>")
        for kw in node.keywords:
            self.record.expr(kw.value, scope)
        for d in node.decorator_list:
            self.record.expr(d, scope)
        own = set(self.own_members(node))
        cls = ClassScope(dotted=dotted, own_members=own, property_attrs=_property_attrs(node), derived=bool(node.bases))
        # Pass 1 learns what each self.X holds; pass 2 emits uses with that knowledge.
        first = Scope(scope.env.child(), cls, function, live=scope.live, emit=False)
        self.statements.block(node.body, first)
        cls.learning = False
        second = Scope(scope.env.child(), cls, function, live=scope.live, emit=scope.emit)
        self.statements.block(node.body, second)
        if scope.emit:
            copies = self.state.names_setattr and copies_members(node)
            self.state.found.classes.append(
                ClassFacts(
                    dotted, tuple(provider_bases), tuple(consumer_bases), frozenset(own), site_of(node), tuple(unread), scope.live, copies
                )
            )
            for base_class, target in patched:
                self._patch_class_stores(node, own, base_class, target, scope)

    def _patch_class_stores(self, node: ast.ClassDef, own: set[str], base_class: str, target: ast.expr, scope: Scope) -> None:
        """`class P(Base[Target])`: P's own members, stored on Target if Base copies them there
        (decided by the checks, which see every file's classes: `AttributeStore.copied_by`)."""
        value = self.values.value(target, scope)
        site = site_of(node)
        for option in value.options if isinstance(value, OneOf) else (value,):
            if isinstance(option, Chain):
                for name in sorted(own):
                    self.state.found.attribute_stores.append(AttributeStore(name, (option.root, option.steps), site, None, base_class))


def _hook_name(node, prefixes: tuple[tuple[str, str], ...]) -> str | None:
    """The hook a function implements: its own name, or the one a decorator keyword names
    (`@hookimpl(specname="pytest_x")`), where it starts with a rule's hook prefix."""
    for prefix, rename in prefixes:
        named = node.name
        for d in node.decorator_list:
            for kw in d.keywords if isinstance(d, ast.Call) and rename else ():
                if kw.arg == rename and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                    named = kw.value.value
        if named.startswith(prefix) and named != prefix:
            return named
    return None


def _replacement_params(env: Env, node, function: str, lead: int) -> None:
    """The unannotated parameters after `self` (the parameter at `lead`) of a function written to be
    put over a provider method: what the provider's callers pass there, which the checks read from
    the annotations of the method it replaces (none, or no replacement found: unknown)."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    for position, a in [(i - lead, x) for i, x in enumerate(positional) if i > lead] + [(-1, x) for x in args.kwonlyargs]:
        if a.annotation is None:
            env.vars[a.arg] = Chain(Root("fparam", function, param=a.arg, position=position))


def _in_method(function: str, cls: ClassScope) -> bool:
    """Whether a scope whose function is `function` runs inside a method of `cls` (its body's
    functions are named `Class.name`; the class body itself runs in the enclosing function)."""
    return function.startswith(cls.dotted.rsplit(".", 1)[-1] + ".")


def _may_teach(node: ast.FunctionDef | ast.AsyncFunctionDef, cls: ClassScope, stores: bool | None = None) -> bool:
    """Whether walking a method (or a function nested in one) in a class's learning pass can change
    what the pass learns: it stores or deletes an attribute somewhere (`self.X = ...`, `del
    self.X`, `for self.X in ...`), or a dict `self.X` holds may be changed through a call or an
    item assignment. Nothing else the learning pass does outlives it: it emits nothing, and a
    function's own names are its own. (A method storing an attribute is walked whole: what
    follows the store may still change a dict it holds, `self.opts["k"] = v`.)
    `stores`: whether it stores one, where already read (`own_members`)."""
    if any(isinstance(value, DictValue) for value in cls.attr_values.values()):
        return True
    return stores if stores is not None else any(_stores_attribute(stmt) for stmt in node.body)


def _stores_attribute(stmt: ast.stmt) -> bool:
    """Whether a statement (or one under it) stores or deletes an attribute. Only statements do
    (as `own_members` reads them; a comprehension's `for self.x in` is not counted), so
    expressions are not walked."""
    return any(_stores_here(sub) for sub in statements_breadth_first(stmt))


def _stores_here(stmt: ast.AST) -> bool:
    """Whether the statement itself (not one under it) stores or deletes an attribute."""
    for target in assignment_targets(stmt):
        if not isinstance(target, ast.Name) and any(isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load) for n in descendants(target)):
            return True  # (a plain name, the commonest target, holds no attribute)
    return False


def _returns_tuple(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a body returns a tuple display somewhere (what its calls return may be learned)."""
    return any(isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Tuple) for stmt in _statements(node.body))


def _learn_returned(cls: ClassScope, name: str, returns: list[Value], falls: bool) -> None:
    """What calls of method `name` return: the items every `return` agrees on. Returns that
    disagree, one that is no such display, a path falling off the end (None), or a second
    definition of the name: not known."""
    first = returns[0] if returns else None
    known = isinstance(first, ReturnedItems) and not falls and all(r == first for r in returns) and name not in cls.returned
    cls.returned[name] = replace(first, via=f"{cls.dotted}.{name}") if known and isinstance(first, ReturnedItems) else UNKNOWN


def _has_call(annotation: ast.expr) -> bool:
    """Whether evaluating an annotation calls something (a name or a dotted name never does).
    The shapes annotations take are followed directly; any other is walked whole."""
    todo: list[ast.expr] = [annotation]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Name, ast.Constant)):
            continue
        if isinstance(node, ast.Attribute):
            todo.append(node.value)
        elif isinstance(node, ast.Subscript):
            todo += (node.value, node.slice)
        elif isinstance(node, ast.BinOp):
            todo += (node.left, node.right)
        elif isinstance(node, (ast.Tuple, ast.List)):
            todo += node.elts
        elif any(isinstance(n, ast.Call) for n in descendants(node)):
            return True
    return False

def own_members(node: ast.ClassDef, methods: dict[int, tuple[bool, bool]] | None = None) -> set[str]:
    """The names a class body defines, and the `self.X`/`cls.X` its statements assign. `methods`:
    given, it gets, for each method of the body, whether a statement under it stores an attribute
    and whether one returns a tuple display (`_stores_attribute`, `_returns_tuple`), read in the same pass."""
    own: set[str] = set()
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            own.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            own |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            own.add(stmt.target.id)
    for top in node.body:
        method = methods is not None and isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef))
        stores = returns_tuple = False
        for sub in statements_breadth_first(top):
            if method and sub is not top:
                stores = stores or _stores_here(sub)
                returns_tuple = returns_tuple or (isinstance(sub, ast.Return) and isinstance(sub.value, ast.Tuple))
            if isinstance(sub, ast.Assign):
                targets = sub.targets
            elif isinstance(sub, (ast.AnnAssign, ast.AugAssign)):
                targets = [sub.target]
            else:
                continue
            for t in targets:
                if isinstance(t, ast.Name):
                    continue  # the commonest target holds no attribute
                for leaf in descendants(t):
                    if isinstance(leaf, ast.Attribute) and isinstance(leaf.value, ast.Name) and leaf.value.id in ("self", "cls"):
                        own.add(leaf.attr)
        if method and methods is not None:
            methods[id(top)] = (stores, returns_tuple)
    return own


def _property_attrs(node: ast.ClassDef) -> dict[str, str]:
    """`@property def table(self): ...; return self._table`: property -> the self attribute every
    `return` under its body returns; a read of the property is what that attribute holds."""
    found: dict[str, str] = {}
    for stmt in node.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) or not stmt.args.args:
            continue
        if not any(_decorator_name(d) == "property" for d in stmt.decorator_list):
            continue
        me = stmt.args.args[0].arg
        returned = {
            r.value.attr if isinstance(r.value, ast.Attribute) and isinstance(r.value.value, ast.Name) and r.value.value.id == me else None
            for r in _statements(stmt.body)
            if isinstance(r, ast.Return)
        }
        attr = returned.pop() if len(returned) == 1 else None
        if attr is not None:
            found[stmt.name] = attr
    return found


def _statements(body: list[ast.stmt]):
    """Every statement under a body, nested ones included (expressions are not entered)."""
    for stmt in body:
        yield from statements_breadth_first(stmt)


def _defaults_none(args: ast.arguments) -> bool:
    return any(isinstance(d, ast.Constant) and d.value is None for d in (*args.defaults, *args.kw_defaults))


def _decorator_name(node) -> str | None:
    name = dotted_text(node.func if isinstance(node, ast.Call) else node)
    return name.rsplit(".", 1)[-1] if name else None
