"""Guard helpers of several statements, folded at a call whose arguments are literals.

Real compatibility code asks `if is_x_available(min_version="0.17.1"):` where the helper reads a
version through another helper, branches, and returns early. `BodyRun` evaluates such a body
as Python would on the audited release: parameters bound to the call's literals and defaults,
locals assigned, `if`/`elif`/`else` on tests the visitor folds (both sides run and their
results join when a test is not decided), `try` as its body joined with each handler started
from any point of the body, early `return`s and `raise`. Expressions are the visitor's
(`ModuleVisitor._value` / `_decide`), so helpers calling helpers fold too, to a bounded depth.

Anything else (a loop, `with`, a nested function, a store into an object) is `Unfoldable`:
the call is not folded and its guard is not decided. A join that differs gives `Unknown`,
never a guess, so a fold is either what Python computes or nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from apiaudit.consumer import guards as g
from apiaudit.consumer.values import (
    UNBOUND,
    UNKNOWN,
    Const,
    ProviderDistribution,
    ProviderVersion,
    TupleOf,
    Value,
    join,
)
from apiaudit.infra.astutil import descendants

MAX_HELPER_DEPTH = 3  # helpers calling helpers: deeper calls are not folded
MAX_STATEMENTS = 200  # statements one outermost fold may run, helpers it calls included
MAX_BODY_STATEMENTS = 60  # a longer function is not a guard helper (nor exported as one)
# What a metadata lookup raises for a distribution that is not installed: a handler catching only
# these cannot run where the `try` looked up the audited provider, which is installed.
_NOT_INSTALLED = frozenset({"PackageNotFoundError", "DistributionNotFound"})

State = dict[str, Value]  # the function's locals on one path
ValueOf = Callable[[ast.AST, State], Value]
DecideOf = Callable[[ast.AST, State], g.Decision]

_SIMPLE = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return, ast.Pass, ast.Raise, ast.Assert)


class Unfoldable(Exception):
    """The body does something `BodyRun` does not follow: the call is not folded."""


_TRANSPARENT_DECORATORS = frozenset({"lru_cache", "cache"})  # functools: the call returns what the body does


def is_body_helper(node: ast.FunctionDef | ast.AsyncFunctionDef, may_suspend: bool = True) -> bool:
    """A function whose statements are all of the kinds `BodyRun` follows, with a `return` of a value.
    `may_suspend`: False where the module's text has no `yield` or `await` (no body there is a generator)."""
    if isinstance(node, ast.AsyncFunctionDef):
        return False  # calling it gives a coroutine, not the value it returns
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else None
        if name not in _TRANSPARENT_DECORATORS:
            return False  # another decorator may return anything
    count = 0
    returns = False
    pending: list[ast.stmt] = list(node.body)
    while pending:
        stmt = pending.pop()
        count += 1
        if count > MAX_BODY_STATEMENTS:
            return False
        if isinstance(stmt, ast.If):
            pending += stmt.body + stmt.orelse
        elif isinstance(stmt, ast.Try) and not stmt.finalbody:
            pending += stmt.body + stmt.orelse + [s for h in stmt.handlers for s in h.body]
        elif isinstance(stmt, _SIMPLE):
            returns = returns or (isinstance(stmt, ast.Return) and stmt.value is not None)
        else:
            return False
    # Last, as the costliest test (every node of the body): a generator's call returns a generator object.
    return returns and not (may_suspend and any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for stmt in node.body for n in descendants(stmt)))


def raising_tests(body: list[ast.stmt]) -> list[ast.expr] | None:
    """The tests of a requirement check (`if not hasattr(prov.C, "m"): raise RuntimeError(...)`):
    its statements are locals bound by name and `if <test>:` arms, without `else`, that end in
    `raise` and never return. It returns only where no test holds, so whatever its caller does
    after the call runs only there. None: the function is not one."""
    tests: list[ast.expr] = []
    for stmt in body:
        if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
            continue
        if not (isinstance(stmt, ast.If) and not stmt.orelse and isinstance(stmt.body[-1], ast.Raise)):
            return None
        if not all(isinstance(s, (ast.Expr, ast.Assign, ast.Pass, ast.Raise)) for s in stmt.body):
            return None  # an arm that may return or branch: not every path raises
        tests.append(stmt.test)
    return tests or None


