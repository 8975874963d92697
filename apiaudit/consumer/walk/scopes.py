"""Scopes and their names: where a statement runs, and how branches meet again.

An `Env` holds one scope's names; a branch writes into a child overlay and `merge` joins what
the arms that fall through bound. A `Scope` adds the class and function a statement is in, its
`Liveness` (the conditions it runs under) and whether it emits. A `ClassScope` holds what each
`self.X` of a class is learned to hold (`set_self_attr`, `forget_self_attr`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from typing import Any

from apiaudit.consumer import guards as g
from apiaudit.consumer.records import ALWAYS, CaughtImport, Liveness
from apiaudit.consumer.values import UNKNOWN, Chain, Const, ConstItems, ConstMap, DictValue, ImportChoice, TupleOf, Value, join
from apiaudit.infra.astutil import descendants

_ABSENT: Any = object()  # not bound in an Env
FORGOTTEN = UNKNOWN  # a self.X bound to conflicting values


class Env:
    """Names of one scope; a branch writes into a child overlay, never copying its parent."""

    __slots__ = ("vars", "parent", "narrowed")

    def __init__(self, parent: Env | None = None):
        self.vars: dict[str, Value] = {}
        self.parent = parent
        self.narrowed: dict[str, Value] = {}

    def lookup(self, name: str) -> Value | None:
        env: Env | None = self
        while env is not None:
            found = env.vars.get(name, _ABSENT)
            if found is not _ABSENT:
                return found
            env = env.parent
        return None

    def child(self) -> Env:
        return Env(self)

    def written(self) -> dict[str, Value]:
        """What this overlay bound itself (narrowing that was never reassigned is not a binding)."""
        return {k: v for k, v in self.vars.items() if not (k in self.narrowed and self.narrowed[k] is v)}


@dataclass(slots=True)
class ClassScope:
    dotted: str
    own_members: set[str]
    attr_values: dict[str, Value] = field(default_factory=dict)  # self.X -> value (UNKNOWN: conflicting)
    # property name -> the self attribute every `return` of its body returns (`return self._table`)
    property_attrs: dict[str, str] = field(default_factory=dict)
    learning: bool = True  # pass 1 learns what self.X holds; pass 2 only reads it
    derived: bool = False  # it has a base that is not `object`: its methods may override a provider's
    # method name -> what a call of it returns (`ReturnedItems`), learned in pass 1 for a plain,
    # undecorated method whose every `return` is the same tuple display of unpacked names
    returned: dict[str, Value] = field(default_factory=dict)


@dataclass(slots=True)
class Scope:
    """Where a statement runs: its names, class, function, liveness, and whether it emits."""

    env: Env
    cls: ClassScope | None
    function: str
    live: Liveness = ALWAYS
    emit: bool = True
    type_checking: bool = False
    guard: str | None = None  # why an import failure here would not break the run
    caught: CaughtImport | None = None  # the import exception the enclosing try catches
    # Inside a guard helper folded at a call: the call (where notes go) and the caller's liveness.
    helper_call: ast.AST | None = None
    caller_live: Liveness | None = None
    caller_emits: bool = False
    # The line of an enclosing `except TypeError:` that does not re-raise (0: none): a call
    # here that cannot bind is a probe the handler answers, not a crash.
    type_error_handler: int = 0
    # Inside such a handler: its line. The handler's call is the other way of the probe, which
    # runs only where the `try:` body's call raises TypeError.
    type_error_retry: int = 0
    # What the enclosing `try`'s import handler does instead, where it drops a feature (sets a
    # flag false, defines stand-ins): "sets HAS_TIER = False, defines a stand-in SecondaryTier".
    drops: str | None = None
    # The values each `return` of the function being learned returns (None: not collected): a
    # method's body in its class's learning pass (`ClassScope.returned`); branches share the list.
    returns: list[Value] | None = None

    def child(self, live: Liveness | None = None) -> Scope:
        return Scope(
            Env(self.env), self.cls, self.function, self.live if live is None else live, self.emit,
            self.type_checking, self.guard, self.caught, self.helper_call, self.caller_live, self.caller_emits,
            self.type_error_handler, self.type_error_retry, self.drops, self.returns,
        )

    def outside_class(self) -> Scope:
        """The same scope read as if outside any class (what `dataclasses.replace(cls=None)` gives, for less)."""
        if self.cls is None:
            return self
        return Scope(
            self.env, None, self.function, self.live, self.emit,
            self.type_checking, self.guard, self.caught, self.helper_call, self.caller_live, self.caller_emits,
            self.type_error_handler, self.type_error_retry, self.drops, self.returns,
        )


# ------------------------------------------------------------- liveness
def under(live: Liveness, branch: g.Branch) -> Liveness:
    for c in branch.conditions:
        live = live.under(c)
    return live.under(undecided=branch.undecided) if branch.undecided else live


def branch_scope(scope: Scope, branch: g.Branch) -> Scope:
    """A child scope that runs under `branch` (its conditions, with its narrowed names)."""
    arm = scope.child(under(scope.live, branch))
    for name, value in branch.narrow:
        arm.env.vars[name] = value
        arm.env.narrowed[name] = value
    return arm


def continue_under(scope: Scope, branch: g.Branch) -> bool:
    """The rest of the block runs only where `branch` holds."""
    if branch.dead:
        return False
    scope.live = under(scope.live, branch)
    for name, value in branch.narrow:
        scope.env.vars[name] = value
    return True


def declared_only(env: Env) -> Env:
    """The bindings of a block that never runs (`if TYPE_CHECKING:`), as a type checker reads
    them: imports, classes and functions keep what they name, but a literal it assigns
    (`FLAG: bool = False` over a module `__getattr__` that reads the environment) is only a
    declaration: at run time the name holds something else, so nothing is decided by it."""
    for name, value in env.written().items():
        if isinstance(value, (Const, ConstMap, ConstItems, TupleOf, DictValue)):
            env.vars[name] = UNKNOWN
    return env


def merge(scope: Scope, arms: list[tuple[Env, bool]]) -> None:
    """After branches meet: each name holds the join of what the arms that fall through bound."""
    through = [env for env, ft in arms if ft]
    if not through:
        return
    written = [env.written() if env.narrowed else env.vars for env in through]  # read only: no copy where nothing was narrowed
    names: dict[str, None] = {}
    for w in written:
        names.update(dict.fromkeys(w))
    for name in names:
        values = [w.get(name, None) for w in written]
        before = scope.env.lookup(name)
        if before is None:
            # An arm that never bound the name leaves it unbound: a use there is a NameError,
            # so what the name holds wherever it is usable is what the other arms bound.
            values = [v for v in values if v is not None]
        else:
            values = [v if v is not None else before for v in values]
        merged = values[0]
        for v in values[1:]:
            merged = join(merged, v)
        scope.env.vars[name] = merged if merged is not None else UNKNOWN


# ------------------------------------------------------------- bindings
def unchecked(value: Value | None) -> Value:
    """A value stored under a name: its steps were judged where it was computed."""
    if value is None:
        return UNKNOWN
    if isinstance(value, Chain):
        return Chain(value.root, tuple(replace(s, check=False) if s.check else s for s in value.steps))
    if isinstance(value, ImportChoice):
        return ImportChoice(unchecked(value.ok), unchecked(value.fallback), value.imports, value.caught, value.origin)
    return value


def forget_targets(target, scope: Scope) -> None:
    if type(target) is ast.Name:  # the commonest target
        scope.env.vars[target.id] = UNKNOWN
        return
    for node in descendants(target):
        if isinstance(node, ast.Name):
            scope.env.vars[node.id] = UNKNOWN


def assigned_attr_key(name: str, attr: str) -> str:
    """The env key of `name.attr` assigned by the consumer (a dot: never a real variable name)."""
    return f"{name}.{attr}"


# ------------------------------------------------------- self attributes
def is_self(node, scope: Scope) -> bool:
    if not isinstance(node, ast.Name):
        return False
    value = scope.env.lookup(node.id)
    return isinstance(value, Chain) and value.root.kind == "self" and not value.steps


NONE = Const(None)


def set_self_attr(scope: Scope, name: str, value: Value, replace_ok: bool) -> None:
    cls = scope.cls
    if cls is None or not cls.learning:
        return
    value = unchecked(value)
    current = cls.attr_values.get(name)
    if current is None or (replace_ok and scope.function.endswith(".__init__")) or current == NONE:
        # `self._x = None` as a placeholder, the object assigned later: a member read on it is
        # read on that object (on None it fails as well).
        cls.attr_values[name] = value
    elif current != value and value != NONE and not _same_object(current, value):
        cls.attr_values[name] = FORGOTTEN


def _same_object(a: Value, b: Value) -> bool:
    """Two assignments of one kind of object: the same chain but for call arguments
    (`Table(name, meta)` here, `Table(name, meta, autoload=True)` there)."""
    if not isinstance(a, Chain) or not isinstance(b, Chain) or a.root != b.root or len(a.steps) != len(b.steps):
        return False
    return all(x.kind == y.kind and x.name == y.name and x.guard == y.guard for x, y in zip(a.steps, b.steps))


def forget_self_attr(target: ast.Attribute, scope: Scope) -> None:
    if scope.cls is not None and is_self(target.value, scope) and scope.cls.learning:
        scope.cls.attr_values[target.attr] = FORGOTTEN
