"""Auto-class load calls in a consumer file, read where the consumer stage parses it.

``X.<rule.method>(...)`` where X names a class imported from a [[remote_code]] rule's module:
the facts `checks/remote_code.py` decides against the model (`ModelFacts`).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Sequence

from apiaudit.consumer.positions import char_column
from apiaudit.consumer.records import AutoCallSite, TrustArgument
from apiaudit.infra.astutil import dotted_text

if TYPE_CHECKING:
    from apiaudit.recipes.records import RemoteCodeRule


def auto_calls(tree: ast.Module, lines: tuple[str, ...], path: str, rules: Sequence[RemoteCodeRule]) -> tuple[AutoCallSite, ...]:
    """Every site of every rule, in rule order (one walk of the file's imports per rule's module)."""
    out: list[AutoCallSite] = []
    for rule in rules:
        if any(rule.method in line for line in lines):
            out.extend(auto_call_sites(tree, lines, path, rule))
    return tuple(out)


def auto_call_sites(tree: ast.Module, lines: Sequence[str], path: str, rule: RemoteCodeRule) -> list[AutoCallSite]:
    """Every ``X.<rule.method>(...)`` where X names a class imported from `rule.module`."""
    names, modules = _imported(tree, rule.module)
    sites: list[AutoCallSite] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == rule.method):
            continue
        auto_class = _auto_class(node.func.value, names, modules)
        if auto_class is None or rule.auto_map_key(auto_class) is None:
            continue
        model_arg = node.args[0] if node.args else next(
            (k.value for k in node.keywords if k.arg == "pretrained_model_name_or_path"), None
        )
        literal = model_arg.value if isinstance(model_arg, ast.Constant) and isinstance(model_arg.value, str) else None
        sites.append(AutoCallSite(
            path=path, line=node.lineno, column=_column(lines, node.lineno, node.col_offset) or 0, end_line=node.end_lineno,
            end_column=_column(lines, node.end_lineno, node.end_col_offset), auto_class=auto_class, trust=_trust(node, rule.keyword),
            model_literal=literal, has_model_argument=model_arg is not None and not isinstance(model_arg, ast.Starred),
            source=lines[node.lineno - 1].strip() if 0 < node.lineno <= len(lines) else None, rule=rule.id,
        ))  # fmt: skip
    return sorted(sites, key=lambda s: (s.line, s.column))


def _imported(tree: ast.Module, module: str) -> tuple[dict[str, str], set[str]]:
    """Local name -> class name for ``from module[.sub] import Cls [as X]``; local names bound to the module."""
    names: dict[str, str] = {}
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == module or node.module.startswith(module + "."):
                for alias in node.names:
                    if alias.name != "*":
                        names[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == module:
                    modules.add(alias.asname or alias.name)
                elif alias.name.startswith(module + ".") and alias.asname is None:
                    modules.add(module)  # `import transformers.x` binds `transformers`
    return names, modules


def _auto_class(receiver: ast.AST, names: dict[str, str], modules: set[str]) -> str | None:
    text = dotted_text(receiver)
    if text is None:
        return None
    head, _, rest = text.partition(".")
    if not rest:
        return names.get(head)
    if head in modules:
        return rest.rsplit(".", 1)[-1]
    return None


def _trust(call: ast.Call, keyword: str) -> TrustArgument:
    for kw in call.keywords:
        if kw.arg == keyword:
            if isinstance(kw.value, ast.Constant) and kw.value.value is True:
                return TrustArgument.TRUE
            if isinstance(kw.value, ast.Constant) and kw.value.value in (False, None):
                return TrustArgument.FALSE
            return TrustArgument.UNKNOWN
    if any(kw.arg is None for kw in call.keywords):
        return TrustArgument.UNKNOWN
    return TrustArgument.ABSENT


def _column(lines: Sequence[str], line: int | None, byte_offset: int | None) -> int | None:
    """ast's UTF-8 byte offset as a character column (columns are characters past the consumer stage)."""
    if line is None or byte_offset is None or not 0 < line <= len(lines):
        return byte_offset
    return char_column(lines[line - 1], byte_offset)
