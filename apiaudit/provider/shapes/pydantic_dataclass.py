"""`@pydantic.dataclasses.dataclass`: like a dataclass, but extras follow `config`'s `extra` (default: ignore)."""

from __future__ import annotations

import griffe

from apiaudit.provider import expressions as ex
from apiaudit.provider.records import Extra
from apiaudit.provider.shapes.base import ClassContext, DataShape, decorator_paths

NAMES = ("pydantic.dataclasses.dataclass",)


def _decorated(klass: griffe.Class) -> bool:
    return any(path in NAMES for path, _ in decorator_paths(klass))


def detect(ctx: ClassContext) -> DataShape | None:
    for path, value in decorator_paths(ctx.cls):
        if path in NAMES:
            extra = ex.extra_setting(ex.keyword(value, "config")) or "ignore"
            return DataShape(kind="pydantic-dataclass", contributes=_decorated, extra=Extra(extra), origin="pydantic dataclass fields")
    return None
