"""The provider's server command line, read statically from one release (a `[[launch]]` rule
says where): its flags, the config classes its JSON flags take, and names it registers.

- `read_cli`: the flags of the first parser function the rule names that the release
  defines. Its body, and every provider function it hands the parser to (`X.add_cli_args(parser)`,
  `super()...`), are read with `ast`: each `.add_argument("--flag", "-f", ...)` call's option
  strings; `action=BooleanOptionalAction` adds `--no-flag`; `**kwargs[field]` where
  `kwargs = <field_kwargs>(SomeConfig)` ties the flag to that config field (a bool field is
  negatable, a config-dataclass field takes that class as JSON); and the loop form
  `for key, value in <field_kwargs>(cls).items(): add_argument(f"--{key.replace('_', '-')}", ...)`
  makes one flag per field of the class the method was called on. An option string built any
  other way, or a parser handed to code the index cannot read, makes the table incomplete
  (`CliSpec.unread` says where): an unknown flag is then `cannot-judge`, not an error.
- `config_shape`: a config class's fields as the JSON keys it accepts (the dataclass shapes the
  index synthesizes `__init__` from), each with the config class it nests, the strings a
  `Literal[...]` annotation allows (aliases followed), and whether pydantic skips validating it.
- `registered_names`: the first arguments of `Factory.call("Name", "module", "Class")` calls in
  a module (a `[[launch_registry]]` rule).

Every answer is memoised in the index as a plain value, so the index cache keeps it and a warm
scan reads nothing; nothing here runs unless a launch line was found.
"""

from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from apiaudit.cache import codec
from apiaudit.infra.astutil import dotted_text
from apiaudit.infra.frozen import record
from apiaudit.provider.records import Extra, Found, ParamKind, Resolution, SymbolKind

if TYPE_CHECKING:
    from apiaudit.provider.index import ProviderIndex
    from apiaudit.recipes.records import LaunchRegistryRule, LaunchRule

_BUILTIN_BOOL = "bool"
_OPEN_TYPES = frozenset({"str", "Any", "object", "dict", "list", "int", "float", "tuple", "set"})
_TYPING = ("typing.", "typing_extensions.")
_MAX_DEPTH = 12  # parser functions followed, aliases expanded


@record
class FlagSpec:
    """One argument of the parser: its option strings and what its value is."""

    options: tuple[str, ...]
    negatable: bool = False  # BooleanOptionalAction: `--no-x` too
    config: str | None = None  # the config class its JSON value builds
    location: str | None = None  # "pkg/mod.py:12", the add_argument call


@record
class CliSpec:
    """A release's server flags. `unread`: why the table may lack flags (each names a place);
    `hooks`: where out-of-tree plugins may add flags (the rule's `plugin_hooks`)."""

    parser: str | None
    flags: tuple[FlagSpec, ...] = ()
    unread: tuple[str, ...] = ()
    hooks: tuple[str, ...] = ()
    location: str | None = None

    @property
    def complete(self) -> bool:
        return self.parser is not None and not self.unread

    def options(self) -> dict[str, FlagSpec]:
        """Every option string (with `--no-` forms) -> its flag."""
        out: dict[str, FlagSpec] = {"-h": _HELP, "--help": _HELP}
        for flag in self.flags:
            for option in flag.options:
                out.setdefault(option, flag)
                if flag.negatable and option.startswith("--"):
                    out.setdefault(f"--no-{option[2:]}", flag)
        return out


_HELP = FlagSpec(("-h", "--help"))  # argparse adds it to every parser


@record
class ConfigField:
    """One key a config class accepts."""

    name: str
    nested: str | None = None  # a config class its value is built into (keys checked again)
    choices: tuple[str, ...] | None = None  # JSON texts of the values a Literal annotation allows
    boolean: bool = False
    raw: bool = False  # pydantic's SkipValidation: the value is taken as it is


@record
class ConfigShape:
    """What keys a config class accepts. `open`: why any key is accepted (extra="allow"/"ignore",
    `**kwargs`); `unknown`: why its keys cannot be read."""

    path: str
    fields: tuple[ConfigField, ...] = ()
    location: str | None = None
    open: str | None = None
    unknown: str | None = None

    def field(self, name: str) -> ConfigField | None:
        return next((f for f in self.fields if f.name == name), None)


