"""Extract provider uses from one consumer module with `ast` (never executing it).

A small abstract interpreter, one pass per function: names hold `values.Value`s, branches
get child scopes that meet again in `values.join`, and every `if`, `assert`, early
`return`/`raise` and `try/except` narrows whether the lines after it run (`guards.py`).
A branch decided dead on the audited release emits nothing; one left to the provider
index carries its `Condition`s; one nobody can decide is conditional. Nothing here looks
at the provider.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, TypeVar, cast, get_args

from apiaudit.consumer import guards as g
from apiaudit.consumer import helpers as h
from apiaudit.consumer.imports import (
    ConsumerNames,
    ImportContext,
    import_alias_value,
    module_imports,
)
from apiaudit.consumer.records import (
    ALWAYS,
    Arg,
    CallShape,
    CaughtImport,
    ClassFacts,
    Condition,
    ConditionKind,
    ConsumerFile,
    ConsumerOptions,
    GuardStop,
    ImportRef,
    ImportUse,
    Injection,
    Liveness,
    MethodBinding,
    Note,
    Root,
    RpcCall,
    Site,
    Step,
    Use,
)
from apiaudit.consumer.values import (
    UNBOUND,
    UNKNOWN,
    Chain,
    Const,
    ConsumerRef,
    DictValue,
    DistributionMap,
    Helper,
    HelperForm,
    ImportChoice,
    OneOf,
    ParsedVersion,
    ProviderDistribution,
    ProviderSpec,
    ProviderVersion,
    StrMethod,
    TupleOf,
    Unbound,
    Value,
    VersionDerived,
    VersionMethod,
    VersionPart,
    VersionPartName,
    VersionTextMethod,
    join,
)
from apiaudit.infra.astutil import descendants, dotted_text, unparse

__all__ = ["ModuleVisitor", "module_imports", "site_of"]

_IMPORT_ERRORS = {"ImportError": "ImportError", "ModuleNotFoundError": "ModuleNotFoundError"}
_BROAD = {"Exception", "BaseException"}
_FORGOTTEN = UNKNOWN  # a self.X bound to conflicting values
MAX_CHAIN = 200  # longer attribute/call chains are not followed (they degrade to Unknown)
VERSION_PARSERS = frozenset({"packaging.version.Version", "packaging.version.parse", "pkg_resources.parse_version"})
METADATA_VERSION = frozenset({"importlib.metadata.version", "importlib_metadata.version"})
METADATA_DISTRIBUTION = frozenset({"importlib.metadata.distribution", "importlib_metadata.distribution", "pkg_resources.get_distribution"})
SIGNATURE = frozenset({"inspect.signature"})
FIND_SPEC = frozenset({"importlib.util.find_spec"})
IMPORT_MODULE = frozenset({"importlib.import_module"})
PACKAGES_DISTRIBUTIONS = frozenset({"importlib.metadata.packages_distributions", "importlib_metadata.packages_distributions"})
_STR_METHODS = frozenset({"replace", "startswith", "endswith", "split", "strip", "lstrip", "rstrip", "lower", "upper"})
VERSION_PARTS: tuple[VersionPartName, ...] = get_args(VersionPartName)
_VERSION_TEXT_METHODS: tuple[VersionTextMethod, ...] = get_args(VersionTextMethod)

Name = TypeVar("Name", bound=str)


def _named(text: str, names: tuple[Name, ...]) -> Name | None:
    """`text` as one of `names` (a Literal's values), typed as that Literal; None when it is none of them."""
    return next((n for n in names if n == text), None)
_BUILTINS = frozenset(dir(builtins))


def site_of(node: ast.AST) -> Site:
    return Site(getattr(node, "lineno", 1), getattr(node, "col_offset", 0), getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None))


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


@dataclass
class ClassScope:
    dotted: str
    own_members: set[str]
    attr_values: dict[str, Value] = field(default_factory=dict)  # self.X -> value (UNKNOWN: conflicting)
    learning: bool = True  # pass 1 learns what self.X holds; pass 2 only reads it


@dataclass
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

    def child(self, live: Liveness | None = None) -> Scope:
        return Scope(
            Env(self.env), self.cls, self.function, self.live if live is None else live, self.emit,
            self.type_checking, self.guard, self.caught, self.helper_call, self.caller_live, self.caller_emits,
        )

    def outside_class(self) -> Scope:
        """The same scope read as if outside any class (what `dataclasses.replace(cls=None)` gives, for less)."""
        if self.cls is None:
            return self
        return Scope(
            self.env, None, self.function, self.live, self.emit,
            self.type_checking, self.guard, self.caught, self.helper_call, self.caller_live, self.caller_emits,
        )


