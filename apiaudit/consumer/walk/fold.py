"""Consumer guard helpers: read where they are defined, captured for export, folded at each call.

A module-level function that is one `return <expr>`, a few statements `helpers.py` can run, or
annotated `-> TypeIs[X]` is a `Helper` (`helper`). Another module calling it gets it with the
values of the names it reads (`capture`). At a call the helper is folded with the call's
arguments bound (`call_helper`): its expression read by the `Evaluator`, its statements run
by `helpers.BodyRun` with tests read by the `Decider`; helpers it calls fold too, a bounded
depth and number of statements.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from apiaudit.consumer import guards as g
from apiaudit.consumer import helpers as h
from apiaudit.consumer.values import (
    UNBOUND,
    UNKNOWN,
    Chain,
    Const,
    ConsumerRef,
    Helper,
    HelperForm,
    ParsedVersion,
    Probe,
    ProviderDistribution,
    ProviderVersion,
    TupleOf,
    Value,
    VersionDerived,
    VersionPart,
)
from apiaudit.consumer.walk.decide import Decider
from apiaudit.consumer.walk.evaluate import Evaluator
from apiaudit.consumer.walk.known import const_of
from apiaudit.consumer.walk.scopes import Env, Scope
from apiaudit.consumer.walk.state import WalkState, text_of
from apiaudit.infra.astutil import descendants, dotted_text

_FOLDED = (Const, TupleOf, ProviderVersion, ParsedVersion, VersionPart, VersionDerived, Probe)  # what a body helper may return
_LOCAL = "\x00local:"  # a Helper.expr naming a helper of the module being read (its AST is at hand)


class Folding:
    """The guard helpers of one module's walk: this module's, and those it imports."""

    __slots__ = (
        "state", "values", "tests",
        "_helper_trees", "_local_helpers", "_local_bodies", "_body_trees", "_fold", "_default_nodes", "_body_reads",
    )  # fmt: skip

    def __init__(self, state: WalkState, values: Evaluator, tests: Decider):
        self.state = state
        self.values = values
        self.tests = tests
        self._helper_trees: dict[str, ast.expr | None] = {}  # None: the text does not parse
        self._local_helpers: dict[str, ast.expr] = {}  # this module's helpers: marker -> returned expression
        self._local_bodies: dict[str, list[ast.stmt]] = {}  # this module's body helpers: marker -> statements
        self._body_trees: dict[str, list[ast.stmt] | None] = {}
        self._fold: h.Budget | None = None  # the outermost helper fold under way, if any
        self._default_nodes: dict[str, dict[str, ast.expr]] = {}  # this module's helpers: non-literal defaults
        # id(a helper's kept body) -> (a literal there names the provider's distribution, the names it reads)
        self._body_reads: dict[int, tuple[bool, tuple[str, ...]]] = {}

    def helper(self, node, scope: Scope) -> Helper | None:
        """A module-level function that is one `return <expr>`, or annotated `-> TypeIs[X]`."""
        args = node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            return None
        params = tuple(a.arg for a in args.args)
        narrows = None
        ret = node.returns
        if isinstance(ret, ast.Subscript) and (dotted_text(ret.value) or "").rsplit(".", 1)[-1] in ("TypeIs", "TypeGuard"):
            narrows = ret.slice
        body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        expr = ""
        form: HelperForm = "expr"
        if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
            # The text is written only when another module imports the helper (`capture`).
            expr = f"{_LOCAL}{self.state.module}.{node.name}"
            self._local_helpers[expr] = body[0].value
        elif narrows is None and h.is_body_helper(node, self.state.names_suspend):
            expr, form = f"{_LOCAL}{self.state.module}.{node.name}", "body"
            self._local_bodies[expr] = body
        elif narrows is None and _is_requirement_check(node, body):
            expr, form = f"{_LOCAL}{self.state.module}.{node.name}", "require"
            self._local_bodies[expr] = body
            self.state.found.requirements_seen = True
        elif narrows is None and self._mentions_release(body):
            form = "release"  # not followed, but it reads the release: a guard on it is undecided
        if not expr and narrows is None and form != "release":
            return None
        with_defaults = list(zip(args.args[len(args.args) - len(args.defaults):], args.defaults))
        defaults = tuple((a.arg, const_of(d)) for a, d in with_defaults)
        # A default naming a module constant is read when the helper is called or exported.
        self._default_nodes[f"{self.state.module}.{node.name}"] = {a.arg: d for a, d in with_defaults if not isinstance(d, ast.Constant)}
        return Helper(
            f"{self.state.module}.{node.name}", params, defaults, expr, (), type_guard=narrows is not None,
            narrows_to=Const(text_of(narrows, 10_000)) if narrows is not None else None, form=form,
        )

    def capture(self, helper: Helper) -> Helper:
        """A helper other modules call: the values of the names it reads, from here.

        A helper it calls is written as a `ConsumerRef`: the call finds it again among the
        exports every module shares (`call_helper`), so the cache stays flat data."""
        names: set[str] = set()
        local: set[str] = set()
        if helper.form == "release":
            return helper
        helper = replace(helper, defaults=self._defaults(helper))
        if helper.form in ("body", "require"):
            body = self._local_bodies.get(helper.expr)
            if body is not None:
                helper = replace(helper, expr=ast.unparse(ast.Module(body=body, type_ignores=[])))
            else:
                body = self._parse_body(helper.expr) or []
            local = h.local_names(body)
            names |= {n.id for stmt in body for n in descendants(stmt) if isinstance(n, ast.Name)}
        elif helper.expr.startswith(_LOCAL):
            helper = replace(helper, expr=text_of(self._local_helpers[helper.expr], limit=100_000))
        for text in (helper.expr if helper.form == "expr" else "", helper.narrows_to.value if isinstance(helper.narrows_to, Const) else ""):
            tree = self.parse_expr(str(text)) if text else None
            if tree is not None:
                names |= {n.id for n in descendants(tree) if isinstance(n, ast.Name)}
        env = tuple(
            sorted(
                (n, ConsumerRef(v.dotted) if isinstance(v, Helper) else v)
                for n in names - set(helper.params) - local
                if (v := self.state.module_env.lookup(n)) is not None
            )
        )
        return replace(helper, env=env)

    def call_helper(self, helper: Helper, node: ast.Call, scope: Scope, depth: int) -> Value:
        """A consumer helper at a call: its returned expression or its statements (`helpers.py`),
        with the call's arguments bound; helpers it calls fold too, `MAX_HELPER_DEPTH` deep."""
        outermost = self._fold is None
        budget = self._fold or h.Budget()
        if not helper.expr or helper.form == "require":
            return UNKNOWN  # a requirement check's value is None; what it decides is `requirement_tests`'
        if (helper.form == "expr" and depth > 2) or budget.depth >= h.MAX_HELPER_DEPTH:
            return VersionDerived() if self._mentions_release(self._statements_of(helper)) else UNKNOWN
        inner = self._inner_scope(helper, node, scope, depth)
        if inner is None:
            return UNKNOWN
        self._fold = budget
        budget.depth += 1
        try:
            if helper.form == "expr":
                tree = self.parse_expr(helper.expr)
                return UNKNOWN if tree is None else self.values.value(tree, inner, depth=depth + 1)
            return self._run_body(helper, [inner.env.vars[p] for p in helper.params], inner, budget)
        finally:
            budget.depth -= 1
            if outermost:
                self._fold = None

    def requirement_tests(self, helper: Helper, node: ast.Call, scope: Scope) -> list[g.Decision]:
        """A call to a requirement check: how each of its raising tests is decided, read where the
        check is defined with the call's arguments bound (empty when it cannot be read)."""
        body = self._local_bodies.get(helper.expr) or self._parse_body(helper.expr) or []
        inner = self._inner_scope(helper, node, scope, 0)
        if inner is None:
            return []
        for name in h.local_names(body) - set(helper.params):
            inner.env.vars[name] = UNBOUND
        decisions = []
        for stmt in body:
            if isinstance(stmt, ast.Assign):  # `sig = inspect.signature(f)`, read by the tests after it
                value = self.values.value(stmt.value, inner)
                inner.env.vars.update({t.id: value for t in stmt.targets if isinstance(t, ast.Name)})
            elif isinstance(stmt, ast.If):
                decisions.append(self.tests.decide(stmt.test, inner))
        return decisions

    def _inner_scope(self, helper: Helper, node: ast.Call, scope: Scope, depth: int) -> Scope | None:
        """The scope a helper's statements are read in at a call: its parameters bound to the call's
        arguments (None: arguments it cannot bind, `*args`, `**kw`, too many)."""
        if any(isinstance(a, ast.Starred) for a in node.args) or any(kw.arg is None for kw in node.keywords) or len(node.args) > len(helper.params):
            return None
        # This module's helper reads this module's names; another's, only those it was exported with.
        env = Env(self.state.module_env if helper.dotted in self._default_nodes else None)
        # A helper it calls travels as a ConsumerRef to its export (`capture`).
        env.vars.update({n: self.state.imports_ctx.consumer_value(v.dotted) if isinstance(v, ConsumerRef) else v for n, v in helper.env})
        bound = dict(self._defaults(helper))
        for name, arg in zip(helper.params, node.args):
            bound[name] = self.values.value(arg, scope, depth=depth + 1)
        for kw in node.keywords:
            if kw.arg in helper.params:
                bound[kw.arg] = self.values.value(kw.value, scope, depth=depth + 1)
        for name in helper.params:
            env.vars[name] = bound.get(name, UNKNOWN)
        # Notes made inside (a version compared as text) belong to the outermost call.
        return Scope(
            env, None, scope.function, emit=False, helper_call=scope.helper_call or node,
            caller_live=scope.caller_live or scope.live, caller_emits=scope.caller_emits if scope.helper_call is not None else scope.emit,
        )  # fmt: skip

    def _defaults(self, helper: Helper) -> tuple[tuple[str, Value], ...]:
        """Its defaults; one naming a module constant of this module (`v=MIN_VERSION`) takes its value."""
        nodes = self._default_nodes.get(helper.dotted)
        if not nodes:
            return helper.defaults
        scope = Scope(self.state.module_env, None, "<module>", emit=False)
        out = []
        for name, value in helper.defaults:
            if name in nodes and isinstance(nodes[name], (ast.Name, ast.Attribute)):
                found = self.values.value(nodes[name], scope)
                value = found if isinstance(found, _FOLDED) else UNKNOWN
            out.append((name, value))
        return tuple(out)

    def _run_body(self, helper: Helper, args: list[Value], inner: Scope, budget: h.Budget) -> Value:
        """A body helper, run only on literal arguments; not foldable: Unknown, or VersionDerived
        when the audited release may decide it (the guard is then undecided, not run-time)."""
        body = self._local_bodies.get(helper.expr) or self._parse_body(helper.expr)
        if body is None:
            return UNKNOWN

        def about_provider() -> bool:  # asked only where the body is not run (the run reads no name of inner's)
            return any(
                isinstance(a, VersionDerived) or (isinstance(a, Const) and isinstance(a.value, str) and self.values.is_provider_dist(a.value))
                for a in args
            ) or self._reads_provider(body, inner.env)

        # A provider callable may be handed in too: a probe helper (`"x" in inspect.signature(f).parameters`).
        if not all(isinstance(a, (Const, ProviderVersion, ParsedVersion, VersionPart, Chain)) for a in args):
            return VersionDerived() if about_provider() else UNKNOWN
        state: h.State = {name: UNBOUND for name in h.local_names(body)}
        state.update({name: inner.env.vars[name] for name in helper.params})

        def scope_of(locals_: h.State) -> Scope:
            env = Env(inner.env)
            env.vars.update(locals_)
            return replace(inner, env=env)

        run = h.BodyRun(
            value_of=lambda node, locals_: self.values.value(node, scope_of(locals_)),
            decide_of=lambda node, locals_: self.tests.decide(node, scope_of(locals_)),
            budget=budget,
        )
        try:
            result = run.run(body, state)
        except (h.Unfoldable, RecursionError):
            return VersionDerived() if run.undecided_seen or about_provider() else UNKNOWN
        result = _folded_only(result)  # a helper folds to what a guard tests, never to an object
        if isinstance(result, Probe):
            return result
        if g.truthiness(self.state.folder, result) is None and (run.undecided_seen or g.Folder.involves_provider(result)):
            return VersionDerived()
        return result

    def _statements_of(self, helper: Helper) -> list[ast.stmt]:
        if helper.form == "body":
            return self._local_bodies.get(helper.expr) or self._parse_body(helper.expr) or []
        tree = self.parse_expr(helper.expr) if helper.expr else None
        return [ast.Expr(tree)] if tree is not None else []

    def _mentions_release(self, body: list[ast.stmt]) -> bool:
        """The text reads the provider's version (`NAME.__version__`) or names its package or distribution."""
        if not self.state.names_release:
            return False
        for stmt in body:
            for node in descendants(stmt):
                if isinstance(node, ast.Attribute) and node.attr == "__version__" and self.state.imports_ctx.is_provider(dotted_text(node.value) or ""):
                    return True
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and self.values.is_provider_dist(node.value):
                    return True
        return False

    def _reads_provider(self, body: list[ast.stmt], env: Env) -> bool:
        """The body names the provider: a provider name, its version, or its distribution as a literal.
        (A body is kept by the helper it is (`_local_bodies`, `_body_trees`): its text is read once.)"""
        read = self._body_reads.get(id(body))
        if read is None:
            literal, names = False, dict[str, None]()
            for stmt in body:
                for node in descendants(stmt):
                    if isinstance(node, ast.Constant) and isinstance(node.value, str) and self.values.is_provider_dist(node.value):
                        literal = True
                    elif isinstance(node, ast.Name):
                        names[node.id] = None
            read = self._body_reads[id(body)] = (literal, tuple(names))
        return read[0] or any(isinstance(env.lookup(name), (Chain, ProviderVersion, ProviderDistribution, VersionPart)) for name in read[1])

    def _parse_body(self, text: str) -> list[ast.stmt] | None:
        if text not in self._body_trees:
            try:
                self._body_trees[text] = ast.parse(text).body
            except (SyntaxError, RecursionError, ValueError):
                self._body_trees[text] = None
        return self._body_trees[text]

    def parse_expr(self, text: str) -> ast.expr | None:
        if text in self._local_helpers:
            return self._local_helpers[text]
        if text not in self._helper_trees:
            try:
                self._helper_trees[text] = ast.parse(text, mode="eval").body
            except (SyntaxError, RecursionError, ValueError):
                self._helper_trees[text] = None
        return self._helper_trees[text]


def _is_requirement_check(node: ast.FunctionDef | ast.AsyncFunctionDef, body: list[ast.stmt]) -> bool:
    """A plain function (called, its statements run) that is `if <test>: raise` checks."""
    if isinstance(node, ast.AsyncFunctionDef) or node.decorator_list or h.raising_tests(body) is None:
        return False  # a coroutine or a decorated function: the call may not run the body
    # a generator: the call runs nothing
    return not any(isinstance(n, (ast.Yield, ast.YieldFrom)) for stmt in body for n in descendants(stmt))


def _folded_only(value: Value) -> Value:
    """The value if it is one a guard tests (literals, versions, tuples of them), else Unknown."""
    if isinstance(value, TupleOf):
        return TupleOf(tuple(_folded_only(v) for v in value.items))
    return value if isinstance(value, _FOLDED) else UNKNOWN