@record
class Registration:
    name: str
    module: str | None
    class_name: str | None
    location: str

    @property
    def class_path(self) -> str | None:
        return f"{self.module}.{self.class_name}" if self.module and self.class_name else None


@record
class RegisteredNames:
    """The names `module` registers with `call`; `unknown`: why they cannot be read."""

    module: str
    names: tuple[Registration, ...] = ()
    unknown: str | None = None

    def get(self, name: str) -> Registration | None:
        return next((r for r in self.names if r.name == name), None)


# ----------------------------------------------------------------------- reading
def read_cli(index: ProviderIndex, rule: LaunchRule) -> CliSpec:
    """The release's server flags, as `rule` says where to read them (memoised in the index)."""
    key = ("launch-cli", rule.parsers, rule.field_kwargs, rule.args_classes, rule.plugin_hooks, rule.json_flags)
    return index._cached(key, lambda: _CliReader(index, rule).read())


def config_shape(index: ProviderIndex, class_path: str) -> ConfigShape:
    """The JSON keys config class `class_path` accepts (memoised in the index)."""
    return index._cached(("launch-config", class_path), lambda: _read_shape(index, class_path))


def registered_names(index: ProviderIndex, rule: LaunchRegistryRule) -> RegisteredNames:
    """The names `rule.module` registers (memoised in the index)."""
    key = ("launch-registry", rule.module, rule.call, rule.name_arg, rule.module_arg, rule.class_arg)
    return index._cached(key, lambda: _read_registrations(index, rule))


def _module_syntax(index: ProviderIndex, module: str) -> tuple[ast.Module, str] | None:
    """A provider module's tree and its path relative to the release (recorded as read)."""
    path: Path | None = index.loader.module_file(module)
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    relative = index.loader.relative(path)
    index.loader.touched[relative] = hashlib.sha256(data).hexdigest()  # a changed file invalidates the cache
    try:
        return ast.parse(data), relative
    except (SyntaxError, ValueError, RecursionError):
        return None


