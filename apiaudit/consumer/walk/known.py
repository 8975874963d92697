"""What the walk knows of Python's own callables and values, by name: the standard library's
version, metadata and import functions it folds on the audited release, the str methods of a
version's text, the builtins; and reading a literal or a builtin call."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable
from typing import TypeVar

from apiaudit.consumer.values import UNKNOWN, Const, Value
from apiaudit.consumer.walk.scopes import Scope

VERSION_PARSERS = frozenset({"packaging.version.Version", "packaging.version.parse", "pkg_resources.parse_version"})
METADATA_VERSION = frozenset({"importlib.metadata.version", "importlib_metadata.version"})
METADATA_DISTRIBUTION = frozenset({"importlib.metadata.distribution", "importlib_metadata.distribution", "pkg_resources.get_distribution"})
FIND_SPEC = frozenset({"importlib.util.find_spec"})
IMPORT_MODULE = frozenset({"importlib.import_module"})
SIGNATURE = frozenset({"inspect.signature"})
PACKAGES_DISTRIBUTIONS = frozenset({"importlib.metadata.packages_distributions", "importlib_metadata.packages_distributions"})
STR_METHODS = frozenset({"replace", "startswith", "endswith", "split", "strip", "lstrip", "rstrip", "lower", "upper"})
BUILTINS = frozenset(dir(builtins))


def is_builtin_call(node: ast.Call, scope: Scope, names: tuple[str, ...]) -> bool:
    """`name(...)` of a builtin the scope does not rebind."""
    return isinstance(node.func, ast.Name) and node.func.id in names and scope.env.lookup(node.func.id) is None


def const_of(node) -> Value:
    """A literal's value (str, number, bool, None), else unknown."""
    return Const(node.value) if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))) else UNKNOWN


Name = TypeVar("Name", bound=str)


def named(text: str, names: tuple[Name, ...]) -> Name | None:
    """`text` as one of `names` (a Literal's values), typed as that Literal; None when it is none of them."""
    return next((n for n in names if n == text), None)


def normal_name(name: str) -> str:
    """A distribution or module name compared as packaging normalizes it."""
    return name.lower().replace("-", "_").replace(".", "_")


def joined_text(node: ast.expr, held: Callable[[ast.expr], Value]) -> Value:
    """A string built of known parts (`f"{__name__}.Ext"`, `Ext.__module__ + "." + Ext.__name__`),
    each part read by `held`: the text, where every part folds to one; else unknown."""
    parts = node.values if isinstance(node, ast.JoinedStr) else [node.left, node.right] if isinstance(node, ast.BinOp) else []
    texts: list[str] = []
    for part in parts:
        if isinstance(part, ast.FormattedValue):
            if part.format_spec is not None or part.conversion not in (-1, ord("s")):
                return UNKNOWN
            part = part.value
        value = held(part)
        if not (isinstance(value, Const) and isinstance(value.value, str)):
            return UNKNOWN
        texts.append(value.value)
    return Const("".join(texts)) if texts else UNKNOWN
