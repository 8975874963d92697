"""A test as Python would run it on the audited release: decided, a condition, or undecided.

`Decider.decide` reads an `if`/`assert`/`while` test, a boolean operand or a conditional
expression's test into a `guards.Decision`: folded on the audited release where literals and
the release decide it, a `Condition` the checks decide against the index for a feature test
(`hasattr`, `isinstance`, a signature parameter, a `TypeIs` function, an import that may
fail), with the names it narrows on each side. A version compared as text is noted where it is
written. A test calling a consumer guard helper asks the `Folding` (`folding`: the part above
this one, handed to it by the visitor once it exists).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Protocol

from apiaudit.consumer import guards as g
from apiaudit.consumer.records import Condition, ConditionKind, Note, Root, Step
from apiaudit.consumer.values import UNKNOWN, AttrOrNone, instance_of, Chain, Const, ConsumerRef, Helper, ImportChoice, Probe, SignatureOf, Value, VersionDerived
from apiaudit.consumer.walk.evaluate import Evaluator, HelperCalls
from apiaudit.consumer.walk.known import SIGNATURE, is_builtin_call
from apiaudit.consumer.walk.scopes import Env, Scope
from apiaudit.consumer.walk.state import WalkState, site_of, text_of
from apiaudit.infra.astutil import never_rebound

_OP_TEXT = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}


class HelperFolding(HelperCalls, Protocol):
    """What reading a test asks of the guard helpers (`Folding`)."""

    def parse_expr(self, text: str) -> ast.expr | None: ...

    def requirement_tests(self, helper: Helper, node: ast.Call, scope: Scope) -> list[g.Decision]: ...


class Decider:
    """The tests of one module's walk."""

    __slots__ = ("state", "values", "folding")

    # The part above this one, called back (set by the visitor, emptied after the walk).
    folding: HelperFolding

    def __init__(self, state: WalkState, values: Evaluator):
        self.state = state
        self.values = values

    def decide(self, test: ast.AST, scope: Scope, depth: int = 0, record: bool = True) -> g.Decision:
        """Evaluate a test as Python would on the audited release (three-valued)."""
        if depth > g.MAX_DEPTH:
            return g.RUNTIME
        if isinstance(test, ast.BoolOp):
            decision = self.decide(test.values[0], scope, depth + 1, record)
            for i, part in enumerate(test.values[1:], start=1):
                nxt = self.decide(part, scope, depth + 1, record)
                sub: Callable[[], str] = partial(_and_text, test.values[: i + 1]) if isinstance(test.op, ast.And) else (lambda: text_of(test))
                decision = g.conjoin(decision, nxt, sub) if isinstance(test.op, ast.And) else g.disjoin(decision, nxt, sub)
            return decision
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return g.negate(self.decide(test.operand, scope, depth + 1, record))
        if isinstance(test, ast.Compare):
            return self._compare(test, scope, depth, record)
        if isinstance(test, ast.Call):
            found = self._feature_test(test, scope, test, depth)
            if found is not None:
                return found
        if isinstance(test, ast.NamedExpr):
            return self.decide(test.value, scope, depth + 1, record)
        value = self.values.value(test, scope, depth=depth + 1)
        if isinstance(value, Probe):
            return g.from_probe(value)
        if isinstance(value, AttrOrNone):
            return g.symbolic(replace(value.condition, text=text_of(test)))
        if isinstance(value, ImportChoice):
            return g.choice_truth(self.state.folder, value, text_of(test), test.id if isinstance(test, ast.Name) else None)
        truth = g.truthiness(self.state.folder, value)
        if truth is not None:
            return g.constant(truth)
        given = self._argument(test, scope)
        if given is not None:
            return given
        flag = g.attribute_truth(value, partial(text_of, test))
        if flag is not None:
            return flag
        called = self.values.value(test.func, scope) if isinstance(test, ast.Call) else None
        if isinstance(called, ConsumerRef) and not called.dotted.startswith("builtins.") and "." in called.dotted:
            # a consumer function's verdict: a probe of the provider or not, the checks read
            return g.symbolic(Condition(ConditionKind.PROBE_CALL, True, text_of(test), name=called.dotted, line=getattr(test, "lineno", 0)))
        # Undecided only when the audited release is what it depends on; a test on run-time data runs both ways.
        return g.undecided(text_of(test)) if g.Folder.involves_provider(value) else g.RUNTIME

    def _compare(self, test: ast.Compare, scope: Scope, depth: int, record: bool) -> g.Decision:
        decision = g.TRUE
        left_node = test.left
        for op, right_node in zip(test.ops, test.comparators):
            part = self._compare_one(left_node, op, right_node, scope, depth, record, test)
            decision = g.conjoin(decision, part, lambda: text_of(test)) if decision is not g.TRUE else part
            left_node = right_node
        return decision

    def _compare_one(self, left_node, op, right_node, scope: Scope, depth: int, record: bool, whole: ast.Compare) -> g.Decision:
        def text() -> str:
            return f"{text_of(left_node)} {_OP_TEXT.get(type(op), '?')} {text_of(right_node)}"

        if isinstance(op, (ast.In, ast.NotIn)):
            target = self._signature_target(right_node, scope)
            name = self.values.value(left_node, scope, depth=depth + 1)
            if target is not None and isinstance(name, Const) and isinstance(name.value, str):
                cond = Condition(ConditionKind.HAS_PARAM, True, text(), target=target, name=name.value)
                decision = g.symbolic(cond)
                return decision if isinstance(op, ast.In) else g.negate(decision)
        left = self.values.value(left_node, scope, depth=depth + 1)
        right = self.values.value(right_node, scope, depth=depth + 1)
        if isinstance(op, (ast.Is, ast.IsNot)):
            for value, other, node in ((left, right, left_node), (right, left, right_node)):
                if isinstance(other, Const) and other.value is None:
                    found = g.none_test(value, isinstance(op, ast.IsNot), text, node.id if isinstance(node, ast.Name) else None, self.state.folder)
                    if found is not None:
                        return found
                    attr = self._getattr_target(node, scope)
                    if attr is not None:
                        d = g.symbolic(Condition(ConditionKind.HAS_ATTR, True, text(), target=attr[0], name=attr[1]))
                        return d if isinstance(op, ast.IsNot) else g.negate(d)
        constant = _constant_compare(left, op, right, text)
        if constant is not None:
            return constant
        if isinstance(op, (ast.Is, ast.IsNot)) and not g.Folder.involves_provider(left, right):
            for other, node in ((right, left_node), (left, right_node)):
                given = self._argument(node, scope, none_test=True) if isinstance(other, Const) and other.value is None else None
                if given is not None:
                    return given if isinstance(op, ast.IsNot) else g.negate(given)
        known, result, as_text = g.compare(self.state.folder, left, op, right)
        if as_text and record and (scope.emit or scope.caller_emits):
            site_node = scope.helper_call or whole
            site = site_of(site_node)
            live = scope.caller_live or scope.live
            key = (site.line, site.column)
            if key not in self.state.found.notes:
                shown = self.state.folder.provider_text
                self.state.found.notes[key] = Note("version-compared-as-string", site, text_of(site_node), f"compares the version as text: on {shown} this is {result}", live)
        if known:
            return g.constant(bool(result))
        return g.undecided(text()) if g.Folder.involves_provider(left, right) else g.RUNTIME

    def _argument(self, node: ast.AST, scope: Scope, none_test: bool = False) -> g.Decision | None:
        """A test on what the caller passed for a constructor parameter defaulting to None
        (`none_test`: `param is not None`, not its truth)."""
        if not isinstance(node, ast.Name):
            return None
        found = self.state.found
        if scope.function not in found.none_defaults:
            owner, init = found.init_nodes.get(scope.function, ("", None))
            found.none_defaults[scope.function] = (owner, _none_defaults(init) if init is not None else frozenset())
        owner, names = found.none_defaults[scope.function]
        if node.id not in names:
            return None
        return g.argument_given(Condition(ConditionKind.ARGUMENT, True, f"{node.id} is not None", name=node.id, owner=owner), none_test)

    def _feature_test(self, test: ast.Call, scope: Scope, node: ast.AST, depth: int) -> g.Decision | None:
        """hasattr / callable(getattr(...)) / getattr(x, "m", None) / isinstance / a TypeIs helper / a folded helper."""
        func = self.values.value(test.func, scope, depth=depth + 1)
        name = func.dotted if isinstance(func, ConsumerRef) else None
        if name in ("builtins.hasattr", "builtins.getattr") and len(test.args) >= 2:
            attr = self._getattr_target(test, scope)
            if attr is not None:
                cond = Condition(ConditionKind.HAS_ATTR, True, text_of(node), target=attr[0], name=attr[1])
                return g.symbolic(cond, *self._narrowings(test.args[0], cond, scope))
            return None
        if isinstance(func, Chain) and func.root.kind == "symbol" and test.args and not test.keywords:
            # A provider function: a TypeIs/TypeGuard one narrows its argument (the checks ask the index).
            subject_value = self.values.value(test.args[0], scope)
            target = g.chain_target(subject_value)
            if target is not None and all(s.kind == "attr" for s in func.steps):
                path = ".".join([func.root.name] + [s.name or "" for s in func.steps])
                cond = Condition(ConditionKind.NARROWS, True, text_of(node), target=target, name=path)
                return g.symbolic(cond, *self._narrowings(test.args[0], cond, scope))
            return None
        if name == "builtins.callable" and len(test.args) == 1 and isinstance(test.args[0], ast.Call):
            inner = test.args[0]
            if is_builtin_call(inner, scope, ("getattr",)):
                attr = self._getattr_target(inner, scope)
                if attr is not None:
                    return g.symbolic(Condition(ConditionKind.HAS_ATTR, True, text_of(node), target=attr[0], name=attr[1]))
            return None
        if name == "builtins.isinstance" and len(test.args) == 2:
            return self._isinstance(test.args[0], self.values.value(test.args[1], scope, depth=depth + 1), scope, node)
        if isinstance(func, Helper):
            if func.form == "release":
                return g.undecided(text_of(node))
            if func.type_guard and test.args:
                narrows = self.folding.parse_expr(str(func.narrows_to.value)) if isinstance(func.narrows_to, Const) else None
                if narrows is not None:
                    env = Env(self.state.module_env)
                    env.vars.update(dict(func.env))
                    cls_value = self.values.value(narrows, Scope(env, None, scope.function, emit=False))
                    return self._isinstance(test.args[0], cls_value, scope, node)
                return None
            value = self.folding.call_helper(func, test, scope, depth)
            if isinstance(value, Probe):
                return g.from_probe(value, text_of(node))
            truth = g.truthiness(self.state.folder, value)
            if truth is None and isinstance(value, VersionDerived):
                return g.undecided(text_of(node))  # the release may decide it, the engine could not
            if truth is None:
                # not folded (its result depends on what it looks up): the checks read whether
                # it probes the provider, as for any consumer function (`PROBE_CALL`)
                return g.symbolic(Condition(ConditionKind.PROBE_CALL, True, text_of(node), name=func.dotted, line=test.lineno))
            return g.constant(truth) if truth is not None else g.RUNTIME
        return None

    def _isinstance(self, subject: ast.expr, cls_value: Value, scope: Scope, node: ast.AST) -> g.Decision | None:
        if isinstance(cls_value, ConsumerRef) and isinstance(subject, ast.Name):
            # Narrowed to a consumer class (a mixin of the provider object): its own members
            # come first, and what else it is cannot be known here.
            return g.Decision(g.Branch(narrow=((subject.id, UNKNOWN),)), g.ALWAYS)
        if not (isinstance(cls_value, Chain) and cls_value.root.kind == "symbol" and all(s.kind == "attr" for s in cls_value.steps)):
            return None
        cls_path = ".".join([cls_value.root.name] + [s.name or "" for s in cls_value.steps])
        narrowed = instance_of(cls_value)
        subject_value = self.values.value(subject, scope)
        # Narrowing only adds what was unknown: a value already known (a subclass instance, a
        # consumer `self`) keeps its own members; the condition decides whether the branch runs.
        known = isinstance(subject_value, (Chain, ImportChoice))
        narrow = ((subject.id, narrowed),) if isinstance(subject, ast.Name) and narrowed is not None and not known else ()
        target = g.chain_target(subject_value)
        if target is None:
            return g.Decision(g.Branch(narrow=narrow), g.ALWAYS)
        cond = Condition(ConditionKind.IS_INSTANCE, True, text_of(node), target=target, name=cls_path)
        if known:
            return g.symbolic(cond, *self._narrowings(subject, cond, scope))
        return g.symbolic(cond, narrow_true=narrow)

    def _narrowings(self, subject: ast.AST, cond: Condition, scope: Scope) -> tuple[tuple, tuple]:
        """(narrow when true, narrow when false) for a name holding a provider chain: the chain
        gains a `narrow` step, so the checks keep only the candidate classes on that side."""
        if not isinstance(subject, ast.Name):
            return (), ()
        value = scope.env.lookup(subject.id)
        if not isinstance(value, Chain) or not value.steps:
            return (), ()
        plain = replace(cond, target=None)
        sides = []
        for expect in (True, False):
            step = Step("narrow", name=cond.name, check=False, guard=replace(plain, expect=expect))
            sides.append(((subject.id, Chain(value.root, value.steps + (step,))),))
        return sides[0], sides[1]

    def _getattr_target(self, node: ast.AST, scope: Scope) -> tuple[tuple[Root, tuple[Step, ...]], str] | None:
        """(chain of x, "m") for `hasattr(x, "m")` / `getattr(x, "m", ...)`."""
        if not (isinstance(node, ast.Call) and len(node.args) >= 2 and isinstance(node.func, ast.Name) and node.func.id in ("hasattr", "getattr")):
            return None
        key = self.values.value(node.args[1], scope)
        target = g.chain_target(self.values.value(node.args[0], scope))
        if target is None or not (isinstance(key, Const) and isinstance(key.value, str)):
            return None
        return target, key.value

    def _signature_target(self, node: ast.AST, scope: Scope):
        """The callable of `inspect.signature(f).parameters` (or `.parameters.keys()`)."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "keys" and not node.args:
            node = node.func.value
        held = self.values.value(node, scope)
        if isinstance(held, SignatureOf) and held.parameters:  # `sig = inspect.signature(f)`; `"x" in sig.parameters`
            return g.chain_target(held.target)
        if not (isinstance(node, ast.Attribute) and node.attr == "parameters" and isinstance(node.value, ast.Call)):
            return None
        call = node.value
        func = self.values.value(call.func, scope)
        if not (isinstance(func, ConsumerRef) and func.dotted in SIGNATURE and call.args):
            return None
        return g.chain_target(self.values.value(call.args[0], scope))


_FLIPPED = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE, ast.Eq: ast.Eq, ast.NotEq: ast.NotEq}


def _constant_compare(left: Value, op: ast.cmpop, right: Value, text: Callable[[], str]) -> g.Decision | None:
    """A provider module attribute compared with a literal (`django.VERSION >= (4, 2)`, a
    version tuple imported under another name): a `COMPARES` condition the checks decide from
    the literal the release binds it to."""
    if type(op) not in _FLIPPED:
        return None
    for attr, other, flip in ((left, right, False), (right, left, True)):
        if isinstance(attr, Chain) and attr.root.kind == "symbol" and all(s.kind == "attr" for s in attr.steps) and isinstance(other, Const):
            target = g.chain_target(attr)
            name = (_FLIPPED[type(op)] if flip else type(op)).__name__
            return g.symbolic(Condition(ConditionKind.COMPARES, True, text(), target=target, name=name, operand=repr(other.value)))
    return None


def _and_text(values: list[ast.expr]) -> str:
    return " and ".join(text_of(v) for v in values)


def may_compare_text(node: ast.Compare) -> bool:
    """An ordering comparison with a string literal on one side: a version compared as text, maybe."""
    return any(isinstance(op, g.ORDERING) for op in node.ops) and any(
        isinstance(c, ast.Constant) and isinstance(c.value, str) for c in (node.left, *node.comparators)
    )


def _none_defaults(node: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    """Parameters defaulting to `None` that nothing in the body rebinds (a store, a `del`, a
    nested scope's own binding of the name all count): a test on one is a test on what the
    caller passed."""
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    names = {a.arg for a, d in pairs if isinstance(d, ast.Constant) and d.value is None}
    return never_rebound(node.body, names)