def _last_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _definition(tree: ast.Module, qualname: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The function `qualname` (``Class.method``) defines in a module, also under `if`/`try`."""
    body: list[ast.stmt] = tree.body
    parts = qualname.split(".")
    found: ast.AST | None = None
    for i, part in enumerate(parts):
        found = next((n for n in _statements(body) if getattr(n, "name", None) == part), None)
        if found is None:
            return None
        if i < len(parts) - 1:
            if not isinstance(found, ast.ClassDef):
                return None
            body = found.body
    return found if isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """A body's statements, with those of its `if`/`try` blocks (the last definition wins)."""
    for stmt in reversed(body):
        if isinstance(stmt, ast.If):
            yield from _statements(stmt.body + stmt.orelse)
        elif isinstance(stmt, ast.Try):
            yield from _statements(stmt.body + [s for h in stmt.handlers for s in h.body] + stmt.orelse + stmt.finalbody)
        else:
            yield stmt


@dataclass
class _Scope:
    """What one parser function's body binds, as far as its flags need."""

    module: str
    bound: str | None  # the class the method was called on (`cls`)
    defining: str | None  # the class that defines the method
    parsers: set[str]
    kwargs: dict[str, str] = field(default_factory=dict)  # name -> config class (`x = get_kwargs(C)`)
    fields: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (class, field)
    loops: dict[str, str] = field(default_factory=dict)  # loop key name -> class
    values: dict[str, str] = field(default_factory=dict)  # loop value name -> class


class _CliReader:
    def __init__(self, index: ProviderIndex, rule: LaunchRule) -> None:
        self.index = index
        self.rule = rule
        self.kwargs_function = rule.field_kwargs.rsplit(".", 1)[-1] if rule.field_kwargs else None
        self.flags: list[FlagSpec] = []
        self.unread: list[str] = []
        self.hooks: list[str] = []
        self.seen: set[tuple[str, str | None]] = set()
        self.syntax: dict[str, tuple[ast.Module, str] | None] = {}

    def read(self) -> CliSpec:
        for parser in self.rule.parsers:
            if not self.index.module_exists(parser.rsplit(".", 1)[0]):
                continue  # asked first: resolving a path whose module is gone looks for where it went
            resolved = self.index.resolve(parser)
            if isinstance(resolved, Found) and resolved.symbol.kind is SymbolKind.FUNCTION:
                self.walk(resolved.symbol.path, None, 0)
                flags = tuple(self.with_configs(self.flags))
                return CliSpec(parser, flags, tuple(dict.fromkeys(self.unread)), tuple(dict.fromkeys(self.hooks)), resolved.symbol.location)
        return CliSpec(None, unread=(f"the release defines none of the parser functions the rules name ({', '.join(self.rule.parsers)})",))

    # ------------------------------------------------------------- functions
    def walk(self, function: str, bound: str | None, depth: int) -> None:
        if (function, bound) in self.seen or depth > _MAX_DEPTH:
            return
        self.seen.add((function, bound))
        obj = self.index.object_at(function)
        module = getattr(getattr(obj, "module", None), "path", None)
        if module is None:
            self.unread.append(f"{function} cannot be read")
            return
        syntax = self.module(module)
        node = _definition(syntax[0], function[len(module) + 1 :]) if syntax is not None else None
        if syntax is None or node is None:
            self.unread.append(f"{function} cannot be read")
            return
        defining = function.rsplit(".", 1)[0] if function.rsplit(".", 1)[0] != module else None
        scope = _Scope(module, bound or defining, defining, _parser_parameters(node))
        self.body(node, scope, syntax[1], depth)

    def module(self, module: str) -> tuple[ast.Module, str] | None:
        if module not in self.syntax:
            self.syntax[module] = _module_syntax(self.index, module)
        return self.syntax[module]

    def body(self, function: ast.FunctionDef | ast.AsyncFunctionDef, scope: _Scope, relative: str, depth: int) -> None:
        for node in _walk_in_order(function):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                self.assigned(node.targets[0].id, node.value, scope)
            elif isinstance(node, ast.For):
                self.loop(node, scope)
            elif isinstance(node, ast.Call):
                if _last_name(node.func) == "add_argument":
                    self.argument(node, scope, relative)
                elif self.passes_parser(node, scope):
                    self.follow(node, scope, relative, depth)

    def assigned(self, name: str, value: ast.expr, scope: _Scope) -> None:
        if isinstance(value, ast.Call) and value.args:
            target = self.kwargs_class(value, scope)
            if target is not None:
                scope.kwargs[name] = target
                return
            passed = [a.id for a in value.args if isinstance(a, ast.Name) and a.id in scope.kwargs]
            if passed:  # `kwargs = cls._customize(kwargs)`: the same fields
                scope.kwargs[name] = scope.kwargs[passed[0]]
                return
            if any(isinstance(a, ast.Name) and a.id in scope.parsers for a in value.args):
                scope.parsers.add(name)  # `parser = Other.add_cli_args(parser)`
        elif isinstance(value, ast.Subscript):
            ref = self.field_reference(value, scope)
            if ref is not None:
                scope.fields[name] = ref

    def kwargs_class(self, call: ast.Call, scope: _Scope) -> str | None:
        """`<field_kwargs>(C)`: the config class whose fields the result is keyed by."""
        if self.kwargs_function is None or _last_name(call.func) != self.kwargs_function or len(call.args) != 1:
            return None
        return self.class_named(call.args[0], scope)

    def class_named(self, node: ast.expr, scope: _Scope) -> str | None:
        dotted = dotted_text(node)
        if dotted is None:
            return None
        if dotted in ("cls", "self"):
            return scope.bound
        resolved = lookup(self.index, scope.module, dotted)
        if isinstance(resolved, Found) and resolved.symbol.kind is SymbolKind.CLASS:
            return resolved.symbol.path
        return None

    def field_reference(self, node: ast.expr, scope: _Scope) -> tuple[str, str] | None:
        """`kwargs["field"]` (or `<field_kwargs>(C)["field"]`): the config field a flag's keywords come from."""
        if not isinstance(node, ast.Subscript):
            return None
        key = node.slice
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        if isinstance(node.value, ast.Name) and node.value.id in scope.kwargs:
            return scope.kwargs[node.value.id], key.value
        if isinstance(node.value, ast.Call):
            owner = self.kwargs_class(node.value, scope)
            return (owner, key.value) if owner is not None else None
        return None

    def loop(self, node: ast.For, scope: _Scope) -> None:
        """`for key, value in kwargs.items():` over a config class's fields."""
        iterated = node.iter
        if isinstance(iterated, ast.Call) and isinstance(iterated.func, ast.Attribute) and iterated.func.attr in ("items", "keys"):
            iterated = iterated.func.value
        owner = scope.kwargs.get(iterated.id) if isinstance(iterated, ast.Name) else None
        if owner is None and isinstance(iterated, ast.Call):
            owner = self.kwargs_class(iterated, scope)
        if owner is None:
            return
        target = node.target
        names = target.elts if isinstance(target, ast.Tuple) else [target]
        if names and isinstance(names[0], ast.Name):
            scope.loops[names[0].id] = owner
        if len(names) > 1 and isinstance(names[1], ast.Name):
            scope.values[names[1].id] = owner

    # ---------------------------------------------------------- add_argument
    def argument(self, call: ast.Call, scope: _Scope, relative: str) -> None:
        where = f"{relative}:{call.lineno}"
        options: list[str] = []
        per_field: tuple[str, bool] | None = None  # (class, kebab) for the loop form
        for arg in call.args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                if arg.value.startswith("-"):
                    options.append(arg.value)
            elif isinstance(arg, ast.Starred):
                continue  # extra spellings of the same flag (`*extra_flags`)
            elif isinstance(arg, ast.JoinedStr) and (generated := _field_option(arg, scope)) is not None:
                per_field = generated
            else:
                self.unread.append(f"{where}: an add_argument call builds its option name at run time")
                return
        negatable, ref = False, None
        for keyword in call.keywords:
            if keyword.arg == "action":
                negatable = negatable or _last_name(keyword.value) == "BooleanOptionalAction"
            elif keyword.arg is None:
                ref = ref or self.keywords_reference(keyword.value, scope)
        if per_field is not None:
            self.field_flags(per_field[0], per_field[1], where)
            return
        if not options:
            return  # a positional argument (the model)
        config = None
        if ref is not None:
            shape = config_shape(self.index, ref[0]).field(ref[1])
            if shape is not None:
                negatable = negatable or (shape.boolean and shape.nested is None)
                config = shape.nested
        self.flags.append(FlagSpec(tuple(options), negatable, config, where))

    def keywords_reference(self, node: ast.expr, scope: _Scope) -> tuple[str, str] | None:
        """The config field `**node` spreads: `kwargs["f"]`, a name bound to one, or `{**kwargs["f"], ...}`."""
        if isinstance(node, ast.Name):
            return scope.fields.get(node.id)
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if key is None:
                    found = self.keywords_reference(value, scope)
                    if found is not None:
                        return found
            return None
        return self.field_reference(node, scope)

    def field_flags(self, owner: str, kebab: bool, where: str) -> None:
        shape = config_shape(self.index, owner)
        if shape.unknown is not None:
            self.unread.append(f"{where}: one flag per field of {owner}, whose fields cannot be read ({shape.unknown})")
            return
        for item in shape.fields:
            name = item.name.replace("_", "-") if kebab else item.name
            self.flags.append(FlagSpec((f"--{name}",), item.boolean and item.nested is None, item.nested, where))

    # -------------------------------------------------------- parser handed on
    def passes_parser(self, call: ast.Call, scope: _Scope) -> bool:
        values = [*call.args, *(k.value for k in call.keywords)]
        return any(isinstance(v, ast.Name) and v.id in scope.parsers for v in values)

    def follow(self, call: ast.Call, scope: _Scope, relative: str, depth: int) -> None:
        where = f"{relative}:{call.lineno}"
        name = _last_name(call.func)
        if name in self.rule.plugin_hooks:
            self.hooks.append(where)
            return
        target = self.callee(call.func, scope)
        if target is None:
            text = ast.unparse(call.func)
            self.unread.append(f"{where}: the parser is handed to {text}, which apiaudit cannot read")
            return
        function, bound = target
        self.walk(function, bound, depth + 1)

    def callee(self, func: ast.expr, scope: _Scope) -> tuple[str, str | None] | None:
        """The provider function a call reaches, and the class it is called on (for `cls`)."""
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Call)
            and _last_name(func.value.func) == "super"
            and scope.bound is not None
        ):
            return self.super_method(func.attr, scope)
        dotted = dotted_text(func)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        owner: str | None
        resolved: Resolution | None
        if head in ("cls", "self"):
            if scope.bound is None or not rest:
                return None
            owner = scope.bound
            resolved = self.index.resolve(f"{scope.bound}.{rest}")
        else:
            owner = self.class_named(ast.Name(head), scope) if rest else None
            resolved = lookup(self.index, scope.module, dotted)
        if not (isinstance(resolved, Found) and resolved.symbol.kind is SymbolKind.FUNCTION):
            return None
        return resolved.symbol.path, owner

    def super_method(self, name: str, scope: _Scope) -> tuple[str, str | None] | None:
        assert scope.bound is not None
        mro = list(self.index.mro_paths(scope.bound))
        start = mro.index(scope.defining) + 1 if scope.defining in mro else 1
        for klass in mro[start:]:
            if not isinstance(klass, str):
                return None
            resolved = self.index.resolve(f"{klass}.{name}")
            if isinstance(resolved, Found) and resolved.symbol.kind is SymbolKind.FUNCTION and resolved.symbol.path.startswith(klass + "."):
                return resolved.symbol.path, scope.bound
        return None

    # ---------------------------------------------------------- JSON configs
    def with_configs(self, flags: list[FlagSpec]) -> Iterator[FlagSpec]:
        """Each flag with the config class its JSON takes: from its own keywords, else from an
        args class's field of the same name, else from the rules."""
        by_rule = dict(self.rule.json_flags)
        for flag in flags:
            if flag.config is None:
                config = self.args_class_config(flag) or next((by_rule[o] for o in flag.options if o in by_rule), None)
                if config is not None:
                    flag = FlagSpec(flag.options, flag.negatable, config, flag.location)
            yield flag

    def args_class_config(self, flag: FlagSpec) -> str | None:
        long = next((o for o in flag.options if o.startswith("--")), None)
        if long is None:
            return None
        name = long[2:].replace("-", "_")
        for owner in self.rule.args_classes:
            shape = config_shape(self.index, owner)
            found = shape.field(name)
            if found is not None and found.nested is not None:
                return found.nested
        return None


