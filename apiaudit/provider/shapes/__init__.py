"""Plug-ins that synthesize `__init__` for dataclass-like classes, tried in order."""

from __future__ import annotations

from apiaudit.provider.shapes import (
    msgspec_struct,
    namedtuple,
    pydantic_dataclass,
    pydantic_model,
    stdlib_dataclass,
    transform,
)
from apiaudit.provider.shapes.base import ClassContext, DataShape, synthesize

PLUGINS = (stdlib_dataclass, pydantic_dataclass, transform, pydantic_model, msgspec_struct, namedtuple)


def detect(ctx: ClassContext) -> DataShape | None:
    for plugin in PLUGINS:
        shape = plugin.detect(ctx)
        if shape is not None:
            return shape
    return None


__all__ = ["ClassContext", "DataShape", "detect", "synthesize", "PLUGINS"]
