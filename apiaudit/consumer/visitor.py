"""Extract provider uses from one consumer module with `ast` (never executing it).

Names are tracked through imports (absolute, relative, function-local, `import a.b as c`),
local variables and `self.x` attributes assigned from provider calls or annotated with
provider types. Tracking is flow-insensitive within a function: a name bound to two
different provider values is forgotten rather than guessed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace

from apiaudit.consumer.model import (
    Arg,
    CallShape,
    ClassFacts,
    ConsumerFile,
    ConsumerOptions,
    ImportUse,
    Injection,
    MethodBinding,
    Root,
    RpcCall,
    Site,
    Step,
    Use,
)

_GUARD_EXCEPTIONS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
_FORGOTTEN = object()  # a name bound to conflicting values


@dataclass(frozen=True)
class Value:
    """What a name or expression refers to, as far as the visitor can tell."""

    root: Root | None = None  # a provider-reaching chain
    steps: tuple[Step, ...] = ()
    consumer: str | None = None  # a consumer module/class/function, by dotted path


@dataclass
class ClassScope:
    dotted: str
    own_members: set[str]
    attr_values: dict[str, object] = field(default_factory=dict)  # self.X -> Value | _FORGOTTEN


NARROWING_CALLS = frozenset({"isinstance", "issubclass", "hasattr", "getattr", "type"})


def narrowing_subjects(test: ast.AST) -> list[ast.expr]:
    """Expressions a condition tests the type or attributes of: `isinstance(E, T)`, `hasattr(E, n)`,
    `getattr(E, n, d)`, `type(E) is T`. Code the condition guards may rely on E being a subclass."""
    return [
        sub.args[0]
        for sub in ast.walk(test)
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in NARROWING_CALLS and sub.args
    ]


def _chain_key(root, steps) -> tuple:
    return (root, tuple((s.kind, s.name) for s in steps))


def site_of(node: ast.AST) -> Site:
    return Site(node.lineno, node.col_offset, getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None))


class ModuleVisitor:
    def __init__(self, source: str, path: str, module: str, is_package: bool, options: ConsumerOptions):
        self.source = source
        self.path = path
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.options = options
        self.provider_tops = frozenset(options.provider_packages)
        self.rpc = {m: (i, k) for m, i, k in options.rpc_methods}
        self.uses: list[Use] = []
        self.imports: list[ImportUse] = []
        self.classes: list[ClassFacts] = []
        self.injections: list[Injection] = []
        self.rpc_calls: list[RpcCall] = []
        self.method_bindings: list[MethodBinding] = []
        self.module_env: dict[str, object] = {}
        # Chains a condition tests the type of (isinstance/hasattr/getattr): inside the guarded
        # code their type is narrowed to something the visitor does not track (see _narrow).
        self._narrowed: list[tuple] = []
        self.reexports = dict(options.reexports)

    # ---------------------------------------------------------------- entry
    def run(self, tree: ast.Module) -> ConsumerFile:
        # Module-level definitions are visible to every function, whatever their order.
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.module_env[node.name] = Value(consumer=f"{self.module}.{node.name}")
        self._block(tree.body, self.module_env, None, "<module>", guard=None)
        return ConsumerFile(
            path=self.path,
            module=self.module,
            uses=tuple(self.uses),
            imports=tuple(self.imports),
            classes=tuple(self.classes),
            injections=tuple(self.injections),
            rpc_calls=tuple(self.rpc_calls),
            method_bindings=tuple(self.method_bindings),
            lines=tuple(self.source.splitlines()),
        )

    # ------------------------------------------------------------ statements
    def _block(self, body, env, cls: ClassScope | None, function: str, guard: str | None, emit: bool = True):
        depth = len(self._narrowed)
        for stmt in body:
            self._stmt(stmt, env, cls, function, guard, emit)
            self._narrow_after(stmt, env, cls)
        del self._narrowed[depth:]

    # ------------------------------------------------------------ narrowing
    def _narrow(self, test, env, cls) -> int:
        """Push the chains `test` checks the type of; returns the depth to pop back to."""
        depth = len(self._narrowed)
        for subject in narrowing_subjects(test):
            self._narrowed.append(("text", ast.unparse(subject)))
            value = self._value(subject, env, cls)
            # A chain through an attribute (`x = loader.dataset`) names one object, not just a type.
            if isinstance(value, Value) and value.root is not None and any(s.kind == "attr" for s in value.steps):
                self._narrowed.append(("chain", _chain_key(value.root, value.steps)))
        return depth

    def _narrow_after(self, stmt, env, cls) -> None:
        """`assert isinstance(x, T)` or `if not isinstance(x, T): raise`: x is narrowed from here on."""
        if isinstance(stmt, ast.Assert):
            self._narrow(stmt.test, env, cls)
        elif isinstance(stmt, ast.If) and stmt.body and isinstance(stmt.body[-1], (ast.Raise, ast.Return, ast.Continue, ast.Break)):
            self._narrow(stmt.test, env, cls)

    def _is_narrowed(self, value: Value, node: ast.AST) -> bool:
        if not self._narrowed:
            return False
        text = ast.unparse(node)
        key = _chain_key(value.root, value.steps)
        for kind, narrowed in self._narrowed:
            if kind == "text" and text.startswith(narrowed) and text[len(narrowed) : len(narrowed) + 1] in ("", ".", "(", "["):
                return True
            if kind == "chain" and key[0] == narrowed[0] and key[1][: len(narrowed[1])] == narrowed[1]:
                return True
        return False

    def _stmt(self, stmt, env, cls, function, guard, emit):
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                self._import(alias.name, None, alias, env, guard, emit)
                top = alias.name.split(".")[0]
                if alias.asname:
                    env[alias.asname] = self._value_for_import(alias.name)
                else:
                    env[top] = self._value_for_import(top)
        elif isinstance(stmt, ast.ImportFrom):
            base = self._absolute(stmt.module, stmt.level)
            for alias in stmt.names:
                if alias.name == "*":
                    continue
                self._import(base, alias.name, alias, env, guard, emit)
                env[alias.asname or alias.name] = self._value_for_import(f"{base}.{alias.name}")
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in stmt.decorator_list:
                self._expr(d, env, cls, function, emit)
            qual = f"{function}.{stmt.name}" if function != "<module>" else stmt.name
            if cls is not None:
                qual = f"{cls.dotted.rsplit('.', 1)[-1]}.{stmt.name}"
            self._function(stmt, env, cls, qual, emit)
        elif isinstance(stmt, ast.ClassDef):
            self._class(stmt, env, function, emit)
        elif isinstance(stmt, ast.Try) or (hasattr(ast, "TryStar") and isinstance(stmt, getattr(ast, "TryStar"))):
            caught = set()
            for h in stmt.handlers:
                caught |= _handler_names(h.type)
            inner_guard = guard or ("try/except ImportError" if caught & _GUARD_EXCEPTIONS else None)
            self._block(stmt.body, env, cls, function, inner_guard, emit)
            for h in stmt.handlers:
                if h.name:
                    env[h.name] = _FORGOTTEN
                self._block(h.body, env, cls, function, guard, emit)
            self._block(stmt.orelse, env, cls, function, guard, emit)
            self._block(stmt.finalbody, env, cls, function, guard, emit)
        elif isinstance(stmt, ast.If):
            self._expr(stmt.test, env, cls, function, emit)
            inner_guard = guard or ("TYPE_CHECKING" if _is_type_checking(stmt.test) else None)
            depth = self._narrow(stmt.test, env, cls)
            self._block(stmt.body, env, cls, function, inner_guard, emit)
            self._block(stmt.orelse, env, cls, function, guard, emit)
            del self._narrowed[depth:]
        elif isinstance(stmt, ast.Assign):
            self._expr(stmt.value, env, cls, function, emit)
            value = self._value(stmt.value, env, cls)
            for target in stmt.targets:
                self._assign(target, value, env, cls, function, emit)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self._expr(stmt.value, env, cls, function, emit)
            declared = self._annotation_value(stmt.annotation, env)
            value = declared or (self._value(stmt.value, env, cls) if stmt.value is not None else None)
            self._assign(stmt.target, value, env, cls, function, emit)
        elif isinstance(stmt, ast.AugAssign):
            self._expr(stmt.value, env, cls, function, emit)
            self._target_loads(stmt.target, env, cls, function, emit)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self._expr(stmt.iter, env, cls, function, emit)
            self._forget_targets(stmt.target, env)
            self._block(stmt.body, env, cls, function, guard, emit)
            self._block(stmt.orelse, env, cls, function, guard, emit)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self._expr(item.context_expr, env, cls, function, emit)
                if item.optional_vars is not None:
                    self._forget_targets(item.optional_vars, env)
            self._block(stmt.body, env, cls, function, guard, emit)
        elif isinstance(stmt, ast.While):
            self._expr(stmt.test, env, cls, function, emit)
            self._block(stmt.body, env, cls, function, guard, emit)
            self._block(stmt.orelse, env, cls, function, guard, emit)
        elif hasattr(ast, "Match") and isinstance(stmt, getattr(ast, "Match")):
            self._expr(stmt.subject, env, cls, function, emit)
            for case in stmt.cases:
                self._block(case.body, env, cls, function, guard, emit)
        elif isinstance(stmt, ast.Delete):
            for t in stmt.targets:
                self._target_loads(t, env, cls, function, emit)
        else:
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self._expr(child, env, cls, function, emit)

    def _assign(self, target, value, env, cls, function, emit):
        if isinstance(target, ast.Name):
            _bind(env, target.id, value)
        elif isinstance(target, ast.Attribute):
            self._target_loads(target, env, cls, function, emit)
            if cls is not None and _is_self(target.value, env):
                current = cls.attr_values.get(target.attr)
                if current is None:
                    cls.attr_values[target.attr] = value if value is not None else _FORGOTTEN
                elif current is not _FORGOTTEN and current != value:
                    cls.attr_values[target.attr] = _FORGOTTEN
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._assign(elt.value if isinstance(elt, ast.Starred) else elt, None, env, cls, function, emit)
        else:
            self._target_loads(target, env, cls, function, emit)

    def _target_loads(self, target, env, cls, function, emit):
        """`a.b.c = v` loads `a.b`; `a[i] = v` loads `a` and `i`."""
        if isinstance(target, ast.Attribute):
            self._expr(target.value, env, cls, function, emit)
        elif isinstance(target, ast.Subscript):
            self._expr(target.value, env, cls, function, emit)
            self._expr(target.slice, env, cls, function, emit)
        elif isinstance(target, ast.Name):
            _bind(env, target.id, None)

    def _forget_targets(self, target, env):
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                env[node.id] = _FORGOTTEN

    # --------------------------------------------------------- definitions
    def _function(self, node, outer_env, cls, qual, emit):
        # Methods see module names, not the class body's; plain functions see their enclosing scope.
        env = dict(outer_env) if cls is None else dict(self.module_env)
        args = node.args
        all_args = list(args.posonlyargs) + list(args.args)
        first = all_args[0].arg if all_args else None
        is_method = cls is not None and not any(_decorator_name(d) == "staticmethod" for d in node.decorator_list)
        for a in all_args + list(args.kwonlyargs) + [x for x in (args.vararg, args.kwarg) if x]:
            env[a.arg] = self._annotation_value(a.annotation, env) if a.annotation is not None else None
        for default in list(args.defaults) + [d for d in args.kw_defaults if d is not None]:
            self._expr(default, outer_env, cls, qual, emit)
        if is_method and first:
            env[first] = Value(root=Root("self", cls.dotted))
            if any(_decorator_name(d) == "classmethod" for d in node.decorator_list):
                env[first] = None
        elif cls is None and first == "self":
            # A module-level function written to be bound onto an object (types.MethodType).
            env[first] = Value(root=Root("fself", f"{self.module}.{node.name}"))
        self._block(node.body, env, cls, qual, None, emit)

    def _class(self, node: ast.ClassDef, env, function, emit):
        dotted = f"{self.module}.{node.name}" if function == "<module>" else f"{self.module}.{function}.{node.name}"
        provider_bases, consumer_bases = [], []
        for base in node.bases:
            self._expr(base, env, None, function, emit)
            value = self._value(base, env, None)
            if value is not None and value.root is not None and value.root.kind == "symbol" and all(s.kind == "attr" for s in value.steps):
                provider_bases.append(".".join([value.root.name] + [s.name for s in value.steps]))
            elif value is not None and value.consumer:
                consumer_bases.append(value.consumer)
        for kw in node.keywords:
            self._expr(kw.value, env, None, function, emit)
        for d in node.decorator_list:
            self._expr(d, env, None, function, emit)
        own = _own_members(node)
        scope = ClassScope(dotted=dotted, own_members=own)
        class_env = dict(env)
        # Pass 1 learns what each self.X holds; pass 2 emits uses with that knowledge.
        self._block(node.body, class_env, scope, function, None, emit=False)
        self._block(node.body, dict(env), scope, function, None, emit=emit)
        self.classes.append(
            ClassFacts(dotted, tuple(provider_bases), tuple(consumer_bases), frozenset(own), site_of(node))
        )
        _bind(env, node.name, Value(consumer=dotted))

    # ----------------------------------------------------------- imports
    def _absolute(self, module: str | None, level: int) -> str:
        if level == 0:
            return module or ""
        parts = self.package.split(".") if self.package else []
        if level > 1:
            parts = parts[: len(parts) - (level - 1)]
        return ".".join(parts + ([module] if module else []))

    def _is_provider(self, dotted: str) -> bool:
        return dotted.split(".")[0] in self.provider_tops

    def _value_for_import(self, dotted: str) -> Value | None:
        if self._is_provider(dotted):
            return Value(root=Root("symbol", dotted))
        return self._consumer_value(dotted)

    def _consumer_value(self, dotted: str) -> Value:
        """A consumer name, unless the consumer merely re-exports a provider object under it."""
        if dotted in self.reexports:
            return Value(root=Root("symbol", self.reexports[dotted]))
        return Value(consumer=dotted)

    def _import(self, module: str, name: str | None, alias: ast.alias, env, guard, emit):
        if not emit or not self._is_provider(module):
            return
        self.imports.append(ImportUse(module=module, name=name, site=site_of(alias), guarded=guard))

    # -------------------------------------------------------- expressions
    def _expr(self, node, env, cls, function, emit, in_chain: bool = False):
        if node is None:
            return
        if isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
            if not in_chain and emit:
                value = self._value(node, env, cls, fresh=True)
                if value is not None and value.root is not None and any(s.check for s in value.steps) and not self._is_narrowed(value, node):
                    self.uses.append(Use(value.root, value.steps, site_of(node), function, _short(ast.unparse(node))))
            if isinstance(node, ast.Call):
                if emit:
                    self._call_facts(node, env, cls, function)
                self._expr(node.func, env, cls, function, emit, in_chain=True)
                for a in node.args:
                    self._expr(a.value if isinstance(a, ast.Starred) else a, env, cls, function, emit)
                for k in node.keywords:
                    self._expr(k.value, env, cls, function, emit)
            elif isinstance(node, ast.Attribute):
                self._expr(node.value, env, cls, function, emit, in_chain=True)
            else:
                self._expr(node.value, env, cls, function, emit, in_chain=True)
                self._expr(node.slice, env, cls, function, emit)
            return
        if isinstance(node, ast.Await):
            self._expr(node.value, env, cls, function, emit, in_chain)
            return
        if isinstance(node, ast.IfExp):
            self._expr(node.test, env, cls, function, emit)
            depth = self._narrow(node.test, env, cls)
            self._expr(node.body, env, cls, function, emit)
            self._expr(node.orelse, env, cls, function, emit)
            del self._narrowed[depth:]
            return
        if isinstance(node, ast.BoolOp):
            depth = len(self._narrowed)
            for operand in node.values:  # `hasattr(x, "a") and x.a`: later operands are guarded
                self._expr(operand, env, cls, function, emit)
                self._narrow(operand, env, cls)
            del self._narrowed[depth:]
            return
        if isinstance(node, ast.Lambda):
            inner = dict(env)
            for a in node.args.args:
                inner[a.arg] = None
            self._expr(node.body, inner, cls, function, emit)
            return
        if isinstance(node, ast.NamedExpr):
            self._expr(node.value, env, cls, function, emit)
            _bind(env, node.target.id, self._value(node.value, env, cls))
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = dict(env)
            for gen in node.generators:
                self._expr(gen.iter, inner, cls, function, emit)
                self._forget_targets(gen.target, inner)
                for cond in gen.ifs:
                    self._expr(cond, inner, cls, function, emit)
            for part in ("elt", "key", "value"):
                if hasattr(node, part):
                    self._expr(getattr(node, part), inner, cls, function, emit)
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self._expr(child, env, cls, function, emit)
            elif isinstance(child, ast.keyword):
                self._expr(child.value, env, cls, function, emit)

    def _call_facts(self, node: ast.Call, env, cls, function):
        for kw in node.keywords:
            if kw.arg in self.options.injection_keywords:
                target = kw.value.value if isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str) else None
                self.injections.append(Injection(kw.arg, target, site_of(kw.value)))
        if isinstance(node.func, ast.Attribute) and node.func.attr in self.rpc:
            index, keyword = self.rpc[node.func.attr]
            name_node = None
            if index is not None and len(node.args) > index and not any(isinstance(a, ast.Starred) for a in node.args[: index + 1]):
                name_node = node.args[index]
            for kw in node.keywords:
                if keyword and kw.arg == keyword:
                    name_node = kw.value
            if name_node is not None:
                name = name_node.value if isinstance(name_node, ast.Constant) and isinstance(name_node.value, str) else None
                self.rpc_calls.append(RpcCall(node.func.attr, name, site_of(node), function))
        if _dotted(node.func) in ("types.MethodType", "MethodType") and len(node.args) == 2:
            func_value = self._value(node.args[0], env, cls)
            if func_value is not None and func_value.consumer:
                target = self._value(node.args[1], env, cls)
                chain = (target.root, target.steps) if target is not None and target.root is not None else None
                self.method_bindings.append(MethodBinding(func_value.consumer, chain, site_of(node)))

    def _value(self, node, env, cls, fresh: bool = False) -> Value | None:
        """The provider chain an expression denotes. `fresh` marks its own steps for checking."""
        if isinstance(node, ast.Name):
            found = env.get(node.id, self.module_env.get(node.id))
            return found if isinstance(found, Value) else None
        if isinstance(node, ast.Attribute):
            if cls is not None and _is_self(node.value, env):
                held = cls.attr_values.get(node.attr)
                if isinstance(held, Value):
                    return held
                if node.attr in cls.own_members or held is _FORGOTTEN:
                    return None
            base = self._value(node.value, env, cls, fresh)
            if base is None:
                return None
            if base.root is None:
                return self._consumer_value(f"{base.consumer}.{node.attr}") if base.consumer else None
            return Value(base.root, base.steps + (Step("attr", name=node.attr, check=fresh),))
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id == "super" and cls is not None:
                return Value(root=Root("super", cls.dotted))
            if isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) == 3:
                return None  # getattr with a default never raises
            if isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) == 2:
                # getattr(obj, "name") is obj.name; a computed name cannot be judged.
                base = self._value(node.args[0], env, cls, fresh)
                if base is None or base.root is None:
                    return None
                name = node.args[1]
                if isinstance(name, ast.Constant) and isinstance(name.value, str):
                    return Value(base.root, base.steps + (Step("attr", name=name.value, check=fresh),))
                return Value(base.root, base.steps + (Step("dynamic", check=fresh),))
            base = self._value(node.func, env, cls, fresh)
            if base is None or base.root is None:
                return None
            receiver = _short(ast.unparse(node.func.value)) if isinstance(node.func, ast.Attribute) else None
            return Value(base.root, base.steps + (Step("call", call=_shape(node), check=fresh, receiver=receiver),))
        if isinstance(node, ast.Subscript):
            base = self._value(node.value, env, cls, fresh)
            if base is None or base.root is None:
                return None
            return Value(base.root, base.steps + (Step("subscript", check=fresh),))
        if isinstance(node, ast.Await):
            return self._value(node.value, env, cls, fresh)
        return None

    def _annotation_value(self, annotation, env) -> Value | None:
        """`x: Scheduler`, `x: Scheduler | None`, `x: Optional[Scheduler]`, `x: "Scheduler"` -> an instance."""
        if annotation is None:
            return None
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = ast.parse(annotation.value, mode="eval").body
            except SyntaxError:
                return None
        members = _union_members(annotation)
        if len(members) != 1:
            return None
        value = self._value(members[0], env, None)
        if value is None or value.root is None or any(s.kind != "attr" for s in value.steps):
            return None
        steps = tuple(replace(s, check=False) for s in value.steps)
        return Value(value.root, steps + (Step("instance", check=False),))


def _bind(env: dict, name: str, value) -> None:
    """Flow-insensitive binding: a second, different provider value makes the name unknown."""
    if value is not None and isinstance(value, Value) and value.root is not None:
        value = Value(value.root, tuple(replace(s, check=False) for s in value.steps), value.consumer)
    env[name] = value


def _is_self(node, env) -> bool:
    if not isinstance(node, ast.Name):
        return False
    value = env.get(node.id)
    return isinstance(value, Value) and value.root is not None and value.root.kind == "self" and not value.steps


def _shape(node: ast.Call) -> CallShape:
    args: list[Arg] = []
    for a in node.args:
        args.append(Arg("star" if isinstance(a, ast.Starred) else "positional", None, site_of(a)))
    for k in node.keywords:
        args.append(Arg("starstar" if k.arg is None else "keyword", k.arg, site_of(k)))
    return CallShape(tuple(args))


def _own_members(node: ast.ClassDef) -> set[str]:
    own: set[str] = set()
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            own.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            own |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            own.add(stmt.target.id)
    for sub in ast.walk(node):
        targets = []
        if isinstance(sub, ast.Assign):
            targets = sub.targets
        elif isinstance(sub, (ast.AnnAssign, ast.AugAssign)):
            targets = [sub.target]
        for t in targets:
            for leaf in ast.walk(t):
                if isinstance(leaf, ast.Attribute) and isinstance(leaf.value, ast.Name) and leaf.value.id in ("self", "cls"):
                    own.add(leaf.attr)
    return own


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


def _is_type_checking(test) -> bool:
    name = _dotted(test)
    return bool(name) and name.rsplit(".", 1)[-1] == "TYPE_CHECKING"


def _dotted(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


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


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def module_imports(tree: ast.Module, module: str, is_package: bool) -> dict[str, str]:
    """Module-level names bound by imports: local dotted name -> imported dotted path (absolute)."""
    package = module if is_package else module.rpartition(".")[0]
    out: dict[str, str] = {}

    def absolute(name: str | None, level: int) -> str:
        if level == 0:
            return name or ""
        parts = package.split(".") if package else []
        if level > 1:
            parts = parts[: len(parts) - (level - 1)]
        return ".".join(parts + ([name] if name else []))

    def walk(stmts):
        for stmt in stmts:
            if isinstance(stmt, ast.ImportFrom):
                base = absolute(stmt.module, stmt.level)
                for alias in stmt.names:
                    if alias.name != "*":
                        out[f"{module}.{alias.asname or alias.name}"] = f"{base}.{alias.name}"
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        out[f"{module}.{alias.asname}"] = alias.name
            elif isinstance(stmt, ast.If) and not _is_type_checking(stmt.test):
                walk(stmt.body)
                walk(stmt.orelse)
            elif isinstance(stmt, ast.Try):
                walk(stmt.body)

    walk(tree.body)
    return out
