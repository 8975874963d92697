"""Reading Griffe expressions: canonical names, literal values, call keywords."""

from __future__ import annotations

import re
from typing import Any

import griffe


def canonical(expr: Any) -> str | None:
    """The dotted path an expression names, as its module's imports spell it; None if not a name."""
    named = _named(expr)
    if named is None:
        return None
    try:
        return named.canonical_path
    except Exception:  # noqa: BLE001 - Griffe raises several kinds on unresolvable names
        return str(named)


def written(expr: Any) -> str | None:
    """The dotted name an expression names, as written (unresolved); None if not a name."""
    named = _named(expr)
    return str(named) if named is not None else None


def _named(expr: Any) -> Any:
    """The name or attribute an expression stands on (`f(...)`'s `f`, `C[T]`'s `C`); None if none."""
    while isinstance(expr, (griffe.ExprCall, griffe.ExprSubscript)):
        expr = expr.function if isinstance(expr, griffe.ExprCall) else expr.left
    return expr if isinstance(expr, (griffe.ExprName, griffe.ExprAttribute)) else None


def text(expr: Any) -> str | None:
    if expr is None:
        return None
    return str(expr)


def keyword(call: Any, name: str) -> Any:
    """The value of keyword `name` in a call expression, or None."""
    if not isinstance(call, griffe.ExprCall):
        return None
    for arg in call.arguments:
        if isinstance(arg, griffe.ExprKeyword) and arg.name == name:
            return arg.value
    return None


def positional(call: Any) -> list[Any]:
    if not isinstance(call, griffe.ExprCall):
        return []
    return [a for a in call.arguments if not isinstance(a, (griffe.ExprKeyword, griffe.ExprVarKeyword, griffe.ExprVarPositional))]


def literal_bool(value: Any) -> bool | None:
    s = str(value).strip() if value is not None else None
    if s == "True":
        return True
    if s == "False":
        return False
    return None


def literal_str(value: Any) -> str | None:
    if value is None:
        return None
    s = str(value).strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        return s[1:-1]
    return None


_EXTRA = re.compile(r"""['"]?extra['"]?\s*[=:]\s*['"](forbid|ignore|allow)['"]""")


def extra_setting(expr: Any) -> str | None:
    """`extra` in a pydantic config written as ConfigDict(extra=...) or {"extra": ...}."""
    if expr is None:
        return None
    m = _EXTRA.search(str(expr))
    return m.group(1) if m else None


def union_members(expr: Any) -> list[Any]:
    """`A | None` -> [A, None]; `Optional[A]` -> [A, None]; anything else -> [expr]."""
    if isinstance(expr, griffe.ExprBinOp) and expr.operator == "|":
        return union_members(expr.left) + union_members(expr.right)
    if isinstance(expr, griffe.ExprSubscript):
        head = canonical(expr.left) or ""
        if head.rsplit(".", 1)[-1] == "Optional":
            return union_members(expr.slice) + [None]
        if head.rsplit(".", 1)[-1] == "Union" and isinstance(expr.slice, griffe.ExprTuple):
            out: list[Any] = []
            for e in expr.slice.elements:
                out += union_members(e)
            return out
    if expr is None or str(expr) == "None":
        return [None]
    return [expr]