def lookup(index: ProviderIndex, module: str, dotted: str) -> Resolution | None:
    """What a name written in `module` is (`Name`, `alias.Name`), through the module's own
    bindings (imports under `TYPE_CHECKING` too: annotations use them); None when the module
    binds no such name (nothing is searched for where it may have gone)."""
    scope = index.object_at(module)
    head, _, rest = dotted.partition(".")
    member = (getattr(scope, "members", None) or {}).get(head)
    if member is None:
        return None
    try:
        target = member.target_path if member.is_alias else member.path
    except Exception:  # noqa: BLE001 - a broken alias
        return None
    return index.resolve(f"{target}.{rest}" if rest else target)


def _parser_parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The parameter that receives the parser: the first one, after `self`/`cls` of a method."""
    params = [*node.args.posonlyargs, *node.args.args]
    decorators = {_last_name(d) for d in node.decorator_list}
    if params and (params[0].arg in ("self", "cls") or "classmethod" in decorators):
        params = params[1:]
    return {params[0].arg} if params else set()


def _walk_in_order(function: ast.AST) -> Iterator[ast.AST]:
    """Every node of a function body in source order, nested functions' bodies left out."""
    stack = list(reversed(list(ast.iter_child_nodes(function))))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _field_option(node: ast.JoinedStr, scope: _Scope) -> tuple[str, bool] | None:
    """`f"--{key.replace('_', '-')}"` (or `f"--{key}"`) with `key` looping over a class's fields."""
    parts = node.values
    if len(parts) != 2 or not (isinstance(parts[0], ast.Constant) and parts[0].value == "--"):
        return None
    hole = parts[1]
    if not isinstance(hole, ast.FormattedValue):
        return None
    value = hole.value
    kebab = False
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "replace"
        and [a.value for a in value.args if isinstance(a, ast.Constant)] == ["_", "-"]
    ):
        value, kebab = value.func.value, True
    if isinstance(value, ast.Name) and value.id in scope.loops:
        return scope.loops[value.id], kebab
    return None


