"""`msgspec.Struct` subclasses: fields of every Struct class in the MRO, in order; unknown keywords raise."""

from __future__ import annotations

import griffe

from apiaudit.provider.shapes.base import ClassContext, DataShape

NAMES = ("msgspec.Struct",)


def detect(ctx: ClassContext) -> DataShape | None:
    if not any(isinstance(k, str) and k in NAMES for k in ctx.mro):
        return None
    # Only Struct subclasses define fields; a plain mixin's annotations do not count.
    structs = {id(k) for k in ctx.mro if isinstance(k, griffe.Class) and any(
        isinstance(b, str) and b in NAMES for b in ctx.mro_of(k.path))}
    return DataShape(kind="msgspec-struct", contributes=lambda k: id(k) in structs, origin="msgspec.Struct fields", subclass_fields=True)
