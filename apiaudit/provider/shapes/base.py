"""Dataclass-like class shapes: classes whose `__init__` is synthesized from fields.

Each plug-in in this package recognises one family (stdlib dataclasses, PEP 681
`dataclass_transform`, pydantic models, NamedTuple) and says how its fields become
parameters; `synthesize` turns that into a Signature the binder understands.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Callable, Protocol

import griffe

from apiaudit.infra.frozen import record
from apiaudit.provider import expressions as ex
from apiaudit.provider.extension import facts
from apiaudit.provider.records import Extra, Param, ParamKind, Signature

KNOWN_FIELD_SPECIFIERS = frozenset(
    {
        "dataclasses.field",
        "pydantic.Field",
        "pydantic.fields.Field",
        "attr.ib",
        "attr.attrib",
        "attrs.field",
        "msgspec.field",
    }
)


class ClassContext(Protocol):
    """What a shape plug-in may ask the index about a class."""

    cls: griffe.Class
    mro: list  # griffe.Class for provider classes, str dotted path for external ones, UnresolvedBase for the rest

    def resolve_object(self, dotted: str) -> Any: ...

    def mro_of(self, class_path: str) -> list: ...


@record
class DataShape:
    kind: str  # "dataclass" | "dataclass_transform" | "pydantic-model" | "pydantic-dataclass" | "namedtuple"
    contributes: Callable[[griffe.Class], bool]
    kw_only_default: bool = False
    extra: Extra = Extra.FORBID
    field_specifiers: frozenset[str] = field(default=KNOWN_FIELD_SPECIFIERS)
    all_keyword_only: bool = False
    skip_private: bool = False
    skip_names: frozenset[str] = frozenset()
    origin: str = "dataclass fields"
    # A subclass's annotations are fields without the subclass saying so (msgspec.Struct, pydantic
    # models, a dataclass_transform base); else a subclass adds none unless decorated again.
    subclass_fields: bool = False


def decorator_paths(cls: griffe.Class) -> list[tuple[str | None, Any]]:
    return [(ex.canonical(d.value), d.value) for d in cls.decorators]


def _is(expr_path: str | None, *names: str) -> bool:
    return expr_path in names


def synthesize(shape: DataShape, ctx: ClassContext, location: str | None) -> Signature:
    """Fields of every contributing class along the MRO, base first, as parameters."""
    fields_in_order: dict[str, Param] = {}
    for klass in reversed([k for k in ctx.mro if isinstance(k, griffe.Class)]):
        if not shape.contributes(klass):
            continue
        kw_only = shape.kw_only_default or _decorator_kw_only(klass) or _class_keyword_kw_only(klass)
        for name in facts(klass).get("body_fields", []):
            member = klass.members.get(name)
            if member is None or not isinstance(member, griffe.Attribute):
                continue
            if "instance-attribute" not in member.labels:
                continue  # Griffe strips ClassVar[...] and marks it class-only
            annotation = member.annotation
            head = (ex.canonical(annotation) or str(annotation) or "").rsplit(".", 1)[-1]
            if head == "ClassVar":
                continue
            if head == "KW_ONLY":
                kw_only = True
                continue
            if shape.skip_private and name.startswith("_"):
                continue
            if name in shape.skip_names:
                continue
            param = _field_param(name, member, kw_only or shape.all_keyword_only, shape)
            fields_in_order.pop(name, None)
            if param is not None:
                fields_in_order[name] = param
    params = list(fields_in_order.values())
    # Python puts keyword-only fields after the positional ones, whatever their order.
    params = [p for p in params if p.kind is not ParamKind.KEYWORD_ONLY] + [
        p for p in params if p.kind is ParamKind.KEYWORD_ONLY
    ]
    return Signature(params=tuple(params), origin=shape.origin, extra=shape.extra, location=location)


def _decorator_kw_only(klass: griffe.Class) -> bool:
    for path, value in decorator_paths(klass):
        if isinstance(value, griffe.ExprCall) and ex.literal_bool(ex.keyword(value, "kw_only")):
            return True
    return False


def _class_keyword_kw_only(klass: griffe.Class) -> bool:
    """`class C(Base, kw_only=True)`: a class keyword (PEP 681 bases and metaclasses, msgspec)."""
    keywords = getattr(klass, "keywords", None) or {}
    return ex.literal_bool(keywords.get("kw_only")) is True


def _field_param(name: str, member: griffe.Attribute, kw_only: bool, shape: DataShape) -> Param | None:
    value = member.value
    has_default = value is not None
    default_text = ex.text(value)
    if isinstance(value, griffe.ExprCall) and ex.canonical(value) in shape.field_specifiers | KNOWN_FIELD_SPECIFIERS:
        if ex.literal_bool(ex.keyword(value, "init")) is False:
            return None
        field_kw_only = ex.literal_bool(ex.keyword(value, "kw_only"))
        if field_kw_only is not None:
            kw_only = field_kw_only
        alias = ex.literal_str(ex.keyword(value, "alias"))
        if alias:
            name = alias
        default = ex.keyword(value, "default")
        factory = ex.keyword(value, "default_factory") or ex.keyword(value, "factory")
        positional = ex.positional(value)
        if default is not None and str(default) != "...":
            has_default, default_text = True, str(default)
        elif factory is not None:
            has_default, default_text = True, f"{factory}()"
        elif positional and str(positional[0]) != "...":
            has_default, default_text = True, str(positional[0])
        else:
            has_default, default_text = False, None
    kind = ParamKind.KEYWORD_ONLY if kw_only else ParamKind.POSITIONAL_OR_KEYWORD
    return Param(name=name, kind=kind, has_default=has_default, annotation=ex.text(member.annotation), default=default_text)