class ModuleVisitor:
    def __init__(
        self, source: str, path: str, module: str, is_package: bool, options: ConsumerOptions, names: ConsumerNames | None = None
    ):
        """`names`: what other consumer modules export (default: the tables `options` carry)."""
        self.source = source
        self.path = path
        self.module = module
        self.options = options
        self.imports_ctx = ImportContext(module, is_package, options, names)
        self.rpc = {m: (i, k) for m, i, k in options.rpc_methods}
        self.injection_keywords = frozenset(options.injection_keywords)
        self.folder = g.Folder(options.provider_version, options.python_version)
        self.provider_dist = _normal(options.provider_distribution) if options.provider_distribution else None
        self.uses: list[Use] = []
        self.imports: list[ImportUse] = []
        self.classes: list[ClassFacts] = []
        self.injections: list[Injection] = []
        self.rpc_calls: list[RpcCall] = []
        self.method_bindings: list[MethodBinding] = []
        self.guard_stops: list[GuardStop] = []
        self.reaches: dict[str, None] = {}  # modules live import statements name, in order
        self._self_functions: set[str] = set()  # module functions whose first parameter is `self`
        self.notes: dict[tuple[int, int], Note] = {}
        self.module_env = Env()
        self.top_only = False  # exports(): module level only, no function or class bodies
        self._helper_trees: dict[str, ast.expr | None] = {}  # None: the text does not parse
        self._local_helpers: dict[str, ast.expr] = {}  # this module's helpers: marker -> returned expression
        self._local_bodies: dict[str, list[ast.stmt]] = {}  # this module's body helpers: marker -> statements
        self._body_trees: dict[str, list[ast.stmt] | None] = {}
        self._fold: h.Budget | None = None  # the outermost helper fold under way, if any
        self._default_nodes: dict[str, dict[str, ast.expr]] = {}  # this module's helpers: non-literal defaults
        # No dict value yet (here or imported): calls cannot touch one.
        self.dicts_seen = self.imports_ctx.names.has_dicts

    # ---------------------------------------------------------------- entry
    def run(self, tree: ast.Module) -> ConsumerFile:
        self._walk_module(tree)
        return ConsumerFile(
            path=self.path,
            module=self.module,
            uses=tuple(self.uses),
            imports=tuple(self.imports),
            classes=tuple(self.classes),
            injections=tuple(self.injections),
            rpc_calls=tuple(self.rpc_calls),
            method_bindings=tuple(self.method_bindings),
            guard_stops=tuple(self.guard_stops),
            notes=tuple(self.notes.values()),
            lines=tuple(self.source.splitlines()),
            reaches=tuple(self.reaches),
        )

    def exports(self, tree: ast.Module) -> dict[str, Value]:
        """Module constants and guard helpers other modules may import (folded at module level)."""
        self.top_only = True
        self._walk_module(tree, emit=False)
        out: dict[str, Value] = {}
        for name, value in self.module_env.vars.items():
            if isinstance(value, Helper):
                out[f"{self.module}.{name}"] = self._capture(value)
            elif isinstance(value, (Const, ProviderVersion, ParsedVersion, VersionPart, DictValue, ImportChoice)):
                out[f"{self.module}.{name}"] = value
        return out

    def _walk_module(self, tree: ast.Module, emit: bool = True) -> None:
        scope = Scope(self.module_env, None, "<module>", emit=emit)
        # Module-level definitions are visible to every function, whatever their order.
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.module_env.vars[node.name] = self._helper(node, scope) or ConsumerRef(f"{self.module}.{node.name}")
            elif isinstance(node, ast.ClassDef):
                self.module_env.vars[node.name] = ConsumerRef(f"{self.module}.{node.name}")
        self._block(tree.body, scope)

    # ------------------------------------------------------------ statements
    def _block(self, body: list[ast.stmt], scope: Scope) -> bool:
        """Walk statements in order; False when the block cannot complete (return, raise, dead rest)."""
        for stmt in body:
            try:
                if not self._stmt(stmt, scope):
                    return False
            except RecursionError:
                continue  # valid but pathologically deep code: that statement degrades to unknown
        return True

    def _stmt(self, stmt: ast.stmt, scope: Scope) -> bool:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) and scope.emit:
            self._reach(stmt)
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                self._import(alias.name, None, alias, scope)
                name, value = import_alias_value(self.imports_ctx, alias, self.options)
                scope.env.vars[name] = value
        elif isinstance(stmt, ast.ImportFrom):
            base = self.imports_ctx.absolute(stmt.module, stmt.level)
            for alias in stmt.names:
                if alias.name == "*":
                    continue
                self._import(base, alias.name, alias, scope)
                scope.env.vars[alias.asname or alias.name] = self.imports_ctx.value_for(f"{base}.{alias.name}")
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in stmt.decorator_list:
                self._expr(d, scope)
            qual = f"{scope.function}.{stmt.name}" if scope.function != "<module>" else stmt.name
            if scope.cls is not None:
                qual = f"{scope.cls.dotted.rsplit('.', 1)[-1]}.{stmt.name}"
            if scope.function != "<module>" or scope.cls is not None:
                scope.env.vars[stmt.name] = UNKNOWN if scope.cls is None else scope.env.lookup(stmt.name) or UNKNOWN
            self._function(stmt, scope, qual)
        elif isinstance(stmt, ast.ClassDef):
            self._class(stmt, scope)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            return self._try(stmt, scope)
        elif isinstance(stmt, ast.If):
            return self._if(stmt, scope)
        elif isinstance(stmt, ast.Assign):
            self._expr(stmt.value, scope)
            value = self._value(stmt.value, scope)
            if isinstance(value, DictValue) and isinstance(stmt.value, (ast.Name, ast.Attribute)):
                # `other = kw`: two names for one dict; a change through either is not followed.
                holder = self._dict_holder(stmt.value, scope)
                if holder is not None:
                    holder[1](DictValue(frozenset(), True))
                value = DictValue(frozenset(), True)
            for target in stmt.targets:
                self._assign(target, value, scope)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self._expr(stmt.value, scope)
            declared = self._annotation_value(stmt.annotation, scope)
            held = declared or (self._value(stmt.value, scope) if stmt.value is not None else None)
            if stmt.value is None and declared is None and isinstance(stmt.target, ast.Name):
                return True  # `x: int` binds nothing
            self._assign(stmt.target, held, scope)
        elif isinstance(stmt, ast.AugAssign):
            self._expr(stmt.value, scope)
            self._target_loads(stmt.target, scope)
            if isinstance(stmt.target, ast.Name):
                scope.env.vars[stmt.target.id] = UNKNOWN
            elif isinstance(stmt.target, ast.Attribute):
                self._forget_self_attr(stmt.target, scope)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self._expr(stmt.iter, scope)
            self._loop(stmt, scope, targets=stmt.target)
        elif isinstance(stmt, ast.While):
            self._expr(stmt.test, scope)
            self._loop(stmt, scope)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self._expr(item.context_expr, scope)
                if item.optional_vars is not None:
                    self._forget_targets(item.optional_vars, scope)
            return self._block(stmt.body, scope)
        elif isinstance(stmt, ast.Match):
            self._expr(stmt.subject, scope)
            arms = []
            for case in stmt.cases:
                arm = scope.child()
                arms.append((arm, self._block(case.body, arm)))
            self._merge(scope, [(a.env, ft) for a, ft in arms] + [(scope.env.child(), True)])
        elif isinstance(stmt, ast.Delete):
            for t in stmt.targets:
                self._target_loads(t, scope)
                self._delete(t, scope)
        elif isinstance(stmt, ast.Expr):
            self._expr(stmt.value, scope)
        elif isinstance(stmt, ast.Assert):
            self._expr(stmt.test, scope)
            decision = self._decide(stmt.test, scope)
            return self._continue_under(scope, decision.if_true)
        elif isinstance(stmt, (ast.Return, ast.Raise)):
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self._expr(child, scope)
            return False
        elif isinstance(stmt, (ast.Break, ast.Continue)):
            return False
        else:
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self._expr(child, scope)
        return True

    def _stopping(self, branch: g.Branch, stmt: ast.If, scope: Scope) -> g.Branch:
        """Mark the narrowing conditions of `branch` as job-stopping, and record each at the guard."""
        marked = []
        for c in branch.conditions:
            if c.kind in (ConditionKind.NARROWS, ConditionKind.IS_INSTANCE) and c.target is not None:
                c = replace(c, stops=True, line=stmt.test.lineno)
                if scope.emit:
                    self.guard_stops.append(GuardStop(c, site_of(stmt.test), scope.function, scope.live))
            marked.append(c)
        narrow = []
        for name, value in branch.narrow:
            last_step = value.steps[-1] if isinstance(value, Chain) and value.steps else None
            if isinstance(value, Chain) and last_step is not None and last_step.kind == "narrow" and last_step.guard is not None:
                stopping = replace(last_step.guard, stops=True, line=stmt.test.lineno)
                value = Chain(value.root, value.steps[:-1] + (replace(last_step, guard=stopping),))
            narrow.append((name, value))
        return replace(branch, conditions=tuple(marked), narrow=tuple(narrow))

    def _continue_under(self, scope: Scope, branch: g.Branch) -> bool:
        """The rest of the block runs only where `branch` holds."""
        if branch.dead:
            return False
        scope.live = _under(scope.live, branch)
        for name, value in branch.narrow:
            scope.env.vars[name] = value
        return True

    def _if(self, stmt: ast.If, scope: Scope) -> bool:
        self._expr(stmt.test, scope)
        if _is_type_checking(stmt.test):
            # Never runs; its imports are for type checkers (reported as such), its body read as today.
            typing_arm = replace(scope.child(), type_checking=True, guard="TYPE_CHECKING")
            self._block(stmt.body, typing_arm)
            runtime_arm = scope.child()
            self._block(stmt.orelse, runtime_arm)
            self._merge(scope, [(typing_arm.env, True), (runtime_arm.env, True)])
            return True
        decision = self._decide(stmt.test, scope)
        arms: list[tuple[Env, bool]] = []
        falls: list[g.Branch] = []
        for branch, body in ((decision.if_true, stmt.body), (decision.if_false, stmt.orelse)):
            if branch.dead:
                continue
            arm = self._arm(scope, branch)
            through = self._block(body, arm)
            arms.append((arm.env, through))
            if through:
                falls.append(branch)
        if not falls:
            return False
        self._merge(scope, arms)
        if len(falls) == 1 and len(arms) == 2:
            # The other arm returned or raised: a narrowing guard there stops the job for the
            # classes that fail it.
            return self._continue_under(scope, self._stopping(falls[0], stmt, scope))
        if len(falls) == 1 and len(arms) == 1:
            only = falls[0]
            scope.live = _under(scope.live, only)
        return True

    def _dict_of_arguments(self, call: ast.Call, scope: Scope, start: DictValue) -> DictValue:
        """`start` plus the keys `dict(...)` / `.update(...)` arguments add: a mapping or `**splat`
        whose keys are known adds them; anything else makes the set open."""
        keys, is_open = set(start.keys), start.open
        parts = [*call.args, *(kw.value for kw in call.keywords if kw.arg is None)]
        for part in parts:
            other = self._value(part, scope)
            keys |= other.keys if isinstance(other, DictValue) else set()
            is_open = is_open or not isinstance(other, DictValue) or other.open
        keys |= {kw.arg for kw in call.keywords if kw.arg is not None}
        return DictValue(frozenset(keys), is_open)

    def _arm(self, scope: Scope, branch: g.Branch) -> Scope:
        """A child scope that runs under `branch` (its conditions, with its narrowed names)."""
        arm = scope.child(_under(scope.live, branch))
        for name, value in branch.narrow:
            arm.env.vars[name] = value
            arm.env.narrowed[name] = value
        return arm

    def _merge(self, scope: Scope, arms: list[tuple[Env, bool]]) -> None:
        """After branches meet: each name holds the join of what the arms that fall through bound."""
        through = [env for env, ft in arms if ft]
        if not through:
            return
        written = [env.written() for env in through]
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

    def _loop(self, stmt, scope: Scope, targets=None) -> None:
        body = scope.child()
        if targets is not None:
            self._forget_targets(targets, body)
        self._block(stmt.body, body)
        # The body may run zero times: what it binds meets what was there before.
        self._merge(scope, [(body.env, True), (scope.env.child(), True)])
        if targets is not None:
            self._forget_targets(targets, scope)
        if stmt.orelse:
            orelse = scope.child()
            self._block(stmt.orelse, orelse)
            self._merge(scope, [(orelse.env, True), (scope.env.child(), True)])

    def _try(self, stmt, scope: Scope) -> bool:
        kinds = [_handler_kind(h.type) for h in stmt.handlers]
        catches_import = any(k in ("ImportError", "ModuleNotFoundError", "broad") for k in kinds)
        caught: CaughtImport | None = "ImportError" if any(k in ("ImportError", "broad") for k in kinds) else ("ModuleNotFoundError" if catches_import else None)
        body = scope.child()
        if catches_import:
            body.guard = scope.guard or "try/except ImportError"
            body.caught = caught
        body_through = self._block(stmt.body, body)
        refs = _body_imports(stmt.body, self.imports_ctx)
        provider_refs = tuple(r for r in refs if self.imports_ctx.is_provider(r.module))
        only_imports = _only_imports(stmt.body)
        arms: list[tuple[Env, bool]] = [(body.env, body_through)]
        import_handler = False
        for handler, kind in zip(stmt.handlers, kinds):
            live = scope.live
            fallback_condition = None
            if kind in ("ImportError", "ModuleNotFoundError") or (kind == "broad" and only_imports):
                if provider_refs and len(provider_refs) == len(refs) and (only_imports or kind != "broad"):
                    fallback_condition = Condition(
                        ConditionKind.IMPORT_FAILS, True, f"{_text(stmt.body[0])} fails", imports=provider_refs,
                        caught="ModuleNotFoundError" if kind == "ModuleNotFoundError" else "ImportError",
                    )
                    live = live.under(fallback_condition)
                    import_handler = True
                # otherwise: imports from outside the provider, or other code: the handler may run on any release
            arm = scope.child(live)
            if handler.name:
                arm.env.vars[handler.name] = UNKNOWN
            through = self._block(handler.body, arm)
            if fallback_condition is not None and through:
                self._import_choices(scope, body.env, arm.env, fallback_condition, refs)
                arms.append((arm.env, False))  # merged as choices
            else:
                arms.append((arm.env, through))
        if import_handler:
            # The body's own bindings, where no choice was made, are kept as the body left them.
            for name, value in body.env.written().items():
                if name not in scope.env.vars or not isinstance(scope.env.vars[name], ImportChoice):
                    scope.env.vars[name] = value
            for env, through in arms[1:]:
                if through:
                    self._merge(scope, [(env, True), (scope.env.child(), True)])
        else:
            self._merge(scope, arms)
        if stmt.orelse:
            orelse = scope.child()
            self._block(stmt.orelse, orelse)
            self._merge(scope, [(orelse.env, True)])
        if stmt.finalbody:
            self._block(stmt.finalbody, scope)
        return body_through or any(ft for _, ft in arms[1:]) or import_handler

    def _import_choices(self, scope: Scope, body: Env, handler: Env, condition: Condition, refs: tuple[ImportRef, ...]) -> None:
        """Names the try body bound: the body's value when its imports work, the handler's when one fails."""
        bound = body.written()
        fallback = handler.written()
        for name in dict.fromkeys(list(bound) + list(fallback)):
            ok = bound.get(name, scope.env.lookup(name))
            alt = fallback.get(name, scope.env.lookup(name))
            if ok is None and alt is None:
                continue
            origin = next((r for r in refs if (r.name or r.module.split(".")[0]) == name or (r.name and r.name == name)), refs[0])
            scope.env.vars[name] = ImportChoice(
                ok if ok is not None else UNBOUND, alt if alt is not None else UNBOUND, condition.imports, condition.caught, origin
            )

    # ------------------------------------------------------------- bindings
    def _assign(self, target, value: Value | None, scope: Scope) -> None:
        if isinstance(target, ast.Name):
            scope.env.vars[target.id] = _unchecked(value) if value is not None else UNKNOWN
        elif isinstance(target, ast.Attribute):
            self._target_loads(target, scope)
            if scope.cls is not None and self._is_self(target.value, scope):
                self._set_self_attr(scope, target.attr, value if value is not None else UNKNOWN, replace_ok=False)
            elif isinstance(target.value, ast.Name):
                self._bind_function(target.value, value, scope, target)
                # `obj.attr = v` creates the attribute (objects without __slots__): later reads of
                # it here are the consumer's own value, not a provider member to look up.
                scope.env.vars[_assigned_attr_key(target.value.id, target.attr)] = UNKNOWN
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._assign(elt.value if isinstance(elt, ast.Starred) else elt, None, scope)
        elif isinstance(target, ast.Subscript):
            self._target_loads(target, scope)
            key = target.slice
            holder = self._dict_holder(target.value, scope)
            if holder is not None:
                current, write = holder
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    write(DictValue(current.keys | {key.value}, current.open))
                else:
                    write(DictValue(current.keys, True))
        else:
            self._target_loads(target, scope)

    def _set_self_attr(self, scope: Scope, name: str, value: Value, replace_ok: bool) -> None:
        cls = scope.cls
        if cls is None or not cls.learning:
            return
        value = _unchecked(value)
        current = cls.attr_values.get(name)
        if current is None or (replace_ok and scope.function.endswith(".__init__")):
            cls.attr_values[name] = value
        elif current != value:
            cls.attr_values[name] = _FORGOTTEN

    def _forget_self_attr(self, target: ast.Attribute, scope: Scope) -> None:
        if scope.cls is not None and self._is_self(target.value, scope) and scope.cls.learning:
            scope.cls.attr_values[target.attr] = _FORGOTTEN

    def _dict_holder(self, node, scope: Scope):
        """(current dict value, writer) for a name or `self.X` holding a DictValue."""
        if isinstance(node, ast.Name):
            current = scope.env.lookup(node.id)
            if isinstance(current, DictValue):
                return current, lambda v: scope.env.vars.__setitem__(node.id, v)
            return None
        if isinstance(node, ast.Attribute) and scope.cls is not None and self._is_self(node.value, scope):
            current = scope.cls.attr_values.get(node.attr)
            if isinstance(current, DictValue):
                if not scope.function.endswith(".__init__"):
                    return current, lambda v: self._forget_self_attr(node, scope)
                return current, lambda v: self._set_self_attr(scope, node.attr, v, replace_ok=True)
        return None

    def _dict_effects(self, call: ast.Call, scope: Scope) -> None:
        """What a call does to the dicts it touches: a known mutation, or an escape (passed to a
        function, or an unknown method) after which its keys are no longer known."""
        if not self.dicts_seen:
            return
        for arg in [a.value if isinstance(a, ast.Starred) else a for a in call.args] + [k.value for k in call.keywords if k.arg is not None]:
            holder = self._dict_holder(arg, scope)
            if holder is not None:
                holder[1](DictValue(frozenset(), True))
        if isinstance(call.func, ast.Attribute) and self._dict_holder(call.func.value, scope) is not None:
            if call.func.attr in _DICT_MUTATIONS:
                self._mutation(call, scope)
            elif call.func.attr not in _DICT_READS:
                self._dict_holder(call.func.value, scope)[1](DictValue(frozenset(), True))

    def _mutation(self, call: ast.Call, scope: Scope) -> None:
        """`d.update(...)`, `d.pop("k")`, `d.setdefault("k", v)`, `d.clear()` on a known dict."""
        if not isinstance(call.func, ast.Attribute):
            return
        holder = self._dict_holder(call.func.value, scope)
        if holder is None:
            return
        current, write = holder
        method = call.func.attr
        if method == "update":
            write(self._dict_of_arguments(call, scope, current))
        elif method in ("pop", "setdefault") and call.args:
            key = call.args[0]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                keys = current.keys - {key.value} if method == "pop" else current.keys | {key.value}
                write(DictValue(keys, current.open))
            elif method == "setdefault":
                write(DictValue(current.keys, True))
            else:
                write(DictValue(frozenset(), True))
        elif method == "clear":
            write(DictValue(frozenset(), False))
        elif method in ("popitem",):
            write(DictValue(frozenset(), True))

    def _delete(self, target, scope: Scope) -> None:
        if isinstance(target, ast.Subscript):
            holder = self._dict_holder(target.value, scope)
            if holder is not None:
                current, write = holder
                key = target.slice
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    write(DictValue(current.keys - {key.value}, current.open))
                else:
                    write(DictValue(frozenset(), True))
        elif isinstance(target, ast.Name):
            scope.env.vars[target.id] = UNBOUND

    def _target_loads(self, target, scope: Scope) -> None:
        """`a.b.c = v` loads `a.b`; `a[i] = v` loads `a` and `i`."""
        if isinstance(target, ast.Attribute):
            self._expr(target.value, scope)
        elif isinstance(target, ast.Subscript):
            self._expr(target.value, scope)
            self._expr(target.slice, scope)

    def _forget_targets(self, target, scope: Scope) -> None:
        for node in descendants(target):
            if isinstance(node, ast.Name):
                scope.env.vars[node.id] = UNKNOWN

    # --------------------------------------------------------- definitions
    def _function(self, node, outer: Scope, qual: str) -> None:
        if self.top_only:
            return
        cls = outer.cls
        # Methods see module names, not the class body's; nested functions see their enclosing scope.
        env = Env(self.module_env if cls is not None else outer.env)
        scope = Scope(env, cls, qual, live=outer.live, emit=outer.emit)
        args = node.args
        all_args = list(args.posonlyargs) + list(args.args)
        first = all_args[0].arg if all_args else None
        is_method = cls is not None and not any(_decorator_name(d) == "staticmethod" for d in node.decorator_list)
        for a in all_args + list(args.kwonlyargs) + [x for x in (args.vararg, args.kwarg) if x]:
            env.vars[a.arg] = (self._annotation_value(a.annotation, outer) if a.annotation is not None else None) or UNKNOWN
        for default in list(args.defaults) + [d for d in args.kw_defaults if d is not None]:
            self._expr(default, outer)
        if is_method and first and cls is not None:
            env.vars[first] = Chain(Root("self", cls.dotted))
            if any(_decorator_name(d) == "classmethod" for d in node.decorator_list):
                env.vars[first] = UNKNOWN
        elif cls is None and first == "self":
            # A module-level function written to be bound onto an object (types.MethodType).
            env.vars[first] = Chain(Root("fself", f"{self.module}.{node.name}"))
            self._self_functions.add(f"{self.module}.{node.name}")
        if cls is not None and cls.learning and not outer.emit and not _may_teach(node, cls):
            return  # the learning pass learns only what self.X holds: this body cannot change it
        self._block(node.body, scope)

    def _class(self, node: ast.ClassDef, scope: Scope) -> None:
        function = scope.function
        dotted = f"{self.module}.{node.name}" if function == "<module>" else f"{self.module}.{function}.{node.name}"
        scope.env.vars[node.name] = ConsumerRef(dotted)
        if self.top_only:
            return
        provider_bases, consumer_bases = [], []
        for base in node.bases:
            self._expr(base, scope)
            value = self._value(base, scope)
            if isinstance(value, Chain) and value.root.kind == "symbol" and all(s.kind == "attr" for s in value.steps):
                provider_bases.append(".".join([value.root.name] + [s.name for s in value.steps if s.name is not None]))
            elif isinstance(value, ConsumerRef):
                consumer_bases.append(value.dotted)
        for kw in node.keywords:
            self._expr(kw.value, scope)
        for d in node.decorator_list:
            self._expr(d, scope)
        own = _own_members(node)
        cls = ClassScope(dotted=dotted, own_members=own)
        # Pass 1 learns what each self.X holds; pass 2 emits uses with that knowledge.
        first = Scope(scope.env.child(), cls, function, live=scope.live, emit=False)
        self._block(node.body, first)
        cls.learning = False
        second = Scope(scope.env.child(), cls, function, live=scope.live, emit=scope.emit)
        self._block(node.body, second)
        if scope.emit:
            self.classes.append(ClassFacts(dotted, tuple(provider_bases), tuple(consumer_bases), frozenset(own), site_of(node)))

    def _helper(self, node, scope: Scope) -> Helper | None:
        """A module-level function that is one `return <expr>`, or annotated `-> TypeIs[X]`."""
        args = node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            return None
        params = tuple(a.arg for a in args.args)
        narrows = None
        ret = node.returns
        if isinstance(ret, ast.Subscript) and (_dotted(ret.value) or "").rsplit(".", 1)[-1] in ("TypeIs", "TypeGuard"):
            narrows = ret.slice
        body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        expr = ""
        form: HelperForm = "expr"
        if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
            # The text is written only when another module imports the helper (`_capture`).
            expr = f"{_LOCAL}{self.module}.{node.name}"
            self._local_helpers[expr] = body[0].value
        elif narrows is None and h.is_body_helper(node):
            expr, form = f"{_LOCAL}{self.module}.{node.name}", "body"
            self._local_bodies[expr] = body
        elif narrows is None and self._mentions_release(body):
            form = "release"  # not followed, but it reads the release: a guard on it is undecided
        if not expr and narrows is None and form != "release":
            return None
        with_defaults = list(zip(args.args[len(args.args) - len(args.defaults):], args.defaults))
        defaults = tuple((a.arg, _const_of(d)) for a, d in with_defaults)
        # A default naming a module constant is read when the helper is called or exported.
        self._default_nodes[f"{self.module}.{node.name}"] = {a.arg: d for a, d in with_defaults if not isinstance(d, ast.Constant)}
        return Helper(
            f"{self.module}.{node.name}", params, defaults, expr, (), type_guard=narrows is not None,
            narrows_to=Const(_text(narrows, 10_000)) if narrows is not None else None, form=form,
        )

    def _capture(self, helper: Helper) -> Helper:
        """A helper other modules call: the values of the names it reads, from here.

        A helper it calls is written as a `ConsumerRef`: the call finds it again among the
        exports every module shares (`_call_helper`), so the cache stays flat data."""
        names: set[str] = set()
        local: set[str] = set()
        if helper.form == "release":
            return helper
        helper = replace(helper, defaults=self._defaults(helper))
        if helper.form == "body":
            body = self._local_bodies.get(helper.expr)
            if body is not None:
                helper = replace(helper, expr=ast.unparse(ast.Module(body=body, type_ignores=[])))
            else:
                body = self._parse_body(helper.expr) or []
            local = h.local_names(body)
            names |= {n.id for stmt in body for n in descendants(stmt) if isinstance(n, ast.Name)}
        elif helper.expr.startswith(_LOCAL):
            helper = replace(helper, expr=_text(self._local_helpers[helper.expr], limit=100_000))
        for text in (helper.expr if helper.form == "expr" else "", helper.narrows_to.value if isinstance(helper.narrows_to, Const) else ""):
            tree = self._parse_expr(str(text)) if text else None
            if tree is not None:
                names |= {n.id for n in descendants(tree) if isinstance(n, ast.Name)}
        env = tuple(
            sorted(
                (n, ConsumerRef(v.dotted) if isinstance(v, Helper) else v)
                for n in names - set(helper.params) - local
                if (v := self.module_env.lookup(n)) is not None
            )
        )
        return replace(helper, env=env)

    # ----------------------------------------------------------- imports
    def _reach(self, stmt: ast.Import | ast.ImportFrom) -> None:
        """The modules an import statement on a live line may run (consumer/reach.py's edges)."""
        if isinstance(stmt, ast.Import):
            self.reaches.update(dict.fromkeys(alias.name for alias in stmt.names))
            return
        base = self.imports_ctx.absolute(stmt.module, stmt.level)
        if base:
            self.reaches[base] = None
            self.reaches.update(dict.fromkeys(f"{base}.{alias.name}" for alias in stmt.names if alias.name != "*"))

    def _import(self, module: str, name: str | None, alias: ast.alias, scope: Scope) -> None:
        if not scope.emit or not self.imports_ctx.is_provider(module):
            return
        guard = "TYPE_CHECKING" if scope.type_checking else scope.guard
        self.imports.append(
            ImportUse(module=module, name=name, site=site_of(alias), guarded=guard, live=scope.live, caught=scope.caught if guard and not scope.type_checking else None)
        )

    # -------------------------------------------------------- expressions
    def _expr(self, root: ast.AST | None, scope: Scope) -> None:
        """Emit every provider use inside an expression (iteratively: deep expressions are valid code)."""
        if root is None:
            return
        stack: list[tuple[ast.AST, bool]] = [(root, False)]
        while stack:
            node, in_chain = stack.pop()
            kind = type(node)  # parsed nodes are of ast's own classes: one set lookup for the commonest
            if kind in _LEAF_TYPES:
                continue
            if kind in _CHAIN_TYPES:
                if not in_chain and scope.emit:
                    self._emit_use(cast(ast.expr, node), scope)
                if isinstance(node, ast.Call):
                    if scope.emit:
                        self._call_facts(node, scope)
                    self._dict_effects(node, scope)
                    # Pushed in reverse, so that they are taken in source order: func, args, keywords.
                    stack.extend([(k.value, False) for k in reversed(node.keywords)])
                    stack.extend([(a.value if isinstance(a, ast.Starred) else a, False) for a in reversed(node.args)])
                    stack.append((node.func, True))
                elif isinstance(node, ast.Attribute):
                    stack.append((node.value, True))
                elif isinstance(node, ast.Subscript):
                    stack.append((node.slice, False))
                    stack.append((node.value, True))
            elif isinstance(node, ast.Await):
                stack.append((node.value, in_chain))
            elif isinstance(node, ast.Lambda):
                inner = scope.child()
                for a in node.args.args:
                    inner.env.vars[a.arg] = UNKNOWN
                self._expr(node.body, inner)
            elif isinstance(node, ast.NamedExpr):
                self._expr(node.value, scope)
                scope.env.vars[node.target.id] = _unchecked(self._value(node.value, scope))
            elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                inner = scope.child()
                for gen in node.generators:
                    self._expr(gen.iter, inner)
                    self._forget_targets(gen.target, inner)
                    for cond in gen.ifs:
                        self._expr(cond, inner)
                for part in ("elt", "key", "value"):
                    if hasattr(node, part):
                        self._expr(getattr(node, part), inner)
            elif isinstance(node, ast.IfExp):
                # `a if test else b`: each side runs under the test, as an `if` statement's arms do.
                self._expr(node.test, scope)
                decision = self._decide(node.test, scope)
                for branch, side in ((decision.if_true, node.body), (decision.if_false, node.orelse)):
                    if not branch.dead:
                        self._expr(side, self._arm(scope, branch))
            elif isinstance(node, ast.BoolOp):
                # `a and b` runs b only when a holds (`or`: when it does not).
                self._expr(node.values[0], scope)
                guarded = scope
                for previous, value in zip(node.values, node.values[1:]):
                    decision = self._decide(previous, guarded)
                    branch = decision.if_true if isinstance(node.op, ast.And) else decision.if_false
                    if branch.dead:
                        break
                    guarded = self._arm(guarded, branch)
                    self._expr(value, guarded)
            elif isinstance(node, ast.Dict):
                if scope.emit:
                    self._dict_injections(node, scope)
                stack.extend(reversed([(c, False) for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]))
            elif isinstance(node, ast.Compare) and scope.emit and _may_compare_text(node):
                self._decide(node, scope)  # notes string-compared versions where they are written
                stack.extend(reversed([(c, False) for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]))
            else:
                for child in reversed(list(ast.iter_child_nodes(node))):
                    if isinstance(child, ast.expr):
                        stack.append((child, False))
                    elif isinstance(child, ast.keyword):
                        stack.append((child.value, False))

    def _emit_use(self, node: ast.expr, scope: Scope) -> None:
        value = self._value(node, scope, fresh=True)
        for chain, conditions, failed in _sides(value):
            if any(s.check for s in chain.steps) or failed is not None:
                live = scope.live
                for c in conditions:
                    live = live.under(c)
                self.uses.append(Use(chain.root, chain.steps, site_of(node), scope.function, _text(node), live, failed))
        self._emit_version_reads(node, scope)

    def _emit_version_reads(self, node: ast.expr, scope: Scope) -> None:
        """`NAME.__version__` folds to the audited release's version, but the read is a use too:
        on a release whose module defines no `__version__` it raises (issue 27, cause 11)."""
        cur: ast.expr = node
        while isinstance(cur, (ast.Call, ast.Attribute, ast.Subscript)):
            if isinstance(cur, ast.Attribute) and cur.attr == "__version__":
                base = self._value(cur.value, scope)
                if isinstance(base, Chain) and base.root.kind == "symbol" and all(s.kind == "attr" for s in base.steps):
                    read = base.steps + (Step("attr", name="__version__"),)
                    self.uses.append(Use(base.root, read, site_of(cur), scope.function, _text(cur), scope.live))
            cur = cur.func if isinstance(cur, ast.Call) else cur.value

    def _dict_injections(self, node: ast.Dict, scope: Scope) -> None:
        for key, val in zip(node.keys, node.values):
            if isinstance(key, ast.Constant) and key.value in self.injection_keywords:
                self.injections.append(Injection(key.value, self._class_named(val, scope), site_of(val), scope.live))

    def _class_named(self, node: ast.expr, scope: Scope) -> str | None:
        """The consumer class a value names: a string constant (dotted), or a class reference."""
        value = self._value(node, scope)
        if isinstance(value, Const) and isinstance(value.value, str):
            return value.value
        if isinstance(value, ConsumerRef):
            return value.dotted
        return None

    def _call_facts(self, node: ast.Call, scope: Scope) -> None:
        for kw in node.keywords:
            if kw.arg in self.injection_keywords:
                self.injections.append(Injection(kw.arg, self._class_named(kw.value, scope), site_of(kw.value), scope.live))
        if isinstance(node.func, ast.Attribute) and node.func.attr in self.rpc:
            index, keyword = self.rpc[node.func.attr]
            name_node = None
            if index is not None and len(node.args) > index and not any(isinstance(a, ast.Starred) for a in node.args[: index + 1]):
                name_node = node.args[index]
            for kw in node.keywords:
                if keyword and kw.arg == keyword:
                    name_node = kw.value
            if name_node is not None:
                value = self._value(name_node, scope)
                name = value.value if isinstance(value, Const) and isinstance(value.value, str) else None
                self.rpc_calls.append(RpcCall(node.func.attr, name, site_of(node), scope.function, scope.live))
        if isinstance(node.func, ast.Name) and node.func.id == "setattr" and len(node.args) == 3 and isinstance(node.args[1], ast.Constant):
            self._bind_function(node.args[0], self._value(node.args[2], scope), scope, node)
        if _dotted(node.func) in ("types.MethodType", "MethodType") and len(node.args) == 2:
            func_value = self._value(node.args[0], scope)
            if isinstance(func_value, (ConsumerRef, Helper)):
                dotted = func_value.dotted
                if dotted:
                    target = self._value(node.args[1], scope)
                    own = self._assigned_attrs(node.args[1], scope)
                    for option in (target.options if isinstance(target, OneOf) else (target,)):
                        chain = (option.root, option.steps) if isinstance(option, Chain) else None
                        self.method_bindings.append(MethodBinding(dotted, chain, site_of(node), own))

    def _bind_function(self, obj: ast.AST, func_value: Value | None, scope: Scope, site_node: ast.AST) -> None:
        """`obj.forward = f` / `setattr(obj, "forward", f)` of a module function written with `self`
        first: audited as if bound onto obj (the patching idiom; calls through obj pass obj)."""
        if not isinstance(func_value, (ConsumerRef, Helper)) or func_value.dotted not in self._self_functions:
            return
        target = self._value(obj, scope)
        own = self._assigned_attrs(obj, scope)
        for option in (target.options if isinstance(target, OneOf) else (target,)):
            chain = (option.root, option.steps) if isinstance(option, Chain) else None
            self.method_bindings.append(MethodBinding(func_value.dotted, chain, site_of(site_node), own))

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

    # -------------------------------------------------------------- values
    def _value(self, node: ast.AST | None, scope: Scope, fresh: bool = False, depth: int = 0) -> Value:
        """What an expression holds. `fresh` marks its own chain steps for checking."""
        if node is None:
            return UNKNOWN
        spine: list[ast.AST] = []
        cur = node
        while True:
            if isinstance(cur, ast.Attribute):
                if scope.cls is not None and self._is_self(cur.value, scope):
                    break
                if isinstance(cur.value, ast.Name):
                    assigned = scope.env.lookup(_assigned_attr_key(cur.value.id, cur.attr))
                    if assigned is not None:  # set by the consumer earlier in this scope
                        value = assigned
                        for n in reversed(spine):
                            value = self._apply(n, value, scope, fresh, depth)
                        return value
                spine.append(cur)
                cur = cur.value
            elif isinstance(cur, ast.Subscript):
                spine.append(cur)
                cur = cur.value
            elif isinstance(cur, ast.Await):
                cur = cur.value
            elif isinstance(cur, ast.Call) and not _is_builtin_call(cur, scope, ("getattr", "super", "dict")):
                spine.append(cur)
                cur = cur.func
            else:
                break
            if len(spine) > MAX_CHAIN:
                return UNKNOWN
        value = self._atom(cur, scope, fresh, depth)
        for n in reversed(spine):
            value = self._apply(n, value, scope, fresh, depth)
        return value

    def _atom(self, node: ast.AST, scope: Scope, fresh: bool, depth: int) -> Value:
        if isinstance(node, ast.Name):
            found = scope.env.lookup(node.id)
            if found is not None:
                return found
            return ConsumerRef(f"builtins.{node.id}") if node.id in _BUILTINS else UNKNOWN
        if isinstance(node, ast.Constant):
            return Const(node.value) if isinstance(node.value, (str, int, float, bool, type(None))) else UNKNOWN
        if isinstance(node, ast.Tuple):
            items = [self._value(e, scope, depth=depth + 1) for e in node.elts] if len(node.elts) <= 16 else []
            consts = [i for i in items if isinstance(i, Const)]
            if items and len(consts) == len(items):
                return Const(tuple(c.value for c in consts))
            return UNKNOWN
        if isinstance(node, ast.Dict):
            return self._dict_literal(node, scope)
        if isinstance(node, ast.Attribute):  # self.X
            held = scope.cls.attr_values.get(node.attr) if scope.cls is not None else None
            if held is not None and held is not _FORGOTTEN:
                return held
            if held is _FORGOTTEN or (scope.cls is not None and node.attr in scope.cls.own_members):
                return UNKNOWN
            base = self._atom(node.value, scope, fresh, depth)
            return self._apply(node, base, scope, fresh, depth)
        if isinstance(node, ast.Call):
            return self._builtin_call(node, scope, fresh, depth)
        if isinstance(node, (ast.Compare, ast.BoolOp)) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
            if depth > g.MAX_DEPTH:
                return UNKNOWN
            # Inside a folded helper, a version compared as text is noted at the call.
            decision = self._decide(node, scope, depth + 1, record=scope.helper_call is not None)
            if decision.if_false.dead:
                return Const(True)
            if decision.if_true.dead:
                return Const(False)
            if scope.helper_call is not None and (decision.if_true.undecided or decision.if_true.conditions):
                return VersionDerived()  # inside a helper: the release decides it, the engine could not
            return UNKNOWN
        if isinstance(node, ast.IfExp):
            test = self._decide(node.test, scope, depth + 1, record=False)
            if test.if_false.dead:
                return self._value(node.body, scope, fresh, depth + 1)
            if test.if_true.dead:
                return self._value(node.orelse, scope, fresh, depth + 1)
            return join(self._value(node.body, scope, False, depth + 1), self._value(node.orelse, scope, False, depth + 1))
        return UNKNOWN

    def _dict_literal(self, node: ast.Dict, scope: Scope) -> Value:
        self.dicts_seen = True
        keys: set[str] = set()
        is_open = False
        for key, val in zip(node.keys, node.values):
            if key is None:  # {**other}
                other = self._value(val, scope)
                if isinstance(other, DictValue):
                    keys |= other.keys
                    is_open = is_open or other.open
                else:
                    is_open = True
            elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                keys.add(key.value)
            else:
                is_open = True
        return DictValue(frozenset(keys), is_open)

    def _builtin_call(self, node: ast.Call, scope: Scope, fresh: bool, depth: int) -> Value:
        if not isinstance(node.func, ast.Name):  # _atom reaches here only for builtin calls (`_is_builtin_call`)
            return UNKNOWN
        name = node.func.id
        if name == "super":
            return Chain(Root("super", scope.cls.dotted)) if scope.cls is not None else UNKNOWN
        if name == "dict":
            self.dicts_seen = True
            return self._dict_of_arguments(node, scope, DictValue(frozenset(), False))
        # getattr
        if len(node.args) == 3:
            # Inside a helper, `getattr(provider_module, "__version__", default)` is the version.
            if scope.helper_call is not None and _const_of(node.args[1]) == Const("__version__"):
                found = self._attribute(self._value(node.args[0], scope, fresh, depth + 1), "__version__", False)
                if isinstance(found, ProviderVersion):
                    return found
            return UNKNOWN  # getattr with a default never raises
        if len(node.args) != 2:
            return UNKNOWN
        base = self._value(node.args[0], scope, fresh, depth + 1)
        attr = node.args[1]
        key = self._value(attr, scope)
        if isinstance(key, Const) and isinstance(key.value, str):
            return _step_over(base, Step("attr", name=key.value, check=fresh))
        return _step_over(base, Step("dynamic", check=fresh)) if _has_chain(base) else UNKNOWN

    def _apply(self, node: ast.AST, base: Value, scope: Scope, fresh: bool, depth: int) -> Value:
        """One step of a chain (attribute, call, subscript) applied to what its base holds."""
        if isinstance(node, ast.Attribute):
            if scope.helper_call is not None and isinstance(base, Const) and isinstance(base.value, str) and node.attr in _STR_METHODS:
                return StrMethod(base.value, node.attr)  # type: ignore[arg-type]
            return self._attribute(base, node.attr, fresh)
        if isinstance(node, ast.Subscript):
            if isinstance(base, VersionDerived):
                return base
            if isinstance(base, (TupleOf, DistributionMap)):
                return self._helper_subscript(base, node, scope)
            if isinstance(base, Const) and isinstance(base.value, tuple):
                index = self._value(node.slice, scope)
                if isinstance(node.slice, ast.Slice):
                    lo, hi = self._value(node.slice.lower, scope), self._value(node.slice.upper, scope)
                    lo_v = lo.value if isinstance(lo, Const) and isinstance(lo.value, (int, type(None))) else None if node.slice.lower is None else ...
                    hi_v = hi.value if isinstance(hi, Const) and isinstance(hi.value, (int, type(None))) else None if node.slice.upper is None else ...
                    if lo_v is not ... and hi_v is not ... and node.slice.step is None:
                        try:
                            return Const(base.value[lo_v:hi_v])
                        except TypeError:
                            return UNKNOWN
                    return UNKNOWN
                if isinstance(index, Const) and isinstance(index.value, int):
                    try:
                        return Const(base.value[index.value])
                    except IndexError:
                        return UNKNOWN
                return UNKNOWN
            return _step_over(base, Step("subscript", check=fresh))
        if isinstance(node, ast.Call):
            return self._call_value(node, base, scope, fresh, depth)
        return UNKNOWN

    def _attribute(self, base: Value, attr: str, fresh: bool) -> Value:
        if isinstance(base, ImportChoice):
            return ImportChoice(self._attribute(base.ok, attr, fresh), self._attribute(base.fallback, attr, fresh), base.imports, base.caught, base.origin)
        if isinstance(base, Chain):
            if attr == "__version__" and base.root.kind == "symbol" and all(s.kind == "attr" for s in base.steps):
                return ProviderVersion("text")
            return Chain(base.root, base.steps + (Step("attr", name=attr, check=fresh),))
        if isinstance(base, ProviderVersion) and base.form == "text" and (method := _named(attr, _VERSION_TEXT_METHODS)):
            return VersionMethod(method)
        if isinstance(base, ProviderVersion) and base.form == "version" and (part := _named(attr, VERSION_PARTS)):
            return VersionPart(part)
        if isinstance(base, ParsedVersion) and attr in VERSION_PARTS:
            known, obj = self.folder.concrete(base)
            return Const(getattr(obj, attr)) if known else UNKNOWN
        if isinstance(base, VersionDerived):
            return base
        if isinstance(base, ProviderDistribution) and attr == "version":
            return ProviderVersion("text")
        if isinstance(base, Const) and isinstance(base.value, tuple) and attr in ("major", "minor", "micro"):
            i = ("major", "minor", "micro").index(attr)
            return Const(base.value[i]) if len(base.value) > i else UNKNOWN
        if isinstance(base, ConsumerRef):
            return self.imports_ctx.consumer_value(f"{base.dotted}.{attr}")
        if isinstance(base, Unbound) or (isinstance(base, Const) and base.value is None):
            return base  # None.x / an unbound name: stays what it is (import-failed-use sees it)
        return UNKNOWN

    def _call_value(self, node: ast.Call, base: Value, scope: Scope, fresh: bool, depth: int) -> Value:
        if isinstance(base, ImportChoice):
            ok = self._call_value(node, base.ok, scope, fresh, depth)
            alt = self._call_value(node, base.fallback, scope, fresh, depth)
            return ImportChoice(ok, alt, base.imports, base.caught, base.origin)
        if isinstance(base, Chain):
            receiver = _text(node.func.value) if isinstance(node.func, ast.Attribute) else None
            return Chain(base.root, base.steps + (Step("call", call=self._shape(node, scope), check=fresh, receiver=receiver),))
        if isinstance(base, Helper):
            return self._call_helper(base, node, scope, depth)
        if isinstance(base, VersionMethod):
            return self._version_method(base, node, scope, depth)
        if isinstance(base, StrMethod):
            return self._str_method(base, node, scope, depth)
        if isinstance(base, ConsumerRef):
            dotted = base.dotted
            found = self._module_lookup(dotted, node, scope, depth)
            if found is not None:
                return found
            if dotted in VERSION_PARSERS and node.args:
                arg = self._value(node.args[0], scope, depth=depth + 1)
                if isinstance(arg, ProviderVersion):
                    return ProviderVersion("version")
                if isinstance(arg, Const) and isinstance(arg.value, str):
                    return ParsedVersion(arg.value)
                return UNKNOWN
            if (dotted in METADATA_VERSION or dotted in METADATA_DISTRIBUTION) and node.args:
                arg = self._value(node.args[0], scope, depth=depth + 1)
                if isinstance(arg, Const) and isinstance(arg.value, str) and self._is_provider_dist(arg.value):
                    return ProviderVersion("text") if dotted in METADATA_VERSION else ProviderDistribution()
                return UNKNOWN
            if dotted == "builtins.str" and len(node.args) == 1:
                arg = self._value(node.args[0], scope, depth=depth + 1)
                return arg if isinstance(arg, (Const, ProviderVersion)) and (not isinstance(arg, ProviderVersion) or arg.form == "text") else UNKNOWN
            if dotted == "builtins.int" and len(node.args) == 1:
                arg = self._value(node.args[0], scope, depth=depth + 1)
                if isinstance(arg, Const) and isinstance(arg.value, (str, int)) and not isinstance(arg.value, bool):
                    try:
                        return Const(int(arg.value))
                    except ValueError:
                        return UNKNOWN
                return arg if isinstance(arg, VersionDerived) else UNKNOWN
            if dotted == "builtins.tuple" and len(node.args) == 1:
                arg = self._value(node.args[0], scope, depth=depth + 1)
                return arg if isinstance(arg, (Const, VersionPart)) else UNKNOWN
        if isinstance(base, Unbound) or (isinstance(base, Const) and base.value is None):
            return base
        return UNKNOWN

    def _module_lookup(self, dotted: str, node: ast.Call, scope: Scope, depth: int) -> Value | None:
        """`find_spec`, `packages_distributions()`, `import_module` of the provider: what they give on the audited release.

        Only the provider's own top-level package is known to be installed; any other name is not
        folded (None: not one of these calls)."""
        if dotted in PACKAGES_DISTRIBUTIONS and not node.args and not node.keywords:
            return DistributionMap()
        if dotted not in FIND_SPEC and not (dotted in IMPORT_MODULE and scope.helper_call is not None):
            return None
        if len(node.args) != 1 or node.keywords:
            return UNKNOWN
        arg = self._value(node.args[0], scope, depth=depth + 1)
        if not (isinstance(arg, Const) and isinstance(arg.value, str) and arg.value in self.options.provider_packages):
            return UNKNOWN
        return ProviderSpec() if dotted in FIND_SPEC else self.imports_ctx.value_for(arg.value)

    def _helper_subscript(self, base: Value, node: ast.Subscript, scope: Scope) -> Value:
        """`found_version[1]` of a helper's tuple; `packages_distributions()["NAME"]` of the provider's package."""
        key = self._value(node.slice, scope)
        if not isinstance(key, Const):
            return UNKNOWN
        if isinstance(base, TupleOf):
            if isinstance(key.value, int) and not isinstance(key.value, bool) and -len(base.items) <= key.value < len(base.items):
                return base.items[key.value]
            return UNKNOWN
        dist = self.options.provider_distribution
        if dist and isinstance(key.value, str) and key.value in self.options.provider_packages:
            return Const((dist,))
        return UNKNOWN

    def _str_method(self, method: StrMethod, node: ast.Call, scope: Scope, depth: int) -> Value:
        args = [self._value(a, scope, depth=depth + 1) for a in node.args]
        if node.keywords or not all(isinstance(a, Const) and isinstance(a.value, (str, int)) for a in args):
            return UNKNOWN
        try:
            result = getattr(method.text, method.method)(*[a.value for a in args])  # type: ignore[union-attr]
        except (TypeError, ValueError):
            return UNKNOWN
        return Const(tuple(result) if isinstance(result, list) else result)

    def _version_method(self, method: VersionMethod, node: ast.Call, scope: Scope, depth: int) -> Value:
        """`NAME.__version__.startswith("0.9")`, `.split(".")`: folded on the audited version text."""
        args = [self._value(a, scope, depth=depth + 1) for a in node.args]
        consts = [a for a in args if isinstance(a, Const)]
        if node.keywords or len(consts) != len(args):
            return UNKNOWN
        text = self.folder.provider_text
        if text is None:
            return VersionDerived()
        try:
            result = getattr(text, method.method)(*[c.value for c in consts])
        except (TypeError, ValueError):
            return UNKNOWN
        return Const(tuple(result) if isinstance(result, list) else result)

    def _is_provider_dist(self, name: str) -> bool:
        normal = _normal(name)
        return normal == self.provider_dist or normal in {_normal(p) for p in self.options.provider_packages}

    def _call_helper(self, helper: Helper, node: ast.Call, scope: Scope, depth: int) -> Value:
        """A consumer helper at a call: its returned expression or its statements (`helpers.py`),
        with the call's arguments bound; helpers it calls fold too, `MAX_HELPER_DEPTH` deep."""
        outermost = self._fold is None
        budget = self._fold or h.Budget()
        if not helper.expr:
            return UNKNOWN
        if (helper.form == "expr" and depth > 2) or budget.depth >= h.MAX_HELPER_DEPTH:
            return VersionDerived() if self._mentions_release(self._statements_of(helper)) else UNKNOWN
        if any(isinstance(a, ast.Starred) for a in node.args) or any(kw.arg is None for kw in node.keywords) or len(node.args) > len(helper.params):
            return UNKNOWN
        # This module's helper reads this module's names; another's, only those it was exported with.
        env = Env(self.module_env if helper.dotted in self._default_nodes else None)
        # A helper it calls travels as a ConsumerRef to its export (`_capture`).
        env.vars.update({n: self.imports_ctx.consumer_value(v.dotted) if isinstance(v, ConsumerRef) else v for n, v in helper.env})
        bound = dict(self._defaults(helper))
        for name, arg in zip(helper.params, node.args):
            bound[name] = self._value(arg, scope, depth=depth + 1)
        for kw in node.keywords:
            if kw.arg in helper.params:
                bound[kw.arg] = self._value(kw.value, scope, depth=depth + 1)
        for name in helper.params:
            env.vars[name] = bound.get(name, UNKNOWN)
        # Notes made inside (a version compared as text) belong to the outermost call.
        inner = Scope(
            env, None, scope.function, emit=False, helper_call=scope.helper_call or node,
            caller_live=scope.caller_live or scope.live, caller_emits=scope.caller_emits if scope.helper_call is not None else scope.emit,
        )  # fmt: skip
        self._fold = budget
        budget.depth += 1
        try:
            if helper.form == "expr":
                tree = self._parse_expr(helper.expr)
                return UNKNOWN if tree is None else self._value(tree, inner, depth=depth + 1)
            return self._run_body(helper, [bound.get(p, UNKNOWN) for p in helper.params], inner, budget)
        finally:
            budget.depth -= 1
            if outermost:
                self._fold = None

    def _defaults(self, helper: Helper) -> tuple[tuple[str, Value], ...]:
        """Its defaults; one naming a module constant of this module (`v=MIN_VERSION`) takes its value."""
        nodes = self._default_nodes.get(helper.dotted)
        if not nodes:
            return helper.defaults
        scope = Scope(self.module_env, None, "<module>", emit=False)
        out = []
        for name, value in helper.defaults:
            if name in nodes and isinstance(nodes[name], (ast.Name, ast.Attribute)):
                found = self._value(nodes[name], scope)
                value = found if isinstance(found, _FOLDED) else UNKNOWN
            out.append((name, value))
        return tuple(out)

    def _run_body(self, helper: Helper, args: list[Value], inner: Scope, budget: h.Budget) -> Value:
        """A body helper, run only on literal arguments; not foldable: Unknown, or VersionDerived
        when the audited release may decide it (the guard is then undecided, not run-time)."""
        body = self._local_bodies.get(helper.expr) or self._parse_body(helper.expr)
        if body is None:
            return UNKNOWN
        about_provider = (
            any(isinstance(a, VersionDerived) or (isinstance(a, Const) and isinstance(a.value, str) and self._is_provider_dist(a.value)) for a in args)
            or self._reads_provider(body, inner.env)
        )
        if not all(isinstance(a, (Const, ProviderVersion, ParsedVersion, VersionPart)) for a in args):
            return VersionDerived() if about_provider else UNKNOWN
        state: h.State = {name: UNBOUND for name in h.local_names(body)}
        state.update({name: inner.env.vars[name] for name in helper.params})

        def scope_of(locals_: h.State) -> Scope:
            env = Env(inner.env)
            env.vars.update(locals_)
            return replace(inner, env=env)

        run = h.BodyRun(
            value_of=lambda node, locals_: self._value(node, scope_of(locals_)),
            decide_of=lambda node, locals_: self._decide(node, scope_of(locals_)),
            budget=budget,
        )
        try:
            result = run.run(body, state)
        except (h.Unfoldable, RecursionError):
            return VersionDerived() if about_provider or run.undecided_seen else UNKNOWN
        result = _folded_only(result)  # a helper folds to what a guard tests, never to an object
        if g.truthiness(self.folder, result) is None and (run.undecided_seen or g.Folder.involves_provider(result)):
            return VersionDerived()
        return result

    def _statements_of(self, helper: Helper) -> list[ast.stmt]:
        if helper.form == "body":
            return self._local_bodies.get(helper.expr) or self._parse_body(helper.expr) or []
        tree = self._parse_expr(helper.expr) if helper.expr else None
        return [ast.Expr(tree)] if tree is not None else []

    def _mentions_release(self, body: list[ast.stmt]) -> bool:
        """The text reads the provider's version (`NAME.__version__`) or names its package or distribution."""
        for stmt in body:
            for node in descendants(stmt):
                if isinstance(node, ast.Attribute) and node.attr == "__version__" and self.imports_ctx.is_provider(_dotted(node.value) or ""):
                    return True
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and self._is_provider_dist(node.value):
                    return True
        return False

    def _reads_provider(self, body: list[ast.stmt], env: Env) -> bool:
        """The body names the provider: a provider name, its version, or its distribution as a literal."""
        for stmt in body:
            for node in descendants(stmt):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and self._is_provider_dist(node.value):
                    return True
                if isinstance(node, ast.Name) and isinstance(env.lookup(node.id), (Chain, ProviderVersion, ProviderDistribution, VersionPart)):
                    return True
        return False

    def _parse_body(self, text: str) -> list[ast.stmt] | None:
        if text not in self._body_trees:
            try:
                self._body_trees[text] = ast.parse(text).body
            except (SyntaxError, RecursionError, ValueError):
                self._body_trees[text] = None
        return self._body_trees[text]

    def _parse_expr(self, text: str) -> ast.expr | None:
        if text in self._local_helpers:
            return self._local_helpers[text]
        if text not in self._helper_trees:
            try:
                self._helper_trees[text] = ast.parse(text, mode="eval").body
            except (SyntaxError, RecursionError, ValueError):
                self._helper_trees[text] = None
        return self._helper_trees[text]

    def _shape(self, node: ast.Call, scope: Scope) -> CallShape:
        args: list[Arg] = []
        for a in node.args:
            args.append(Arg("star" if isinstance(a, ast.Starred) else "positional", None, site_of(a)))
        for k in node.keywords:
            if k.arg is not None:
                args.append(Arg("keyword", k.arg, site_of(k)))
                continue
            splat = self._value(k.value, scope)
            if isinstance(splat, DictValue):
                args += [Arg("keyword", key, site_of(k), via_splat=True) for key in sorted(splat.keys)]
                if splat.open:
                    args.append(Arg("starstar", None, site_of(k)))
            else:
                args.append(Arg("starstar", None, site_of(k)))
        return CallShape(tuple(args))

    def _annotation_value(self, annotation, scope: Scope) -> Value | None:
        """`x: Scheduler`, `x: Scheduler | None`, `x: Optional[Scheduler]`, `x: "Scheduler"` -> an instance."""
        if annotation is None:
            return None
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = ast.parse(annotation.value, mode="eval").body
            except SyntaxError:
                return None
        try:
            members = _union_members(annotation)
        except RecursionError:
            return None
        if len(members) != 1:
            return None
        # Read outside the class (an annotation names no `self` attribute); most scopes are already.
        return _instance_of(self._value(members[0], scope.outside_class()))

    def _is_self(self, node, scope: Scope) -> bool:
        if not isinstance(node, ast.Name):
            return False
        value = scope.env.lookup(node.id)
        return isinstance(value, Chain) and value.root.kind == "self" and not value.steps

    # -------------------------------------------------------------- guards
    def _decide(self, test: ast.AST, scope: Scope, depth: int = 0, record: bool = True) -> g.Decision:
        """Evaluate a test as Python would on the audited release (three-valued)."""
        if depth > g.MAX_DEPTH:
            return g.RUNTIME
        if isinstance(test, ast.BoolOp):
            decision = self._decide(test.values[0], scope, depth + 1, record)
            for i, part in enumerate(test.values[1:], start=1):
                nxt = self._decide(part, scope, depth + 1, record)
                sub: Callable[[], str] = partial(_and_text, test.values[: i + 1]) if isinstance(test.op, ast.And) else (lambda: _text(test))
                decision = g.conjoin(decision, nxt, sub) if isinstance(test.op, ast.And) else g.disjoin(decision, nxt, sub)
            return decision
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return g.negate(self._decide(test.operand, scope, depth + 1, record))
        if isinstance(test, ast.Compare):
            return self._compare(test, scope, depth, record)
        if isinstance(test, ast.Call):
            found = self._feature_test(test, scope, test, depth)
            if found is not None:
                return found
        if isinstance(test, ast.NamedExpr):
            return self._decide(test.value, scope, depth + 1, record)
        value = self._value(test, scope, depth=depth + 1)
        if isinstance(value, ImportChoice):
            return g.choice_truth(self.folder, value, _text(test), test.id if isinstance(test, ast.Name) else None)
        truth = g.truthiness(self.folder, value)
        if truth is not None:
            return g.constant(truth)
        # Undecided only when the audited release is what it depends on; a test on run-time data runs both ways.
        return g.undecided(_text(test)) if g.Folder.involves_provider(value) else g.RUNTIME

    def _compare(self, test: ast.Compare, scope: Scope, depth: int, record: bool) -> g.Decision:
        decision = g.TRUE
        left_node = test.left
        for op, right_node in zip(test.ops, test.comparators):
            part = self._compare_one(left_node, op, right_node, scope, depth, record, test)
            decision = g.conjoin(decision, part, lambda: _text(test)) if decision is not g.TRUE else part
            left_node = right_node
        return decision

    def _compare_one(self, left_node, op, right_node, scope: Scope, depth: int, record: bool, whole: ast.Compare) -> g.Decision:
        def text() -> str:
            return f"{_text(left_node)} {_OP_TEXT.get(type(op), '?')} {_text(right_node)}"

        if isinstance(op, (ast.In, ast.NotIn)):
            target = self._signature_target(right_node, scope)
            name = self._value(left_node, scope, depth=depth + 1)
            if target is not None and isinstance(name, Const) and isinstance(name.value, str):
                cond = Condition(ConditionKind.HAS_PARAM, True, text(), target=target, name=name.value)
                decision = g.symbolic(cond)
                return decision if isinstance(op, ast.In) else g.negate(decision)
        left = self._value(left_node, scope, depth=depth + 1)
        right = self._value(right_node, scope, depth=depth + 1)
        if isinstance(op, (ast.Is, ast.IsNot)):
            for value, other, node in ((left, right, left_node), (right, left, right_node)):
                if isinstance(other, Const) and other.value is None:
                    found = g.none_test(value, isinstance(op, ast.IsNot), text(), node.id if isinstance(node, ast.Name) else None, self.folder)
                    if found is not None:
                        return found
                    attr = self._getattr_target(node, scope)
                    if attr is not None:
                        d = g.symbolic(Condition(ConditionKind.HAS_ATTR, True, text(), target=attr[0], name=attr[1]))
                        return d if isinstance(op, ast.IsNot) else g.negate(d)
        known, result, as_text = g.compare(self.folder, left, op, right)
        if as_text and record and (scope.emit or scope.caller_emits):
            site_node = scope.helper_call or whole
            site = site_of(site_node)
            live = scope.caller_live or scope.live
            key = (site.line, site.column)
            if key not in self.notes:
                shown = self.folder.provider_text
                self.notes[key] = Note("version-compared-as-string", site, _text(site_node), f"compares the version as text: on {shown} this is {result}", live)
        if known:
            return g.constant(bool(result))
        return g.undecided(text()) if g.Folder.involves_provider(left, right) else g.RUNTIME

    def _feature_test(self, test: ast.Call, scope: Scope, node: ast.AST, depth: int) -> g.Decision | None:
        """hasattr / callable(getattr(...)) / getattr(x, "m", None) / isinstance / a TypeIs helper / a folded helper."""
        func = self._value(test.func, scope, depth=depth + 1)
        name = func.dotted if isinstance(func, ConsumerRef) else None
        if name in ("builtins.hasattr", "builtins.getattr") and len(test.args) >= 2:
            attr = self._getattr_target(test, scope)
            if attr is not None:
                cond = Condition(ConditionKind.HAS_ATTR, True, _text(node), target=attr[0], name=attr[1])
                return g.symbolic(cond, *self._narrowings(test.args[0], cond, scope))
            return None
        if isinstance(func, Chain) and func.root.kind == "symbol" and test.args and not test.keywords:
            # A provider function: a TypeIs/TypeGuard one narrows its argument (the checks ask the index).
            subject_value = self._value(test.args[0], scope)
            target = g.chain_target(subject_value)
            if target is not None and all(s.kind == "attr" for s in func.steps):
                path = ".".join([func.root.name] + [s.name or "" for s in func.steps])
                cond = Condition(ConditionKind.NARROWS, True, _text(node), target=target, name=path)
                return g.symbolic(cond, *self._narrowings(test.args[0], cond, scope))
            return None
        if name == "builtins.callable" and len(test.args) == 1 and isinstance(test.args[0], ast.Call):
            inner = test.args[0]
            if _is_builtin_call(inner, scope, ("getattr",)):
                attr = self._getattr_target(inner, scope)
                if attr is not None:
                    return g.symbolic(Condition(ConditionKind.HAS_ATTR, True, _text(node), target=attr[0], name=attr[1]))
            return None
        if name == "builtins.isinstance" and len(test.args) == 2:
            return self._isinstance(test.args[0], self._value(test.args[1], scope, depth=depth + 1), scope, node)
        if isinstance(func, Helper):
            if func.form == "release":
                return g.undecided(_text(node))
            if func.type_guard and test.args:
                narrows = self._parse_expr(str(func.narrows_to.value)) if isinstance(func.narrows_to, Const) else None
                if narrows is not None:
                    env = Env(self.module_env)
                    env.vars.update(dict(func.env))
                    cls_value = self._value(narrows, Scope(env, None, scope.function, emit=False))
                    return self._isinstance(test.args[0], cls_value, scope, node)
                return None
            value = self._call_helper(func, test, scope, depth)
            truth = g.truthiness(self.folder, value)
            if truth is None and isinstance(value, VersionDerived):
                return g.undecided(_text(node))  # the release may decide it, the engine could not
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
        narrowed = _instance_of(cls_value)
        subject_value = self._value(subject, scope)
        # Narrowing only adds what was unknown: a value already known (a subclass instance, a
        # consumer `self`) keeps its own members; the condition decides whether the branch runs.
        known = isinstance(subject_value, (Chain, ImportChoice))
        narrow = ((subject.id, narrowed),) if isinstance(subject, ast.Name) and narrowed is not None and not known else ()
        target = g.chain_target(subject_value)
        if target is None:
            return g.Decision(g.Branch(narrow=narrow), g.ALWAYS)
        cond = Condition(ConditionKind.IS_INSTANCE, True, _text(node), target=target, name=cls_path)
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
        key = self._value(node.args[1], scope)
        target = g.chain_target(self._value(node.args[0], scope))
        if target is None or not (isinstance(key, Const) and isinstance(key.value, str)):
            return None
        return target, key.value

    def _signature_target(self, node: ast.AST, scope: Scope):
        """The callable of `inspect.signature(f).parameters` (or `.parameters.keys()`)."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "keys" and not node.args:
            node = node.func.value
        if not (isinstance(node, ast.Attribute) and node.attr == "parameters" and isinstance(node.value, ast.Call)):
            return None
        call = node.value
        func = self._value(call.func, scope)
        if not (isinstance(func, ConsumerRef) and func.dotted in SIGNATURE and call.args):
            return None
        return g.chain_target(self._value(call.args[0], scope))


# ------------------------------------------------------------------ helpers
_LEAF_TYPES = frozenset({ast.Name, ast.Constant})
_CHAIN_TYPES = frozenset({ast.Call, ast.Attribute, ast.Subscript})  # a chain's steps
_ABSENT: Any = object()  # not bound in an Env
_DICT_MUTATIONS = frozenset({"update", "pop", "setdefault", "clear", "popitem"})
_DICT_READS = frozenset({"get", "items", "keys", "values", "copy", "__contains__", "__getitem__"})
_FOLDED = (Const, TupleOf, ProviderVersion, ParsedVersion, VersionPart, VersionDerived)  # what a body helper may return
_LOCAL = "\x00local:"  # a Helper.expr naming a helper of the module being read (its AST is at hand)


def _folded_only(value: Value) -> Value:
    """The value if it is one a guard tests (literals, versions, tuples of them), else Unknown."""
    if isinstance(value, TupleOf):
        return TupleOf(tuple(_folded_only(v) for v in value.items))
    return value if isinstance(value, _FOLDED) else UNKNOWN


def _may_compare_text(node: ast.Compare) -> bool:
    """An ordering comparison with a string literal on one side: a version compared as text, maybe."""
    return any(isinstance(op, g.ORDERING) for op in node.ops) and any(
        isinstance(c, ast.Constant) and isinstance(c.value, str) for c in (node.left, *node.comparators)
    )

_OP_TEXT = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}


def _under(live: Liveness, branch: g.Branch) -> Liveness:
    for c in branch.conditions:
        live = live.under(c)
    return live.under(undecided=branch.undecided) if branch.undecided else live


def _sides(value: Value, conditions: tuple[Condition, ...] = ()):
    """(chain, conditions, failed import) for each way a value can be, through import choices."""
    if isinstance(value, Chain):
        yield value, conditions, None
    elif isinstance(value, ImportChoice):
        ok_cond = Condition(ConditionKind.IMPORT_FAILS, False, f"{g.import_ref_text(value.origin)} works", imports=value.imports, caught=value.caught)
        fail_cond = replace(ok_cond, expect=True, text=f"{g.import_ref_text(value.origin)} fails")
        yield from _sides(value.ok, conditions + (ok_cond,))
        if isinstance(value.fallback, Unbound) or (isinstance(value.fallback, Const) and value.fallback.value is None):
            for chain, conds, _ in _sides(value.ok, ()):
                yield chain, conditions + (fail_cond,) + conds, value.origin
        else:
            yield from _sides(value.fallback, conditions + (fail_cond,))


def _step_over(base: Value, step: Step) -> Value:
    if isinstance(base, Chain):
        return Chain(base.root, base.steps + (step,))
    if isinstance(base, ImportChoice):
        return ImportChoice(_step_over(base.ok, step), _step_over(base.fallback, step), base.imports, base.caught, base.origin)
    return UNKNOWN


def _has_chain(value: Value) -> bool:
    return isinstance(value, (Chain, ImportChoice))


def _instance_of(value: Value) -> Value | None:
    if not isinstance(value, Chain) or any(s.kind != "attr" for s in value.steps):
        return None
    steps = tuple(replace(s, check=False) for s in value.steps)
    return Chain(value.root, steps + (Step("instance", check=False),))


def _unchecked(value: Value | None) -> Value:
    """A value stored under a name: its steps were judged where it was computed."""
    if value is None:
        return UNKNOWN
    if isinstance(value, Chain):
        return Chain(value.root, tuple(replace(s, check=False) if s.check else s for s in value.steps))
    if isinstance(value, ImportChoice):
        return ImportChoice(_unchecked(value.ok), _unchecked(value.fallback), value.imports, value.caught, value.origin)
    return value


def _is_builtin_call(node: ast.Call, scope: Scope, names: tuple[str, ...]) -> bool:
    return isinstance(node.func, ast.Name) and node.func.id in names and scope.env.lookup(node.func.id) is None


def _body_imports(body: list[ast.stmt], ctx: ImportContext) -> tuple[ImportRef, ...]:
    out: list[ImportRef] = []
    for stmt in body:
        if isinstance(stmt, ast.Import):
            out += [ImportRef(a.name, None, stmt.lineno) for a in stmt.names]
        elif isinstance(stmt, ast.ImportFrom):
            base = ctx.absolute(stmt.module, stmt.level)
            out += [ImportRef(base, a.name, stmt.lineno) for a in stmt.names if a.name != "*"]
    return tuple(out)


def _only_imports(body: list[ast.stmt]) -> bool:
    """A try body that can fail only at its imports (flags and constants aside)."""
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass)):
            continue
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, (ast.Constant, ast.Name)):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        return False
    return True


def _handler_kind(node) -> str:
    """'ImportError' | 'ModuleNotFoundError' | 'broad' | 'other': what an except clause catches."""
    names = _handler_names(node)
    if names & {"ImportError"}:
        return "ImportError"
    if names & _BROAD:
        return "broad"
    if names & {"ModuleNotFoundError"}:
        return "ModuleNotFoundError"
    return "other"


def _handler_names(node) -> set[str]:
    if node is None:
        return {"BaseException"}
    if isinstance(node, ast.Tuple):
        out: set[str] = set()
        for e in node.elts:
            out |= _handler_names(e)
        return out
    name = _dotted(node)
    return {name.rsplit(".", 1)[-1]} if name else set()


def _may_teach(node: ast.FunctionDef | ast.AsyncFunctionDef, cls: ClassScope) -> bool:
    """Whether walking a method (or a function nested in one) in a class's learning pass can change
    what the pass learns: it stores or deletes an attribute somewhere (`self.X = ...`, `del
    self.X`, `for self.X in ...`), or a dict `self.X` holds may be changed through a call or an
    item assignment. Nothing else the learning pass does outlives it: it emits nothing, and a
    function's own names are its own."""
    if any(isinstance(value, DictValue) for value in cls.attr_values.values()):
        return True
    return any(isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load) for n in descendants(node))


