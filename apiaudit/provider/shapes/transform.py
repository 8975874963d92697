"""PEP 681 `dataclass_transform` on a decorator, a base class, or a metaclass.

Type checkers treat such classes as standard dataclasses. At runtime the transform may
build a pydantic dataclass, whose unknown-keyword behaviour depends on `extra`: read it
from the transform's own body (`ConfigDict(extra="forbid")`) or its call site.
"""

from __future__ import annotations

import griffe

from apiaudit.provider import expressions as ex
from apiaudit.provider.extension import facts
from apiaudit.provider.records import Extra
from apiaudit.provider.shapes.base import (
    KNOWN_FIELD_SPECIFIERS,
    ClassContext,
    DataShape,
    decorator_paths,
)

NAMES = ("typing.dataclass_transform", "typing_extensions.dataclass_transform")


def _transform_call(obj) -> griffe.Expr | None:
    """The `@dataclass_transform(...)` decorator expression on a function or class, if any."""
    for d in getattr(obj, "decorators", []) or []:
        if ex.canonical(d.value) in NAMES:
            return d.value
    return None


def _options(transform, body_owner, call_site) -> dict:
    kw_only = ex.literal_bool(ex.keyword(transform, "kw_only_default")) or False
    specifiers = set(KNOWN_FIELD_SPECIFIERS)
    spec_expr = ex.keyword(transform, "field_specifiers")
    if isinstance(spec_expr, griffe.ExprTuple):
        specifiers |= {name for e in spec_expr.elements if (name := ex.canonical(e))}
    extra = None
    if call_site is not None:
        extra = ex.extra_setting(ex.keyword(call_site, "config")) or ex.literal_str(ex.keyword(call_site, "extra"))
        override = ex.literal_bool(ex.keyword(call_site, "kw_only"))
        if override is not None:
            kw_only = override
    if extra is None and body_owner is not None:
        literals = facts(body_owner).get("extra_literals", [])
        if len(literals) == 1:
            extra = literals[0]
        elif _mentions_pydantic(body_owner):
            extra = "ignore"
    return {"kw_only_default": kw_only, "field_specifiers": frozenset(specifiers), "extra": Extra(extra or "forbid")}


def _mentions_pydantic(func) -> bool:
    module = func.module
    for name in facts(func).get("body_names", []):
        member = module.members.get(name)
        target = getattr(member, "target_path", None) if member is not None and member.is_alias else None
        if target and target.split(".", 1)[0] == "pydantic":
            return True
    return False


def detect(ctx: ClassContext) -> DataShape | None:
    # 1. A decorator function marked with dataclass_transform.
    for path, value in decorator_paths(ctx.cls):
        if not path:
            continue
        func = ctx.resolve_object(path)
        transform = _transform_call(func) if isinstance(func, griffe.Function) else None
        if transform is None:
            continue
        call_site = value if isinstance(value, griffe.ExprCall) else None
        opts = _options(transform, func, call_site)

        def same_decorator(k, _path=path):
            return any(p == _path for p, _ in decorator_paths(k))

        return DataShape(kind="dataclass_transform", contributes=same_decorator, origin=f"@{path.rsplit('.', 1)[-1]} fields (dataclass_transform)", **opts)
    # 2. A base class, or 3. a metaclass, marked with dataclass_transform.
    provider_mro = [k for k in ctx.mro if isinstance(k, griffe.Class)]
    for index, klass in enumerate(provider_mro[1:], start=1):
        transform = _transform_call(klass)
        if transform is None:
            meta_path = ex.canonical(klass.keywords.get("metaclass")) if getattr(klass, "keywords", None) else None
            meta = ctx.resolve_object(meta_path) if meta_path else None
            transform = _transform_call(meta) if isinstance(meta, griffe.Class) else None
        if transform is not None:
            below = {id(k) for k in provider_mro[:index]}
            opts = _options(transform, None, None)
            return DataShape(kind="dataclass_transform", contributes=lambda k: id(k) in below, origin=f"{klass.name} subclass fields (dataclass_transform)", subclass_fields=True, **opts)
    return None
