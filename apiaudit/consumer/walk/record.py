"""What the walk emits: provider imports, and at each call site its uses, RPC names, injections.

`Recorder.expr` walks an expression (iteratively: deep expressions are valid code) and records
each outermost chain that reaches the provider as a `Use`, one per way it can be through import
fallbacks, under the scope's `Liveness`; the operands of `and`/`or` and the sides of `a if t else
b` run under the tests before them. At a call it records string RPCs, injected consumer classes
(by keyword or dict key) and functions bound onto objects (`types.MethodType`, `obj.f = f`,
`setattr`), and hands the dicts the call touches to `Dicts`.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Iterator, cast

from apiaudit.consumer import guards as g
from apiaudit.consumer.records import AttributeStore, Site, Condition, ConditionKind, ImportRef, ImportUse, Injection, MethodBinding, Root, RpcCall, Step, Use
from apiaudit.consumer.values import UNKNOWN, Chain, Const, ConsumerRef, Helper, ImportChoice, OneOf, Unbound, Unknown, Value
from apiaudit.consumer.walk.decide import Decider, may_compare_text
from apiaudit.consumer.walk.dicts import Dicts
from apiaudit.consumer.walk.evaluate import Evaluator
from apiaudit.consumer.walk.known import IMPORT_MODULE
from apiaudit.consumer.walk.scopes import Env, Scope, branch_scope, forget_targets, is_self, unchecked
from apiaudit.consumer.walk.state import WalkState, site_of, text_of
from apiaudit.infra.astutil import child_nodes, dotted_text

_NO_IDS: frozenset[int] = frozenset()
_LEAF_TYPES = frozenset({ast.Name, ast.Constant})
_CHAIN_TYPES = frozenset({ast.Call, ast.Attribute, ast.Subscript})  # a chain's steps
# expressions whose children are read as they are, with nothing of their own to record (the
# commonest others, taken before the kinds that need more)
_PLAIN_TYPES = frozenset({ast.BinOp, ast.UnaryOp, ast.Tuple, ast.List, ast.Set, ast.JoinedStr, ast.FormattedValue, ast.Starred, ast.Slice})


class Recorder:
    """What one module's walk records at imports and call sites."""

    __slots__ = ("state", "rpc", "injection_keywords", "values", "tests", "dicts", "changes")

    def __init__(self, state: WalkState, values: Evaluator, tests: Decider, dicts: Dicts):
        self.state = state
        self.rpc = {m: (i, k) for m, i, k in state.options.rpc_methods}
        self.injection_keywords = frozenset(state.options.injection_keywords)
        self.values = values
        self.tests = tests
        self.dicts = dicts
        # What expressions changed so far (a dict a call touched, a name `:=` bound): an
        # expression that changed nothing leaves the names as it read them (`expr`'s answer).
        self.changes = 0

    def reach(self, stmt: ast.Import | ast.ImportFrom, scope: Scope) -> None:
        """The modules an import statement on a live line may run (consumer/reach.py's edges)."""
        if not scope.emit:
            return
        reaches = self.state.found.reaches
        if isinstance(stmt, ast.Import):
            reaches.update(dict.fromkeys(alias.name for alias in stmt.names))
            return
        base = self.state.imports_ctx.absolute(stmt.module, stmt.level)
        if base:
            reaches[base] = None
            reaches.update(dict.fromkeys(f"{base}.{alias.name}" for alias in stmt.names if alias.name != "*"))

    def import_use(self, module: str, name: str | None, alias: ast.alias | ast.Call, scope: Scope, statement: ast.stmt | None = None) -> None:
        if not scope.emit or not self.state.imports_ctx.is_provider(module):
            return
        guard = "TYPE_CHECKING" if scope.type_checking else scope.guard
        site = site_of(alias)
        if statement is not None and site.line != statement.lineno:
            # `from m import (\n  a,\n)`: Python reports a failing import at the statement's first line
            site = Site(statement.lineno, statement.col_offset, site.end_line, site.end_column)
        self.state.found.imports.append(
            ImportUse(
                module=module, name=name, site=site, guarded=guard, live=scope.live,
                caught=scope.caught if guard and not scope.type_checking else None,
                drops=scope.drops if guard and not scope.type_checking else None,
            )  # fmt: skip
        )

    def expr(self, root: ast.AST | None, scope: Scope) -> Value | None:
        """Emit every provider use inside an expression (iteratively: deep expressions are valid code).
        What the root holds, as its use was read (its own steps to be checked), where it was read
        and nothing the expression ran changed a name since; else None."""
        if root is None:
            return None
        changes = self.changes
        held: Value | None = None
        stack: list[tuple[ast.AST, bool]] = [(root, False)]
        # the `self._x` of `self._x(...)`: a call, not another use (a set made at the first such call)
        called: set[int] | frozenset[int] = _NO_IDS
        while stack:
            node, in_chain = stack.pop()
            kind = type(node)  # parsed nodes are of ast's own classes: one set lookup for the commonest
            if kind in _LEAF_TYPES:
                # a private name read, or named in a string (`getattr(self, "_x")`): it may run from there
                text = node.id if kind is ast.Name else node.value  # type: ignore[attr-defined]
                if type(text) is str and text[:1] == "_" and scope.emit and _private(text) and id(node) not in called:
                    self.state.found.private_refs.add(text)
                continue
            if kind in _CHAIN_TYPES:
                if not in_chain and scope.emit:
                    read = self._emit_use(cast(ast.expr, node), scope)
                    if node is root:
                        held = read
                if isinstance(node, ast.Call):
                    if scope.emit:
                        self._call_facts(node, scope)
                        name = _private_callee(node.func, scope)
                        if name is not None:
                            self.state.found.private_calls.setdefault(name, []).append(scope.live)
                            if not isinstance(called, set):
                                called = set()
                            called.add(id(node.func))
                    if self.dicts.effects(node, scope):
                        self.changes += 1
                    # Pushed in reverse, so that they are taken in source order: func, args, keywords.
                    stack.extend([(k.value, False) for k in reversed(node.keywords)])
                    stack.extend([(a.value if isinstance(a, ast.Starred) else a, False) for a in reversed(node.args)])
                    stack.append((node.func, True))
                elif isinstance(node, ast.Attribute):
                    if scope.emit and id(node) not in called and _private(node.attr):
                        self.state.found.private_refs.add(node.attr)
                    stack.append((node.value, True))
                elif isinstance(node, ast.Subscript):
                    stack.append((node.slice, False))
                    stack.append((node.value, True))
            elif kind in _PLAIN_TYPES:
                for child in reversed(child_nodes(node)):
                    if isinstance(child, ast.expr):
                        stack.append((child, False))
            elif isinstance(node, ast.Await):
                stack.append((node.value, in_chain))
            elif isinstance(node, ast.Lambda):
                inner = scope.child()
                for a in node.args.args:
                    inner.env.vars[a.arg] = UNKNOWN
                self.expr(node.body, inner)
            elif isinstance(node, ast.NamedExpr):
                self.expr(node.value, scope)
                scope.env.vars[node.target.id] = unchecked(self.values.value(node.value, scope))
                self.changes += 1
            elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                inner = scope.child()
                for gen in node.generators:
                    self.expr(gen.iter, inner)
                    forget_targets(gen.target, inner)
                    for cond in gen.ifs:
                        self.expr(cond, inner)
                for part in ("elt", "key", "value"):
                    if hasattr(node, part):
                        self.expr(getattr(node, part), inner)
            elif isinstance(node, ast.IfExp):
                # `a if test else b`: each side runs under the test, as an `if` statement's arms do.
                self.expr(node.test, scope)
                decision = self.tests.decide(node.test, scope)
                for branch, side in ((decision.if_true, node.body), (decision.if_false, node.orelse)):
                    if not branch.dead:
                        self.expr(side, branch_scope(scope, branch))
            elif isinstance(node, ast.BoolOp):
                # `a and b` runs b only when a holds (`or`: when it does not).
                self.expr(node.values[0], scope)
                guarded = scope
                for previous, value in zip(node.values, node.values[1:]):
                    decision = self.tests.decide(previous, guarded)
                    branch = decision.if_true if isinstance(node.op, ast.And) else decision.if_false
                    if branch.dead:
                        break
                    guarded = branch_scope(guarded, branch)
                    self.expr(value, guarded)
            elif isinstance(node, ast.Dict):
                if scope.emit:
                    self._dict_injections(node, scope)
                stack.extend(reversed([(c, False) for c in child_nodes(node) if isinstance(c, ast.expr)]))
            elif isinstance(node, ast.Compare) and scope.emit and may_compare_text(node):
                self.tests.decide(node, scope)  # notes string-compared versions where they are written
                stack.extend(reversed([(c, False) for c in child_nodes(node) if isinstance(c, ast.expr)]))
            else:
                for child in reversed(child_nodes(node)):
                    if isinstance(child, ast.expr):
                        stack.append((child, False))
                    elif isinstance(child, ast.keyword):
                        stack.append((child.value, False))
        return held if self.changes == changes else None

    def _emit_use(self, node: ast.expr, scope: Scope) -> Value:
        """The uses a chain makes; what it holds, as read for them."""
        value = self.values.value(node, scope, fresh=True)
        # most values read are none of those: no generator to make for them
        for chain, conditions, failed in _sides(value) if isinstance(value, (Chain, OneOf, ImportChoice)) else ():
            if any(s.check for s in chain.steps) or failed is not None:
                live = scope.live
                for c in conditions:
                    live = live.under(c)
                self.state.found.uses.append(
                    Use(
                        chain.root, chain.steps, site_of(node), scope.function, text_of(node), live, failed, scope.type_error_handler,
                        scope.type_error_retry,
                    )
                )
        if self.state.names_version:
            self._emit_version_reads(node, scope)
        return value

    def _emit_version_reads(self, node: ast.expr, scope: Scope) -> None:
        """`NAME.__version__` folds to the audited release's version, but the read is a use too:
        on a release whose module defines no `__version__` it raises (issue 27, cause 11)."""
        cur: ast.expr = node
        while isinstance(cur, (ast.Call, ast.Attribute, ast.Subscript)):
            if isinstance(cur, ast.Attribute) and cur.attr == "__version__":
                base = self.values.value(cur.value, scope)
                if isinstance(base, Chain) and base.root.kind == "symbol" and all(s.kind == "attr" for s in base.steps):
                    read = base.steps + (Step("attr", name="__version__"),)
                    self.state.found.uses.append(Use(base.root, read, site_of(cur), scope.function, text_of(cur), scope.live))
            cur = cur.func if isinstance(cur, ast.Call) else cur.value

    def _dict_injections(self, node: ast.Dict, scope: Scope) -> None:
        for key, val in zip(node.keys, node.values):
            if isinstance(key, ast.Constant) and key.value in self.injection_keywords:
                self.state.found.injections.append(Injection(key.value, self._class_named(val, scope), site_of(val), scope.live))

    def injection_by_store(self, keyword: str, value: Value | None, site_node: ast.AST, scope: Scope, obj: ast.expr) -> None:
        """`config.worker_extension_cls = "pkg.mod.Ext"` / `setattr(config, "...", Ext)`: a class
        installed by name on a provider config object, as the keyword does (the rules name the keys).
        An attribute of the consumer's own object (`self` of a class of no provider base, a
        consumer class) of the same name is its own business, not the provider's config."""
        if keyword not in self.injection_keywords or not scope.emit:
            return
        if scope.cls is not None and not scope.cls.derived and is_self(obj, scope):
            return
        if isinstance(self.values.value(obj, scope), ConsumerRef):
            return
        self.state.found.injections.append(Injection(keyword, _named_class(value), site_of(site_node), scope.live))

    def injections_behind(self, rest: list[ast.stmt], scope: Scope, refusal: str) -> None:
        """Classes the statements after a refusal of the release install by keyword: they never
        run there, but an RPC that needs the class is then the refusal's consequence, not a
        method the consumer forgot (`checks.rpc`). Read as written, not walked."""
        if not scope.emit:
            return
        for node in (n for stmt in rest for n in ast.walk(stmt)):
            for kw in node.keywords if isinstance(node, ast.Call) else ():
                if kw.arg in self.injection_keywords:
                    self.state.found.injections.append(Injection(kw.arg, self._class_named(kw.value, scope), site_of(kw.value), scope.live, behind=refusal))

    def _class_named(self, node: ast.expr, scope: Scope) -> str | None:
        """The consumer class a value names: a string constant (dotted), or a class reference."""
        return _named_class(self.values.value(node, scope))

    def _call_facts(self, node: ast.Call, scope: Scope) -> None:
        self._consumer_class_call(node, scope)
        if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) and "." in node.args[0].value:
            called = self.values.value(node.func, scope)
            if isinstance(called, ConsumerRef) and called.dotted in IMPORT_MODULE:
                self.import_use(node.args[0].value, None, node, scope)  # a provider module named by a string
        for kw in node.keywords:
            if kw.arg in self.injection_keywords:
                self.state.found.injections.append(Injection(kw.arg, self._class_named(kw.value, scope), site_of(kw.value), scope.live))
        if isinstance(node.func, ast.Attribute) and node.func.attr in self.rpc:
            index, keyword = self.rpc[node.func.attr]
            name_node = None
            if index is not None and len(node.args) > index and not any(isinstance(a, ast.Starred) for a in node.args[: index + 1]):
                name_node = node.args[index]
            for kw in node.keywords:
                if keyword and kw.arg == keyword:
                    name_node = kw.value
            if name_node is not None:
                value = self.values.value(name_node, scope)
                name = value.value if isinstance(value, Const) and isinstance(value.value, str) else None
                owner = node.func.value
                held = scope.env.lookup(owner.id) if isinstance(owner, ast.Name) and is_self(owner, scope) else None
                receiver = held.root.name if isinstance(held, Chain) else None
                self.state.found.rpc_calls.append(RpcCall(node.func.attr, name, site_of(node), scope.function, scope.live, receiver))
        if isinstance(node.func, ast.Name) and node.func.id == "setattr" and len(node.args) == 3 and not isinstance(node.args[1], ast.Constant):
            target = self.values.value(node.args[0], scope)
            if isinstance(target, ConsumerRef) and scope.emit:
                self.state.found.dynamic_classes.add(target.dotted)
        if isinstance(node.func, ast.Name) and node.func.id == "setattr" and len(node.args) == 3 and isinstance(node.args[1], ast.Constant):
            self.bind_function(node.args[0], self.values.value(node.args[2], scope), scope, node)
            if isinstance(node.args[1].value, str):
                self.store(node.args[0], node.args[1].value, scope, node)
                self.injection_by_store(node.args[1].value, self.values.value(node.args[2], scope), node.args[2], scope, node.args[0])
        func_name = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id if isinstance(node.func, ast.Name) else None
        if func_name == "MethodType" and dotted_text(node.func) in ("types.MethodType", "MethodType") and len(node.args) == 2:
            func_value = self.values.value(node.args[0], scope)
            if isinstance(func_value, (ConsumerRef, Helper)):
                dotted = func_value.dotted
                if dotted:
                    target = self.values.value(node.args[1], scope)
                    own = self._assigned_attrs(node.args[1], scope)
                    for option in (target.options if isinstance(target, OneOf) else (target,)):
                        chain = (option.root, option.steps) if isinstance(option, Chain) else None
                        self.state.found.method_bindings.append(MethodBinding(dotted, chain, site_of(node), own))

    def _consumer_class_call(self, node: ast.Call, scope: Scope) -> None:
        """`Sub(...)` of a name the consumer defines: a use rooted at the consumer class, which the
        checks judge when Sub derives from a provider class whose `__init__` is synthesized from
        fields (and Sub has none of its own). A function of this module is passed over; a name
        imported from another module of the same package may be a class (the checks know its
        facts); names from elsewhere (the standard library) are not the consumer's classes."""
        # What the callee holds, as the call's use just read it (taken, so never read stale)
        read, self.values.callee = self.values.callee, None
        # `Sub(...)` or `module.Sub(...)`: a longer chain (`self.x.build(...)`) names no class of
        # this package, and is not evaluated again here (every call passes this way)
        if not (isinstance(node.func, ast.Name) or (isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name))):
            return
        called = read[1] if read is not None and read[0] is node else self.values.value(node.func, scope)
        package = self.state.module.partition(".")[0]
        if not isinstance(called, ConsumerRef) or called.dotted.partition(".")[0] != package:
            return
        local = called.dotted.startswith(f"{self.state.module}.")
        if local and called.dotted not in self.state.found.class_members:
            return
        step = Step("call", call=self.values.call_shape(node, scope))
        self.state.found.uses.append(
            Use(
                Root("cls", called.dotted), (step,), site_of(node), scope.function, text_of(node), scope.live, None,
                scope.type_error_handler, scope.type_error_retry,
            )
        )  # fmt: skip

    def bind_function(self, obj: ast.AST, func_value: Value | None, scope: Scope, site_node: ast.AST) -> None:
        """`obj.forward = f` / `setattr(obj, "forward", f)` of a module function written with `self`
        first: audited as if bound onto obj (the patching idiom; calls through obj pass obj)."""
        if not isinstance(func_value, (ConsumerRef, Helper)) or func_value.dotted not in self.state.found.self_functions:
            return
        target = self.values.value(obj, scope)
        own = self._assigned_attrs(obj, scope)
        for option in (target.options if isinstance(target, OneOf) else (target,)):
            chain = (option.root, option.steps) if isinstance(option, Chain) else None
            self.state.found.method_bindings.append(MethodBinding(func_value.dotted, chain, site_of(site_node), own))

    def store(self, obj: ast.AST, name: str, scope: Scope, site_node: ast.AST) -> None:
        """The consumer adds `name` to the object `obj` holds (see `AttributeStore`)."""
        if not scope.emit:
            return
        target = self.values.value(obj, scope)
        holder = obj.attr if isinstance(obj, ast.Attribute) else None
        for option in (target.options if isinstance(target, OneOf) else (target,)):
            # A plain name of a type the walk cannot tell (an item unpacked from a provider call's
            # result, a chain ending in the item's index) may hold any object: recorded untied,
            # for a receiver only declared elsewhere.
            item = isinstance(option, Chain) and bool(option.steps) and option.steps[-1].kind == "subscript" and option.steps[-1].name is not None
            chain = (option.root, option.steps) if isinstance(option, Chain) and not item else None
            untied = isinstance(obj, ast.Name) and (isinstance(option, Unknown) or item)
            if chain is not None or holder is not None or untied:
                self.state.found.attribute_stores.append(AttributeStore(name, chain, site_of(site_node), holder))
            if item:
                # the set itself, on an item unpacked from a provider call's result: judged where
                # the checks know the item takes no new attribute (a builtin the provider's
                # annotation names: a dict has no `__dict__`)
                assert isinstance(option, Chain)
                steps = tuple(replace(s, check=False) if s.check else s for s in option.steps) + (Step("store", name=name),)
                self.state.found.uses.append(Use(option.root, steps, site_of(site_node), scope.function, text_of(site_node), scope.live))

    def _assigned_attrs(self, node: ast.AST, scope: Scope) -> tuple[str, ...]:
        """Attributes the consumer set on the object named `node` (`base._ext = self`): its own members."""
        if not isinstance(node, ast.Name):
            return ()
        prefix = f"{node.id}."
        names: set[str] = set()
        env: Env | None = scope.env
        while env is not None:
            names.update(k[len(prefix):] for k in env.vars if k.startswith(prefix))
            env = env.parent
        return tuple(sorted(names))