# ---------------------------------------------------------------- config shapes
def _read_shape(index: ProviderIndex, class_path: str) -> ConfigShape:
    import griffe

    from apiaudit.provider import expressions as ex

    info = index.call(class_path, via="module")
    resolved = index.resolve(class_path)
    location = resolved.symbol.location if isinstance(resolved, Found) else None
    if info.unknown is not None or not info.signatures:
        return ConfigShape(class_path, location=location, unknown=info.unknown or "no signature")
    signature = info.signatures[0]
    opened = None
    if signature.extra is not Extra.FORBID:
        opened = f"{class_path} accepts any key (extra={signature.extra.value!r})"
    if any(p.kind is ParamKind.VAR_KEYWORD for p in signature.params):
        opened = f"{class_path} accepts any keyword (**kwargs)"
    declared: dict[str, tuple[str, str | None]] = {}  # field -> (module, annotation) where the MRO first declares it
    for klass in index.mro(class_path):
        if not isinstance(klass, griffe.Class):
            continue
        for name, member in klass.members.items():
            annotation = None if member.is_alias else getattr(member, "annotation", None)
            if name not in declared and annotation is not None:
                declared[name] = (klass.module.path, ex.text(annotation))
    fields = []
    for param in signature.params:
        if param.kind in (ParamKind.VAR_POSITIONAL, ParamKind.VAR_KEYWORD):
            continue
        module, annotation = declared.get(param.name, (class_path.rsplit(".", 1)[0], param.annotation))
        fields.append(_field(index, param.name, module, annotation))
    return ConfigShape(class_path, tuple(fields), location, opened)


