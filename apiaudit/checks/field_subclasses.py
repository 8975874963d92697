"""The constructor of a consumer class deriving from a provider class whose `__init__` is
synthesized from fields (a msgspec Struct, a dataclass, a pydantic model...), when no class on
the way defines one: the provider's fields, then those the consumer's classes add, as the
framework builds it. `OmniRequest(eos_token_id=...)` of `class OmniRequest(EngineCoreRequest)`
fails when the provider's Struct loses the field, as `EngineCoreRequest(eos_token_id=...)` does.

Judged only when every class in the chain is known: a base from neither side, several bases, a
metaclass or class keyword the framework does not read, an `__init_subclass__` or a decorator of
the consumer's make it `cannot-judge`, never an error.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from apiaudit.checks.context import CheckContext
from apiaudit.checks.flows import consumer_tree
from apiaudit.consumer.records import ClassFacts
from apiaudit.infra.frozen import record
from apiaudit.provider.records import CallInfo, FieldShape, Found, Param, ParamKind, Signature, SymbolKind

# Class keywords a fields framework reads itself (msgspec's Struct options, pydantic's `extra`).
_FRAMEWORK_KEYWORDS = frozenset(
    {"kw_only", "omit_defaults", "array_like", "gc", "frozen", "eq", "order", "forbid_unknown_fields", "tag", "tag_field",
     "rename", "repr_omit_defaults", "weakref", "dict", "cache_hash", "extra"}
)  # fmt: skip
# Callables that declare a field with options (`msgspec.field(default=...)`, pydantic's `Field(...)`).
_FIELD_SPECIFIERS = frozenset({"field", "Field", "ib", "attrib"})


@record
class SubclassConstructor:
    """What a call of a consumer class is judged against: `info` (the provider class `callee`,
    and the one signature the consumer classes make of its fields; no signature: `unknown` says
    why it cannot be told)."""

    info: CallInfo

    @property
    def provider(self) -> str:
        return self.info.callee.path


def subclass_constructor(ctx: CheckContext, dotted: str) -> SubclassConstructor | None:
    """The constructor of consumer class `dotted`; None when it is not one this module judges (not
    a consumer class, no provider base, a class on the way defines `__init__`/`__new__`, or the
    provider class's `__init__` is not synthesized from fields)."""
    chain: list[tuple[ClassFacts, ast.ClassDef | None]] = []
    current: str | None = dotted
    provider: str | None = None
    unknown: str | None = None
    while current is not None:
        facts = ctx.classes.get(current)
        if facts is None or any(c[0].dotted == current for c in chain):
            return None
        node = _class_node(ctx, facts)
        chain.append((facts, node))
        if {"__init__", "__new__"} & facts.own_members:
            return None  # its own constructor: judged where it is defined
        bases = (*facts.consumer_bases, *facts.provider_bases)
        if facts.unread_bases or len(bases) != 1 or node is None:
            unknown = unknown or f"{_short(current)} has bases the engine does not follow one by one"
        if facts.provider_bases:
            provider = facts.provider_bases[0]
            current = None
        elif facts.consumer_bases and facts.consumer_bases[0] in ctx.classes:
            current = facts.consumer_bases[0]
        else:
            return None  # no provider class at the root of its first base line
        unknown = unknown or _unread(facts, node)
    assert provider is not None
    res = ctx.index.resolve(provider)
    if not isinstance(res, Found) or res.symbol.kind is not SymbolKind.CLASS:
        return None
    shape = ctx.index.field_shape(res.symbol.path)
    if shape is None:
        return None
    info = ctx.index.call(res.symbol.path, via="module")
    if info.unknown or len(info.signatures) != 1 or info.fallback is not None:
        return SubclassConstructor(replace(info, signatures=(), fallback=None, unknown=info.unknown or "the provider class's constructor is not one signature"))
    if unknown is not None:
        return SubclassConstructor(replace(info, signatures=(), unknown=unknown))
    base = info.signatures[0]
    if not shape.subclass_fields:
        return SubclassConstructor(info)  # undecorated subclasses add no field
    fields = {p.name: p for p in base.params}
    for facts, node in reversed(chain):
        assert node is not None
        fields.update(_own_fields(node, shape))  # a redefined field keeps its place
    params = list(fields.values())
    params = [p for p in params if p.kind is not ParamKind.KEYWORD_ONLY] + [p for p in params if p.kind is ParamKind.KEYWORD_ONLY]
    origin = f"{base.origin}, with {_short(dotted)}'s"
    return SubclassConstructor(replace(info, signatures=(Signature(tuple(params), origin=origin, extra=base.extra, location=base.location),)))


def _unread(facts: ClassFacts, node: ast.ClassDef | None) -> str | None:
    """Why the consumer class may change how it is built: a decorator, a metaclass or a class
    keyword the framework does not read, an `__init_subclass__`."""
    name = _short(facts.dotted)
    if node is None:
        return None
    if node.decorator_list:
        return f"{name} is decorated (@{ast.unparse(node.decorator_list[0])}), which may change how it is built"
    for keyword in node.keywords:
        if keyword.arg not in _FRAMEWORK_KEYWORDS:
            return f"{name}'s class keyword {keyword.arg or '**'} may change how it is built"
    if "__init_subclass__" in facts.own_members:
        return f"{name} defines __init_subclass__"
    return None


def _own_fields(node: ast.ClassDef, shape: FieldShape) -> dict[str, Param]:
    """The fields a consumer class's body annotates, as the framework makes them parameters."""
    kw_only = shape.all_keyword_only or any(
        k.arg == "kw_only" and isinstance(k.value, ast.Constant) and k.value.value is True for k in node.keywords
    )
    out: dict[str, Param] = {}
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        annotation = ast.unparse(stmt.annotation)
        head = annotation.partition("[")[0].rpartition(".")[2]
        if head == "ClassVar":
            continue
        if head == "KW_ONLY":
            kw_only = True
            continue
        if shape.all_keyword_only and stmt.target.id.startswith("_"):
            continue  # pydantic: a private attribute, not a field
        has_default, field_kw_only = _default(stmt.value)
        kind = ParamKind.KEYWORD_ONLY if (kw_only if field_kw_only is None else field_kw_only) else ParamKind.POSITIONAL_OR_KEYWORD
        default = ast.unparse(stmt.value) if has_default and stmt.value is not None else None
        out[stmt.target.id] = Param(stmt.target.id, kind, has_default, annotation, default)
    return out


def _default(value: ast.expr | None) -> tuple[bool, bool | None]:
    """(whether the field has a default, its own kw_only when a field specifier says)."""
    if value is None:
        return False, None
    func = value.func if isinstance(value, ast.Call) else None
    leaf = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if not isinstance(value, ast.Call) or leaf not in _FIELD_SPECIFIERS:
        return True, None
    keywords = {k.arg: k.value for k in value.keywords if k.arg}
    kw_only = keywords.get("kw_only")
    own = kw_only.value if isinstance(kw_only, ast.Constant) and isinstance(kw_only.value, bool) else None
    given = keywords.get("default") or (value.args[0] if value.args else None)
    if given is not None and not (isinstance(given, ast.Constant) and given.value is Ellipsis):
        return True, own
    return ("default_factory" in keywords or "factory" in keywords), own


def _class_node(ctx: CheckContext, facts: ClassFacts) -> ast.ClassDef | None:
    name = _short(facts.dotted)
    for file in ctx.files:
        if not facts.dotted.startswith(f"{file.module}."):
            continue
        tree = consumer_tree(ctx, file)
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.ClassDef) and node.name == name and node.lineno == facts.site.line:
                return node
    return None


def _short(dotted: str) -> str:
    return dotted.rpartition(".")[2]
