"""`@dataclasses.dataclass` (InitVar, ClassVar, field(init=False), kw_only, KW_ONLY)."""

from __future__ import annotations

import griffe

from apiaudit.provider import expressions as ex
from apiaudit.provider.shapes.base import ClassContext, DataShape, decorator_paths

NAMES = ("dataclasses.dataclass",)


def _decorated(klass: griffe.Class) -> bool:
    return any(path in NAMES for path, _ in decorator_paths(klass))


def detect(ctx: ClassContext) -> DataShape | None:
    for path, value in decorator_paths(ctx.cls):
        if path in NAMES:
            if ex.literal_bool(ex.keyword(value, "init")) is False:
                return None
            return DataShape(kind="dataclass", contributes=_decorated, origin="dataclass fields")
    return None
