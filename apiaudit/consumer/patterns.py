"""Text [[pattern]] rules matched on a consumer file's parsed tree: drift signatures cannot show.

Receivers are compared as source text (``self.executor``) within one function body;
nothing is imported and no types are inferred, so a pattern only runs on files that
import the provider to keep false positives down. This runs where the consumer stage
parses the file (`collect_file`), so no later stage parses it again; the findings are
made from the hits by `apiaudit.checks.pattern_findings`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from apiaudit.consumer.records import PatternHit, Site
from apiaudit.infra.astutil import descendants, unparse

if TYPE_CHECKING:
    from apiaudit.recipes.records import Pattern

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _imports_package(tree: ast.Module, packages: Sequence[str]) -> bool:
    tops = set(packages)
    for node in descendants(tree):
        if isinstance(node, ast.Import):
            if any(a.name.split(".")[0] in tops for a in node.names):
                return True
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in tops:
                return True
    return False


def _scope_nodes(body_owner: ast.AST) -> list[ast.AST]:
    """Nodes of one function (or module) body in source order, not descending into nested scopes."""
    found: list[ast.AST] = []
    stack = list(reversed(list(ast.iter_child_nodes(body_owner))))
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, _SCOPES):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return found


def _scopes(tree: ast.Module) -> Iterable[ast.AST]:
    yield tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _is_int_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool)


def _call_qualifies(call: ast.Call, pattern: Pattern) -> bool:
    if pattern.when_keyword is not None and not any(k.arg == pattern.when_keyword for k in call.keywords):
        return False
    if pattern.min_args is not None:
        positional = [a for a in call.args if not isinstance(a, ast.Starred)]
        if len(positional) < pattern.min_args:
            return False
    return True


def _after(node: ast.expr, anchor: ast.expr) -> bool:
    return (node.lineno, node.col_offset) > (anchor.end_lineno or anchor.lineno, anchor.end_col_offset or 0)


def _subscript_ok(subscript: ast.Subscript, pattern: Pattern) -> bool:
    return pattern.subscript == "any" or _is_int_literal(subscript.slice)


def _scope_calls(nodes: Sequence[ast.AST], methods: frozenset[str]) -> list[tuple[ast.Call, tuple[str, str]]]:
    """Every ``receiver.method(...)`` call of one scope to one of `methods` (those the patterns
    name), with (receiver text, method): once for all patterns. Only these calls' receivers are
    written out as text, the costly part."""
    return [
        (node, (unparse(node.func.value), node.func.attr))
        for node in nodes
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in methods
    ]


def _methods_named(patterns: Sequence[Pattern]) -> frozenset[str]:
    """The method names a pattern's calls are matched on: its own and, for `call-not-followed-by`, the one after."""
    return frozenset(name for p in patterns for name in (p.method, p.then) if name)


# A matching call, with what the fix needs to know (result-subscripted: the name it is bound to).
_Hit = tuple[ast.Call, str | None]


def _matches_in_scope(
    nodes: Sequence[ast.AST], pattern: Pattern, calls: list[tuple[ast.Call, tuple[str, str]]] | None = None,
    parents: dict[int, ast.AST] | None = None,
) -> list[_Hit]:
    if calls is None:
        calls = _scope_calls(nodes, _methods_named([pattern]))
    targets = [n for n, (_, method) in calls if method == pattern.method and _call_qualifies(n, pattern)]
    if pattern.kind == "method-called" or not targets:
        return [(call, None) for call in targets]
    hits: list[_Hit] = []
    if pattern.kind == "call-not-followed-by":
        for call in targets:
            if not isinstance(call.func, ast.Attribute):
                continue
            receiver = unparse(call.func.value)
            followed = any(
                method == pattern.then and (not pattern.same_receiver or other_receiver == receiver) and _after(n, call)
                for n, (other_receiver, method) in calls
            )
            if not followed:
                hits.append((call, None))
        return hits
    # result-subscripted: directly, or through the single name the result was bound to
    if parents is None:
        parents = _parents(nodes)
    for call in targets:
        parent = parents.get(id(call))
        if isinstance(parent, ast.Subscript) and parent.value is call and _subscript_ok(parent, pattern):
            hits.append((call, None))
            continue
        bound: str | None = None
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
            bound = parent.targets[0].id
        elif isinstance(parent, (ast.AnnAssign, ast.NamedExpr)) and isinstance(parent.target, ast.Name):
            bound = parent.target.id
        if bound is None:
            continue
        for node in nodes:
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Name)
                and node.value.id == bound
                and isinstance(node.ctx, ast.Load)
                and _after(node, call)
                and _subscript_ok(node, pattern)
            ):
                hits.append((call, bound))
                break
    return hits


def _parents(nodes: Sequence[ast.AST]) -> dict[int, ast.AST]:
    parents: dict[int, ast.AST] = {}
    for node in nodes:
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    return parents


def pattern_hits(
    tree: ast.Module, patterns: Sequence[Pattern], provider_packages: Sequence[str] | None = None, source: str | None = None
) -> tuple[PatternHit, ...]:
    """Where each text pattern fires in one parsed file (columns: ast's byte offsets; the
    consumer stage converts them with every other Site).

    One walk per scope for every pattern. With `provider_packages`, a file that imports none
    of them yields nothing. Patterns on a resolved symbol (`Pattern.on_symbol`) are matched by
    the checks stage, where callees are resolved. With the file's `source`, a pattern whose
    method name the text never spells is not looked for (only for ASCII text: identifiers
    written in other scripts are normalised by the parser, so the text may spell them otherwise).
    """
    text_patterns = [p for p in patterns if not p.on_symbol]
    if source is not None and source.isascii():
        text_patterns = [p for p in text_patterns if not p.method or p.method in source]
    if not text_patterns:
        return ()
    if provider_packages is not None and not _imports_package(tree, provider_packages):
        return ()
    hits: list[PatternHit] = []
    methods = _methods_named(text_patterns)
    for scope in _scopes(tree):
        nodes = _scope_nodes(scope)
        calls = _scope_calls(nodes, methods)
        if not calls:
            continue
        parents = _parents(nodes) if any(p.kind == "result-subscripted" for p in text_patterns) else None
        for pattern in text_patterns:
            for call, bound in _matches_in_scope(nodes, pattern, calls, parents):
                site = Site(call.lineno, call.col_offset, call.end_lineno or call.lineno, call.end_col_offset or 0)
                hits.append(PatternHit(pattern.id, site, bound))
    return tuple(hits)