def local_names(body: list[ast.stmt]) -> set[str]:
    """Names the body binds (its locals: read before assignment they are unbound, never a global)."""
    names: set[str] = set()
    for stmt in body:
        for node in descendants(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                names.add(node.name)
    return names


def _reads_the_provider(falls: State | None, returns: list[Value]) -> bool:
    """The body's paths end holding the audited provider's version or distribution (what a
    metadata lookup of the provider gives), and nothing else it could have looked up."""
    values = list(returns) + (list(falls.values()) if falls is not None else [])
    return any(isinstance(v, (ProviderVersion, ProviderDistribution)) for v in values) and bool(returns or falls)


def _caught(handler: ast.ExceptHandler) -> frozenset[str]:
    """The exception names a handler catches (last dotted part)."""
    items = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    names = [getattr(item, "attr", None) or getattr(item, "id", None) for item in items if item is not None]
    return frozenset(n for n in names if n) if all(names) else frozenset({"<other>"})


def join_states(a: State | None, b: State | None) -> State | None:
    """Locals after two paths meet (None: a path that never gets here)."""
    if a is None:
        return b
    if b is None:
        return a
    return {name: join(a.get(name, UNBOUND), b.get(name, UNBOUND)) for name in a.keys() | b.keys()}


@dataclass
class Budget:
    """Shared by one outermost fold and every helper it calls."""

    statements: int = MAX_STATEMENTS
    depth: int = 0


@dataclass
class BodyRun:
    value_of: ValueOf
    decide_of: DecideOf
    budget: Budget
    undecided_seen: bool = False  # a test the audited release may decide but this run could not
    _traces: list[list[State]] = field(default_factory=list)

    def run(self, body: list[ast.stmt], state: State) -> Value:
        """The value the body returns (Unknown when its paths disagree)."""
        falls, returns = self._block(body, state)
        if falls is not None:
            returns.append(Const(None))  # falling off the end returns None
        if not returns:
            return UNKNOWN  # every path raises: the guard never completes, nothing to decide
        result = returns[0]
        for other in returns[1:]:
            result = join(result, other)
        return result

    def _block(self, body: list[ast.stmt], state: State | None) -> tuple[State | None, list[Value]]:
        returns: list[Value] = []
        for stmt in body:
            if state is None:
                break
            for trace in self._traces:
                trace.append(state)  # an exception raised by this statement leaves with these locals
            state, found = self._stmt(stmt, state)
            returns += found
        return state, returns

    def _stmt(self, stmt: ast.stmt, state: State) -> tuple[State | None, list[Value]]:
        self.budget.statements -= 1
        if self.budget.statements < 0:
            raise Unfoldable("too many statements")
        if isinstance(stmt, ast.Return):
            return None, [self._expr_value(stmt.value, state) if stmt.value is not None else Const(None)]
        if isinstance(stmt, ast.Raise):
            return None, []
        if isinstance(stmt, (ast.Pass, ast.Assert)):
            return state, []  # a failing assert raises: this path ends, the others are these
        if isinstance(stmt, ast.Expr):
            return self._effect(stmt.value, state), []
        if isinstance(stmt, ast.Assign):
            value = self._expr_value(stmt.value, state)
            out = dict(state)
            for target in stmt.targets:
                self._bind(target, value, out)
            return out, []
        if isinstance(stmt, ast.AnnAssign):
            out = dict(state)
            if stmt.value is not None:
                self._bind(stmt.target, self._expr_value(stmt.value, state), out)
            return out, []
        if isinstance(stmt, ast.AugAssign):
            out = dict(state)
            self._bind(stmt.target, UNKNOWN, out)
            return out, []
        if isinstance(stmt, ast.If):
            return self._if(stmt, state)
        if isinstance(stmt, ast.Try) and not stmt.finalbody:
            return self._try(stmt, state)
        raise Unfoldable(type(stmt).__name__)

    def _expr_value(self, node: ast.expr, state: State) -> Value:
        if isinstance(node, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in node.elts):
            items = tuple(self.value_of(e, state) for e in node.elts)
            if all(isinstance(i, Const) for i in items):
                return Const(tuple(i.value for i in items))  # type: ignore[union-attr]
            return TupleOf(items)
        return self.value_of(node, state)

    def _effect(self, node: ast.expr, state: State) -> State:
        """An expression statement: a docstring, or a call whose result is dropped (`warnings.warn(...)`).

        Locals hold immutable values, so a call cannot change them, except a method call on a
        local (`d.update(...)`), after which that local is not known."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and node.func.value.id in state:
            return {**state, node.func.value.id: UNKNOWN}
        if isinstance(node, (ast.Call, ast.Constant, ast.Name, ast.Attribute)):
            return state
        raise Unfoldable("expression statement")

    def _bind(self, target: ast.expr, value: Value, state: State) -> None:
        if isinstance(target, ast.Name):
            state[target.id] = value
            return
        if isinstance(target, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in target.elts):
            items: tuple[Value, ...] | None = None
            if isinstance(value, TupleOf):
                items = value.items
            elif isinstance(value, Const) and isinstance(value.value, tuple):
                items = tuple(Const(v) for v in value.value)
            if items is not None and len(items) != len(target.elts):
                items = None  # unpacking raises ValueError: no later statement on this path matters
            for i, element in enumerate(target.elts):
                self._bind(element, items[i] if items is not None else UNKNOWN, state)
            return
        raise Unfoldable("a store into an object")  # x.a = / x[i] = : state outside the locals

    def _if(self, stmt: ast.If, state: State) -> tuple[State | None, list[Value]]:
        decision = self.decide_of(stmt.test, state)
        if not decision.decided and (decision.if_true.undecided or decision.if_true.conditions or decision.if_false.conditions):
            self.undecided_seen = True
        falls: State | None = None
        returns: list[Value] = []
        for live, body in ((not decision.if_true.dead, stmt.body), (not decision.if_false.dead, stmt.orelse)):
            if live:
                side, found = self._block(body, dict(state))
                falls = join_states(falls, side)
                returns += found
        return falls, returns

    def _try(self, stmt: ast.Try, state: State) -> tuple[State | None, list[Value]]:
        trace: list[State] = []
        self._traces.append(trace)
        try:
            falls, returns = self._block(stmt.body, state)
        finally:
            self._traces.pop()
        if stmt.orelse and falls is not None:
            falls, more = self._block(stmt.orelse, falls)
            returns += more
        entry: State | None = None
        for seen in trace:
            entry = join_states(entry, seen)
        if _reads_the_provider(falls, returns) and all(h.type is not None and _caught(h) <= _NOT_INSTALLED for h in stmt.handlers):
            # `try: return version("prov") except PackageNotFoundError: return None`: the audited
            # provider is installed, so only the body's path runs.
            return falls, returns
        for handler in stmt.handlers:
            if entry is None:
                break
            start = dict(entry)
            if handler.name:
                start[handler.name] = UNKNOWN
            side, found = self._block(handler.body, start)
            falls = join_states(falls, side)
            returns += found
        return falls, returns
