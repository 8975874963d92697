"""`class P(typing.NamedTuple)`: fields in order, all positional-or-keyword."""

from __future__ import annotations

from apiaudit.provider import expressions as ex
from apiaudit.provider.shapes.base import ClassContext, DataShape

NAMES = ("typing.NamedTuple", "typing_extensions.NamedTuple")


def detect(ctx: ClassContext) -> DataShape | None:
    if any(ex.canonical(b) in NAMES for b in ctx.cls.bases):
        me = ctx.cls
        return DataShape(kind="namedtuple", contributes=lambda k: k is me, origin="NamedTuple fields")
    return None