def _field(index: ProviderIndex, name: str, module: str, annotation: str | None) -> ConfigField:
    if not annotation:
        return ConfigField(name)
    try:
        node = ast.parse(annotation, mode="eval").body
    except SyntaxError:
        return ConfigField(name)
    reader = _Annotation(index)
    members = reader.members(node, module, 0)
    boolean = any(m == ("type", _BUILTIN_BOOL) for m in members)
    raw = any(kind == "raw" for kind, _ in members)
    classes = [value for kind, value in members if kind == "class"]
    literals = [value for kind, value in members if kind == "literal"]
    nested = classes[0] if len(members) == 1 and classes and not raw else None
    choices = tuple(dict.fromkeys(literals)) if members and len(literals) == len(members) else None
    return ConfigField(name, nested, choices, boolean, raw)


class _Annotation:
    """An annotation's union members: ("literal", json text), ("class", config class path),
    ("raw", ...) for SkipValidation, ("type", name) for builtins and everything else."""

    def __init__(self, index: ProviderIndex) -> None:
        self.index = index

    def members(self, node: ast.expr, module: str, depth: int) -> list[tuple[str, str]]:
        if depth > _MAX_DEPTH:
            return [("type", "?")]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self.members(node.left, module, depth + 1) + self.members(node.right, module, depth + 1)
        if isinstance(node, ast.Constant):
            if node.value is None:
                return []
            if isinstance(node.value, str):  # a forward reference
                try:
                    return self.members(ast.parse(node.value, mode="eval").body, module, depth + 1)
                except SyntaxError:
                    return [("type", "?")]
            return [("type", "?")]
        if isinstance(node, ast.Subscript):
            head = self.name(node.value, module)
            items = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
            if head in ("Optional", "Union"):
                return [m for item in items for m in self.members(item, module, depth + 1)]
            if head == "Annotated":
                return self.members(items[0], module, depth + 1)
            if head == "SkipValidation":
                return [("raw", "SkipValidation")]
            if head == "Literal":
                return [m for item in items for m in self.literal(item, module, depth + 1)]
            return [("type", head or "?")]
        dotted = dotted_text(node)
        if dotted is None:
            return [("type", "?")]
        if dotted in ("None", "NoneType"):
            return []
        if dotted == _BUILTIN_BOOL or dotted in _OPEN_TYPES:
            return [("type", dotted)]
        resolved = lookup(self.index, module, dotted)
        if not isinstance(resolved, Found):
            return [("type", dotted)]
        symbol = resolved.symbol
        if symbol.kind is SymbolKind.CLASS:
            info = self.index.call(symbol.path, via="module")
            shaped = bool(info.signatures) and "fields" in info.signatures[0].origin
            return [("class", symbol.path)] if shaped else [("type", symbol.path)]
        if symbol.kind is SymbolKind.ATTRIBUTE:
            alias = self.alias(symbol.path)
            if alias is not None:
                return self.members(alias[0], alias[1], depth + 1)
        return [("type", symbol.path)]

    def literal(self, node: ast.expr, module: str, depth: int) -> list[tuple[str, str]]:
        """One argument of `Literal[...]`: a value, or an alias of another Literal."""
        if isinstance(node, ast.Constant):
            return [("literal", json_text(node.value))]
        return self.members(node, module, depth)

    def name(self, node: ast.expr, module: str) -> str | None:
        """What a subscripted name is: typing's Optional/Union/Literal/Annotated, pydantic's
        SkipValidation, or its own dotted text."""
        dotted = dotted_text(node)
        if dotted is None:
            return None
        last = dotted.rsplit(".", 1)[-1]
        if last in ("Optional", "Union", "Literal", "Annotated", "SkipValidation"):
            resolved = lookup(self.index, module, dotted)
            path = resolved.symbol.path if isinstance(resolved, Found) else dotted
            if path.startswith(_TYPING) or path == last or last == "SkipValidation":
                return last
        return dotted

    def alias(self, path: str) -> tuple[ast.expr, str] | None:
        """A module attribute's assigned value, parsed (`Method = Literal[...]`), and its module."""
        obj = self.index.object_at(path)
        value = getattr(obj, "value", None)
        if value is None:
            return None
        try:
            node = ast.parse(str(value), mode="eval").body
        except SyntaxError:
            return None
        return node, path.rsplit(".", 1)[0]


