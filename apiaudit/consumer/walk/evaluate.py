"""What an expression holds: a provider chain, a constant, the provider's version, a dict's keys.

`Evaluator.value` reads an expression as a `values.Value` without emitting anything: a chain
of attributes, calls and subscripts is followed from its root (a name, `self.X`, a builtin
call), each step applied to what its base holds. A comparison or boolean test asks the
`Decider` (`tests`), a call of a consumer guard helper the `Folding` (`folding`): both parts
sit above this one and are handed to it by the visitor once they exist.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from typing import Protocol, get_args

from apiaudit.consumer import guards as g
from apiaudit.consumer.records import Arg, CallShape, Condition, ConditionKind, ImportRef, Root, Step
from apiaudit.consumer.values import (
    UNKNOWN, AttrOrNone, Chain, Const, ConsumerRef, DictValue, DistributionMap, Helper, ImportChoice, OneOf,
    ParsedVersion, ProviderDistribution, ProviderSpec, ProviderVersion, ReturnedItems, SignatureOf, StrMethod,
    TupleOf, Unbound, Value, VersionDerived, VersionMethod, VersionPart, VersionPartName, VersionTextMethod,
    has_chain, instance_of, join, step_over, symbol_path,
)
from apiaudit.consumer.walk.known import (
    BUILTINS, joined_text, named, normal_name, FIND_SPEC, IMPORT_MODULE, METADATA_DISTRIBUTION, METADATA_VERSION,
    PACKAGES_DISTRIBUTIONS, SIGNATURE, STR_METHODS, VERSION_PARSERS, const_of, is_builtin_call,
)
from apiaudit.consumer.walk.scopes import FORGOTTEN, Scope, assigned_attr_key, is_self
from apiaudit.consumer.walk.tables import folded_any_all, folded_map, literal_items, table_item
from apiaudit.consumer.walk.state import WalkState, site_of, text_of
from apiaudit.infra.astutil import union_members

MAX_CHAIN = 200  # longer attribute/call chains are not followed (they degrade to Unknown)
VERSION_PARTS: tuple[VersionPartName, ...] = get_args(VersionPartName)
_VERSION_TEXT_METHODS: tuple[VersionTextMethod, ...] = get_args(VersionTextMethod)
_ATOMS = frozenset({ast.Name, ast.Constant})  # parsed nodes are of ast's own classes: one set lookup


class Tests(Protocol):
    """What reading a value asks of the tests (`Decider`)."""

    def decide(self, test: ast.AST, scope: Scope, depth: int = 0, record: bool = True) -> g.Decision: ...


class HelperCalls(Protocol):
    """What reading a value asks of the guard helpers (`Folding`)."""

    def call_helper(self, helper: Helper, node: ast.Call, scope: Scope, depth: int) -> Value: ...


class Evaluator:
    """What expressions hold in one module's walk."""

    __slots__ = ("state", "provider_dist", "provider_names", "tests", "folding", "callee")

    # The parts above this one, called back (set by the visitor, emptied after the walk).
    tests: Tests
    folding: HelperCalls

    def __init__(self, state: WalkState):
        self.state = state
        self.provider_dist = normal_name(state.options.provider_distribution) if state.options.provider_distribution else None
        self.provider_names = frozenset(normal_name(p) for p in state.options.provider_packages)
        # (a call read for its use, what its callee holds) as that reading found it: the recorder
        # asks it next (`Recorder._consumer_class_call`), and need not read the callee again
        self.callee: tuple[ast.AST, Value] | None = None

    def value(self, node: ast.AST | None, scope: Scope, fresh: bool = False, depth: int = 0) -> Value:
        """What an expression holds. `fresh` marks its own chain steps for checking."""
        if node is None:
            return UNKNOWN
        if type(node) in _ATOMS:  # a name or a literal, half the values read: no chain to follow
            return self._atom(node, scope, fresh, depth)
        spine: list[ast.AST] = []
        cur = node
        while True:  # (`type(cur) is`: parsed nodes are of ast's own classes, and it is cheaper)
            if type(cur) is ast.Call and (returned := self._method_returns(cur, scope)) is not None:
                held: Value = returned
                for n in reversed(spine):
                    held = self._apply(n, held, scope, fresh, depth)
                return held
            if type(cur) is ast.Attribute:
                if scope.cls is not None and is_self(cur.value, scope):
                    break
                if self.state.found.attrs_assigned and isinstance(cur.value, ast.Name):
                    assigned = scope.env.lookup(assigned_attr_key(cur.value.id, cur.attr))
                    if assigned is not None:  # set by the consumer earlier in this scope
                        value = assigned
                        for n in reversed(spine):
                            value = self._apply(n, value, scope, fresh, depth)
                        return value
                spine.append(cur)
                cur = cur.value
            elif type(cur) is ast.Subscript:
                spine.append(cur)
                cur = cur.value
            elif type(cur) is ast.Await:
                cur = cur.value
            elif type(cur) is ast.Call and not is_builtin_call(cur, scope, ("getattr", "super", "dict")):
                spine.append(cur)
                cur = cur.func
            else:
                break
            if len(spine) > MAX_CHAIN:
                return UNKNOWN
        value = self._atom(cur, scope, fresh, depth)
        if value is UNKNOWN:  # a step keeps UNKNOWN so (`_apply`)
            if fresh and spine and spine[0] is node:
                self.callee = (node, value)
            return value
        for n in reversed(spine):
            if n is node and fresh:
                self.callee = (node, value)
            value = self._apply(n, value, scope, fresh, depth)
        return value

    def _method_returns(self, node: ast.Call, scope: Scope) -> ReturnedItems | None:
        """`self.prepare(...)` of a method of the class whose returned items the class's learning
        pass read (`ClassScope.returned`), where no `self.prepare = ...` replaces it."""
        func = node.func
        if scope.cls is None or not scope.cls.returned or not isinstance(func, ast.Attribute) or not is_self(func.value, scope) or func.attr in scope.cls.attr_values:
            return None
        held = scope.cls.returned.get(func.attr)
        return held if isinstance(held, ReturnedItems) else None

    def _atom(self, node: ast.AST, scope: Scope, fresh: bool, depth: int) -> Value:
        if isinstance(node, ast.Name):
            found = scope.env.lookup(node.id)
            if found is not None:
                return found
            return ConsumerRef(f"builtins.{node.id}") if node.id in BUILTINS else UNKNOWN
        if isinstance(node, ast.Constant):
            return Const(node.value) if isinstance(node.value, (str, int, float, bool, type(None))) else UNKNOWN
        if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)):
            return self._text(node, scope, depth)
        if isinstance(node, ast.Tuple):
            items = [self.value(e, scope, depth=depth + 1) for e in node.elts] if len(node.elts) <= 16 else []
            consts = [i for i in items if isinstance(i, Const)]
            if items and len(consts) == len(items):
                return Const(tuple(c.value for c in consts))
            return UNKNOWN
        if isinstance(node, (ast.List, ast.Set)):  # a display of literals: a membership test folds
            return literal_items(self.value, node, scope, depth, self.state.found)
        if isinstance(node, (ast.Dict, ast.DictComp)):  # a display, or a comprehension folded to a table of literals
            return self._dict_literal(node, scope) if isinstance(node, ast.Dict) else folded_map(self.value, node, scope, depth, self.state.found)
        if isinstance(node, ast.Attribute):  # self.X
            attr = node.attr
            if scope.cls is not None and attr in scope.cls.property_attrs:
                attr = scope.cls.property_attrs[attr]  # a property returning self.Y: what self.Y holds
            held = scope.cls.attr_values.get(attr) if scope.cls is not None else None
            if held is not None and held is not FORGOTTEN:
                return held
            if held is FORGOTTEN or (scope.cls is not None and node.attr in scope.cls.own_members):
                return UNKNOWN
            base = self._atom(node.value, scope, fresh, depth)
            return self._apply(node, base, scope, fresh, depth)
        if isinstance(node, ast.Call):
            return self._builtin_call(node, scope, fresh, depth)
        if isinstance(node, (ast.Compare, ast.BoolOp)) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
            if depth > g.MAX_DEPTH:
                return UNKNOWN
            # Inside a folded helper, a version compared as text is noted at the call.
            decision = self.tests.decide(node, scope, depth + 1, record=scope.helper_call is not None)
            if decision.if_false.dead:
                return Const(True)
            if decision.if_true.dead:
                return Const(False)
            probe = g.probe_of(decision)
            if probe is not None:
                return probe  # a feature test kept in a name or returned: the checks decide it
            if scope.helper_call is not None and (decision.if_true.undecided or decision.if_true.conditions):
                return VersionDerived()  # inside a helper: the release decides it, the engine could not
            return UNKNOWN
        if isinstance(node, ast.IfExp):
            test = self.tests.decide(node.test, scope, depth + 1, record=False)
            if test.if_false.dead:
                return self.value(node.body, scope, fresh, depth + 1)
            if test.if_true.dead:
                return self.value(node.orelse, scope, fresh, depth + 1)
            return join(self.value(node.body, scope, False, depth + 1), self.value(node.orelse, scope, False, depth + 1))
        return UNKNOWN

    def _text(self, node: ast.expr, scope: Scope, depth: int) -> Value:
        def held(part: ast.expr) -> Value:
            if isinstance(part, ast.Name) and part.id == "__name__" and scope.env.lookup("__name__") is None:
                return Const(self.state.module)  # only here: `__name__ == "__main__"` stays unfolded
            return self.value(part, scope, depth=depth + 1) if depth <= g.MAX_DEPTH else UNKNOWN

        return joined_text(node, held)

    def _dict_literal(self, node: ast.Dict, scope: Scope) -> Value:
        self.state.found.dicts_seen = True
        keys: set[str] = set()
        is_open = False
        for key, val in zip(node.keys, node.values):
            if key is None:  # {**other}
                other = self.value(val, scope)
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

    def dict_of_arguments(self, call: ast.Call, scope: Scope, start: DictValue) -> DictValue:
        """`start` plus the keys `dict(...)` / `.update(...)` arguments add: a mapping or `**splat`
        whose keys are known adds them; anything else makes the set open."""
        keys, is_open = set(start.keys), start.open
        parts = [*call.args, *(kw.value for kw in call.keywords if kw.arg is None)]
        for part in parts:
            other = self.value(part, scope)
            keys |= other.keys if isinstance(other, DictValue) else set()
            is_open = is_open or not isinstance(other, DictValue) or other.open
        keys |= {kw.arg for kw in call.keywords if kw.arg is not None}
        return DictValue(frozenset(keys), is_open)

    def _super(self, node: ast.Call, scope: Scope, fresh: bool, depth: int) -> Value:
        """`super()`, or `super(Cls, self)`: the lookup starts after Cls in the MRO of self's class."""
        if scope.cls is None or (node.args and (len(node.args) != 2 or not is_self(node.args[1], scope))):
            return UNKNOWN
        start = self.value(node.args[0], scope, fresh, depth + 1) if node.args else ConsumerRef(scope.cls.dotted)
        after = start.dotted if isinstance(start, ConsumerRef) else symbol_path(start)
        if after is None:
            return UNKNOWN
        return Chain(Root("super", scope.cls.dotted, None if after == scope.cls.dotted else after))

    def _builtin_call(self, node: ast.Call, scope: Scope, fresh: bool, depth: int) -> Value:
        if not isinstance(node.func, ast.Name):  # _atom reaches here only for builtin calls (`_is_builtin_call`)
            return UNKNOWN
        name = node.func.id
        if name == "super":
            return self._super(node, scope, fresh, depth)
        if name == "dict":
            self.state.found.dicts_seen = True
            return self.dict_of_arguments(node, scope, DictValue(frozenset(), False))
        # getattr
        if len(node.args) == 3:
            # Inside a helper, `getattr(provider_module, "__version__", default)` is the version.
            if scope.helper_call is not None and const_of(node.args[1]) == Const("__version__"):
                found = self._attribute(self.value(node.args[0], scope, fresh, depth + 1), "__version__", False)
                if isinstance(found, ProviderVersion):
                    return found
            if const_of(node.args[2]) == Const(None):
                # `held = getattr(provider_obj, "new_name", None)`: a probe of the attribute
                target = g.chain_target(self.value(node.args[0], scope, fresh, depth + 1))
                key = self.value(node.args[1], scope)
                if target is not None and isinstance(key, Const) and isinstance(key.value, str):
                    return AttrOrNone(Condition(ConditionKind.HAS_ATTR, True, text_of(node), target=target, name=key.value))
            return UNKNOWN  # getattr with a default never raises
        if len(node.args) != 2:
            return UNKNOWN
        base = self.value(node.args[0], scope, fresh, depth + 1)
        attr = node.args[1]
        key = self.value(attr, scope)
        if isinstance(key, Const) and isinstance(key.value, str):
            return step_over(base, Step("attr", name=key.value, check=fresh))
        return step_over(base, Step("dynamic", check=fresh)) if has_chain(base) else UNKNOWN

    def _apply(self, node: ast.AST, base: Value, scope: Scope, fresh: bool, depth: int) -> Value:
        """One step of a chain (attribute, call, subscript) applied to what its base holds."""
        if isinstance(node, ast.Attribute):
            if scope.helper_call is not None and isinstance(base, Const) and isinstance(base.value, str) and node.attr in STR_METHODS:
                return StrMethod(base.value, node.attr)  # type: ignore[arg-type]
            return self._attribute(base, node.attr, fresh)
        if isinstance(node, ast.Subscript):
            if isinstance(base, VersionDerived):
                return base
            if isinstance(base, (TupleOf, DistributionMap)):
                return self._helper_subscript(base, node, scope)
            if (item := table_item(self.value, base, node.slice, scope, depth)) is not None:
                return item
            if isinstance(base, Const) and isinstance(base.value, tuple):
                index = self.value(node.slice, scope)
                if isinstance(node.slice, ast.Slice):
                    lo, hi = self.value(node.slice.lower, scope), self.value(node.slice.upper, scope)
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
            return step_over(base, Step("subscript", check=fresh))
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
        if isinstance(base, ProviderVersion) and base.form == "text" and (method := named(attr, _VERSION_TEXT_METHODS)):
            return VersionMethod(method)
        if isinstance(base, ProviderVersion) and base.form == "version" and (part := named(attr, VERSION_PARTS)):
            return VersionPart(part)
        if isinstance(base, ParsedVersion) and attr in VERSION_PARTS:
            known, obj = self.state.folder.concrete(base)
            return Const(getattr(obj, attr)) if known else UNKNOWN
        if isinstance(base, VersionDerived):
            return base
        if isinstance(base, ProviderDistribution) and attr == "version":
            return ProviderVersion("text")
        if isinstance(base, Const) and isinstance(base.value, tuple) and attr in ("major", "minor", "micro"):
            i = ("major", "minor", "micro").index(attr)
            return Const(base.value[i]) if len(base.value) > i else UNKNOWN
        if isinstance(base, SignatureOf) and not base.parameters and attr == "parameters":
            return SignatureOf(base.target, parameters=True)
        if isinstance(base, ConsumerRef) and attr in ("__module__", "__name__", "__qualname__") and base.dotted.count("."):
            # a consumer class's own name, as `f"{Ext.__module__}.{Ext.__qualname__}"` spells it
            module, _, name = base.dotted.rpartition(".")
            return Const(module if attr == "__module__" else name)
        if isinstance(base, ConsumerRef):
            members = self.state.found.class_members.get(base.dotted)
            if members is not None and attr not in members:
                # Not defined in the class body: inherited, from a provider base where it has one.
                return Chain(Root("cls", base.dotted), (Step("attr", name=attr),))
            return self.state.imports_ctx.consumer_value(f"{base.dotted}.{attr}")
        if isinstance(base, Unbound) or (isinstance(base, Const) and base.value is None):
            return base  # None.x / an unbound name: stays what it is (import-failed-use sees it)
        return UNKNOWN

    def _call_value(self, node: ast.Call, base: Value, scope: Scope, fresh: bool, depth: int) -> Value:
        if isinstance(base, ImportChoice):
            ok = self._call_value(node, base.ok, scope, fresh, depth)
            alt = self._call_value(node, base.fallback, scope, fresh, depth)
            return ImportChoice(ok, alt, base.imports, base.caught, base.origin)
        if isinstance(base, Chain):
            receiver = text_of(node.func.value) if isinstance(node.func, ast.Attribute) else None
            return Chain(base.root, base.steps + (Step("call", call=self.call_shape(node, scope), check=fresh, receiver=receiver),))
        if isinstance(base, OneOf):  # `cls = A if use_async else B; cls(...)`: each way is checked
            return OneOf(tuple(Chain(o.root, o.steps + (Step("call", call=self.call_shape(node, scope), check=fresh),)) for o in base.options))
        if isinstance(base, Helper):
            return self.folding.call_helper(base, node, scope, depth)
        if isinstance(base, VersionMethod):
            return self._version_method(base, node, scope, depth)
        if isinstance(base, StrMethod):
            return self._str_method(base, node, scope, depth)
        if isinstance(base, ConsumerRef):
            dotted = base.dotted
            found = self._module_lookup(dotted, node, scope, depth)
            if found is not None:
                return found
            if dotted in SIGNATURE and len(node.args) == 1:
                arg = self.value(node.args[0], scope, depth=depth + 1)
                return SignatureOf(arg) if isinstance(arg, Chain) else UNKNOWN
            if dotted in VERSION_PARSERS and node.args:
                arg = self.value(node.args[0], scope, depth=depth + 1)
                if isinstance(arg, ProviderVersion):
                    return ProviderVersion("version")
                if isinstance(arg, Const) and isinstance(arg.value, str):
                    return ParsedVersion(arg.value)
                return UNKNOWN
            if (dotted in METADATA_VERSION or dotted in METADATA_DISTRIBUTION) and node.args:
                arg = self.value(node.args[0], scope, depth=depth + 1)
                if isinstance(arg, Const) and isinstance(arg.value, str) and self.is_provider_dist(arg.value):
                    return ProviderVersion("text") if dotted in METADATA_VERSION else ProviderDistribution()
                return UNKNOWN
            if dotted in ("builtins.any", "builtins.all") and len(node.args) == 1 and not node.keywords:
                return folded_any_all(self.value, dotted == "builtins.any", node.args[0], scope, depth)
            if dotted == "builtins.str" and len(node.args) == 1:
                arg = self.value(node.args[0], scope, depth=depth + 1)
                return arg if isinstance(arg, (Const, ProviderVersion)) and (not isinstance(arg, ProviderVersion) or arg.form == "text") else UNKNOWN
            if dotted == "builtins.int" and len(node.args) == 1:
                arg = self.value(node.args[0], scope, depth=depth + 1)
                if isinstance(arg, Const) and isinstance(arg.value, (str, int)) and not isinstance(arg.value, bool):
                    try:
                        return Const(int(arg.value))
                    except ValueError:
                        return UNKNOWN
                return arg if isinstance(arg, VersionDerived) else UNKNOWN
            if dotted == "builtins.tuple" and len(node.args) == 1:
                arg = self.value(node.args[0], scope, depth=depth + 1)
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
        if dotted not in FIND_SPEC and dotted not in IMPORT_MODULE:
            return None
        if len(node.args) != 1 or node.keywords:
            return UNKNOWN
        arg = self.value(node.args[0], scope, depth=depth + 1)
        if dotted in IMPORT_MODULE and scope.helper_call is None:
            # `importlib.import_module("prov.sub.mod")`: the module, as `import prov.sub.mod` binds
            # it (the recorder records the import, so a module gone from the release is reported)
            named = arg.value if isinstance(arg, Const) and isinstance(arg.value, str) else None
            return self.state.imports_ctx.value_for(named) if named and self.state.imports_ctx.is_provider(named) else UNKNOWN
        if dotted in FIND_SPEC and isinstance(arg, Const) and isinstance(arg.value, str) and "." in arg.value and self.state.imports_ctx.is_provider(arg.value):
            ref = ImportRef(arg.value, None, node.lineno)  # a provider submodule: found when importing it works (the checks ask)
            return ImportChoice(ProviderSpec(), Const(None), (ref,), "ModuleNotFoundError", ref)
        if not (isinstance(arg, Const) and isinstance(arg.value, str) and arg.value in self.state.options.provider_packages):
            return UNKNOWN
        return ProviderSpec() if dotted in FIND_SPEC else self.state.imports_ctx.value_for(arg.value)

    def _helper_subscript(self, base: Value, node: ast.Subscript, scope: Scope) -> Value:
        """`found_version[1]` of a helper's tuple; `packages_distributions()["NAME"]` of the provider's package."""
        key = self.value(node.slice, scope)
        if not isinstance(key, Const):
            return UNKNOWN
        if isinstance(base, TupleOf):
            if isinstance(key.value, int) and not isinstance(key.value, bool) and -len(base.items) <= key.value < len(base.items):
                return base.items[key.value]
            return UNKNOWN
        dist = self.state.options.provider_distribution
        if dist and isinstance(key.value, str) and key.value in self.state.options.provider_packages:
            return Const((dist,))
        return UNKNOWN

    def _str_method(self, method: StrMethod, node: ast.Call, scope: Scope, depth: int) -> Value:
        args = [self.value(a, scope, depth=depth + 1) for a in node.args]
        if node.keywords or not all(isinstance(a, Const) and isinstance(a.value, (str, int)) for a in args):
            return UNKNOWN
        try:
            result = getattr(method.text, method.method)(*[a.value for a in args])  # type: ignore[union-attr]
        except (TypeError, ValueError):
            return UNKNOWN
        return Const(tuple(result) if isinstance(result, list) else result)

    def _version_method(self, method: VersionMethod, node: ast.Call, scope: Scope, depth: int) -> Value:
        """`NAME.__version__.startswith("0.9")`, `.split(".")`: folded on the audited version text."""
        args = [self.value(a, scope, depth=depth + 1) for a in node.args]
        consts = [a for a in args if isinstance(a, Const)]
        if node.keywords or len(consts) != len(args):
            return UNKNOWN
        text = self.state.folder.provider_text
        if text is None:
            return VersionDerived()
        try:
            result = getattr(text, method.method)(*[c.value for c in consts])
        except (TypeError, ValueError):
            return UNKNOWN
        return Const(tuple(result) if isinstance(result, list) else result)

    def is_provider_dist(self, name: str) -> bool:
        normal = normal_name(name)
        return normal == self.provider_dist or normal in self.provider_names

    def call_shape(self, node: ast.Call, scope: Scope) -> CallShape:
        args: list[Arg] = []
        for a in node.args:
            args.append(Arg("star" if isinstance(a, ast.Starred) else "positional", None, site_of(a)))
        for k in node.keywords:
            if k.arg is not None:
                args.append(Arg("keyword", k.arg, site_of(k)))
                continue
            splat = self.value(k.value, scope)
            if isinstance(splat, DictValue):
                args += [Arg("keyword", key, site_of(k), via_splat=True) for key in sorted(splat.keys)]
                if splat.open:
                    args.append(Arg("starstar", None, site_of(k)))
            else:
                args.append(Arg("starstar", None, site_of(k)))
        return CallShape(tuple(args))

    def annotation_value(self, annotation, scope: Scope) -> Value | None:
        """`x: Scheduler`, `x: Scheduler | None`, `x: Optional[Scheduler]`, `x: "Scheduler"` -> an instance."""
        if annotation is None:
            return None
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = ast.parse(annotation.value, mode="eval").body
            except SyntaxError:
                return None
        try:
            members = union_members(annotation)
        except RecursionError:
            return None
        if len(members) != 1:
            return None
        # Read outside the class (an annotation names no `self` attribute); most scopes are already.
        return instance_of(self.value(members[0], scope.outside_class()))
