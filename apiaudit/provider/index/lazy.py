"""Griffe and what the index builds on it (expressions, the extension's facts, class shapes),
imported on the first question the index cache does not answer: a warm scan answers from the
cache and never imports them."""

from __future__ import annotations

import ast
from typing import Any

from apiaudit.infra.lazyimport import lazy_module

TYPE_CHECKING = False
if TYPE_CHECKING:
    import griffe

    from apiaudit.provider import expressions as ex
    from apiaudit.provider import extension
    from apiaudit.provider import shapes
else:
    griffe = lazy_module("griffe")
    ex = lazy_module("apiaudit.provider.expressions")
    shapes = lazy_module("apiaudit.provider.shapes")
    extension = lazy_module("apiaudit.provider.extension")


def facts(obj: Any) -> dict[str, Any]:
    return extension.facts(obj)


def returned_callees(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    return extension.returned_callees(node)