def _named_class(value: Value | None) -> str | None:
    """The consumer class a value names: a dotted string (`pkg.mod.Class` or `pkg.mod:Class`),
    or a class reference."""
    if isinstance(value, Const) and isinstance(value.value, str):
        return value.value.replace(":", ".")
    if isinstance(value, ConsumerRef):
        return value.dotted
    return None


def _private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__") and name.isidentifier() and name != "_"


def _private_callee(func: ast.expr, scope: Scope) -> str | None:
    """`_x` of a direct call `_x(...)`, `self._x(...)` or `cls._x(...)`."""
    if isinstance(func, ast.Name) and _private(func.id):
        return func.id
    if isinstance(func, ast.Attribute) and _private(func.attr) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
        return func.attr
    return None


def _sides(value: Value, conditions: tuple[Condition, ...] = ()) -> Iterator[tuple[Chain, tuple[Condition, ...], ImportRef | None]]:
    """(chain, conditions, failed import) for each way a value can be, through import choices."""
    if isinstance(value, Chain):
        yield value, conditions, None
    elif isinstance(value, OneOf):
        for option in value.options:
            yield option, conditions, None
    elif isinstance(value, ImportChoice):
        ok_cond = Condition(ConditionKind.IMPORT_FAILS, False, f"{g.import_ref_text(value.origin)} works", imports=value.imports, caught=value.caught)
        fail_cond = replace(ok_cond, expect=True, text=f"{g.import_ref_text(value.origin)} fails")
        yield from _sides(value.ok, conditions + (ok_cond,))
        if isinstance(value.fallback, Unbound) or (isinstance(value.fallback, Const) and value.fallback.value is None):
            for chain, conds, _ in _sides(value.ok, ()):
                yield chain, conditions + (fail_cond,) + conds, value.origin
        else:
            yield from _sides(value.fallback, conditions + (fail_cond,))