def _own_members(node: ast.ClassDef) -> set[str]:
    own: set[str] = set()
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            own.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            own |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            own.add(stmt.target.id)
    for sub in _statements(node.body):
        if isinstance(sub, ast.Assign):
            targets = sub.targets
        elif isinstance(sub, (ast.AnnAssign, ast.AugAssign)):
            targets = [sub.target]
        else:
            continue
        for t in targets:
            for leaf in descendants(t):
                if isinstance(leaf, ast.Attribute) and isinstance(leaf.value, ast.Name) and leaf.value.id in ("self", "cls"):
                    own.add(leaf.attr)
    return own


def _statements(body: list[ast.stmt]):
    """Every statement under a body, nested ones included (expressions are not entered)."""
    stack: list = list(body)
    while stack:
        stmt = stack.pop()
        yield stmt
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            part = getattr(stmt, name, None)
            if part:
                stack.extend(part)


def _is_type_checking(test) -> bool:
    name = _dotted(test)
    return name is not None and name.rsplit(".", 1)[-1] == "TYPE_CHECKING"


_dotted = dotted_text


def _decorator_name(node) -> str | None:
    name = _dotted(node.func if isinstance(node, ast.Call) else node)
    return name.rsplit(".", 1)[-1] if name else None


def _union_members(node) -> list:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union_members(node.left) + _union_members(node.right)
    if isinstance(node, ast.Constant) and node.value is None:
        return []
    if isinstance(node, ast.Subscript):
        head = _dotted(node.value) or ""
        tail = head.rsplit(".", 1)[-1]
        if tail == "Optional":
            return _union_members(node.slice)
        if tail == "Union":
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            out = []
            for e in elts:
                out += _union_members(e)
            return out
    return [node]


def _const_of(node) -> Value:
    return Const(node.value) if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))) else UNKNOWN


def _normal(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


def _and_text(values: list[ast.expr]) -> str:
    return " and ".join(_text(v) for v in values)


def _text(node, limit: int = 120) -> str:
    if node is None:
        return ""
    try:
        text = unparse(node)
    except (RecursionError, ValueError, AttributeError):
        return f"<expression at line {getattr(node, 'lineno', '?')}>"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _assigned_attr_key(name: str, attr: str) -> str:
    """The env key of `name.attr` assigned by the consumer (a dot: never a real variable name)."""
    return f"{name}.{attr}"
