"""pydantic `BaseModel` subclasses: every field keyword-only; extras per `model_config` (default: ignore)."""

from __future__ import annotations

import griffe

from apiaudit.provider import expressions as ex
from apiaudit.provider.records import Extra
from apiaudit.provider.shapes.base import ClassContext, DataShape

NAMES = ("pydantic.BaseModel", "pydantic.main.BaseModel")


def detect(ctx: ClassContext) -> DataShape | None:
    if not any(isinstance(k, str) and k in NAMES for k in ctx.mro):
        return None
    return DataShape(
        kind="pydantic-model",
        contributes=lambda k: True,
        extra=Extra(_extra(ctx) or "ignore"),
        all_keyword_only=True,
        skip_private=True,
        skip_names=frozenset({"model_config"}),
        origin="pydantic model fields",
        subclass_fields=True,
    )


def _extra(ctx: ClassContext) -> str | None:
    """The nearest class in the MRO that says: class keyword, model_config, or inner Config."""
    for klass in ctx.mro:
        if not isinstance(klass, griffe.Class):
            continue
        kw = ex.literal_str(klass.keywords.get("extra")) if getattr(klass, "keywords", None) else None
        if kw:
            return kw
        config = klass.members.get("model_config")
        if isinstance(config, griffe.Attribute) and ex.extra_setting(config.value):
            return ex.extra_setting(config.value)
        inner = klass.members.get("Config")
        if isinstance(inner, griffe.Class):
            value = inner.members.get("extra")
            if isinstance(value, griffe.Attribute):
                setting = ex.literal_str(value.value) or (str(value.value).rsplit(".", 1)[-1].lower() if value.value else None)
                if setting in ("forbid", "ignore", "allow"):
                    return setting
    return None