def json_text(value: object) -> str:
    """A value as JSON text (how `ConfigField.choices` are written), or its repr."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


# ---------------------------------------------------------------- registrations
def _read_registrations(index: ProviderIndex, rule: LaunchRegistryRule) -> RegisteredNames:
    syntax = _module_syntax(index, rule.module)
    if syntax is None:
        return RegisteredNames(rule.module, unknown=f"{rule.module} cannot be read in this release")
    tree, relative = syntax
    found: list[Registration] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _last_name(node.func) == rule.call):
            continue
        name = _argument(node, rule.name_arg)
        if name is None:
            continue
        module = _argument(node, rule.module_arg) if rule.module_arg is not None else None
        class_name = _argument(node, rule.class_arg) if rule.class_arg is not None else None
        found.append(Registration(name, module, class_name, f"{relative}:{node.lineno}"))
    found.sort(key=lambda r: int(r.location.rsplit(":", 1)[1]))
    return RegisteredNames(rule.module, tuple(found))


def _argument(call: ast.Call, position: int) -> str | None:
    if position < len(call.args):
        arg = call.args[position]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return arg.value
    return None


codec.register(FlagSpec, CliSpec, ConfigField, ConfigShape, Registration, RegisteredNames)

__all__ = [
    "CliSpec",
    "ConfigField",
    "ConfigShape",
    "FlagSpec",
    "RegisteredNames",
    "Registration",
    "config_shape",
    "read_cli",
    "registered_names",
]
