"""Match [[pattern]] rules against consumer source: drift that signatures cannot show.

Receivers are compared as source text (``self.executor``) within one function body;
nothing is imported and no types are inferred, so a pattern only runs on files that
import the provider (when `provider_package` is given) to keep false positives down.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence

from apiaudit.findings import Finding
from apiaudit.gcpause import paused_gc
from apiaudit.recipes.model import Pattern

def _scope_walk(tree: ast.Module) -> tuple[list[list[ast.AST]], dict[int, ast.AST], set[str]]:
    """One pre-order walk for everything `pattern_matches` needs: each scope's nodes in source
    order, not descending into nested scopes (the module's first, then every function's
    breadth-first: by depth, then source order), every node's parent, and the top-level names
    imported anywhere. Only the module and functions are scopes: class bodies and lambdas
    belong to none (a receiver's text means nothing across them).
    """
    module_nodes: list[ast.AST] = []
    functions: list[tuple[int, int, list[ast.AST]]] = []  # (depth, pre-order number, nodes)
    parents: dict[int, ast.AST] = {}
    imported: set[str] = set()
    children = list(ast.iter_child_nodes(tree))
    for child in children:
        parents[id(child)] = tree
    stack: list[tuple[ast.AST, list[ast.AST] | None, int]] = [(child, module_nodes, 1) for child in reversed(children)]
    order = 0
    while stack:
        node, into, depth = stack.pop()
        order += 1
        if into is not None:
            into.append(node)
        target = into
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            target = []
            functions.append((depth, order, target))
        elif isinstance(node, (ast.Lambda, ast.ClassDef)):
            target = None
        elif isinstance(node, ast.Import):
            imported.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
        children = list(ast.iter_child_nodes(node))
        for child in children:
            parents[id(child)] = node
        stack.extend((child, target, depth + 1) for child in reversed(children))
    functions.sort(key=lambda f: (f[0], f[1]))
    return [module_nodes, *(nodes for _, _, nodes in functions)], parents, imported


def _method_call(node: ast.AST) -> tuple[str, str] | None:
    """(receiver text, method name) for ``receiver.method(...)``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return ast.unparse(node.func.value), node.func.attr
    return None


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


def _scope_calls(nodes: Sequence[ast.AST]) -> list[tuple[ast.Call, tuple[str, str]]]:
    """Every ``receiver.method(...)`` call of one scope with (receiver text, method): once for all patterns."""
    calls: list[tuple[ast.Call, tuple[str, str]]] = []
    for node in nodes:
        receiver_method = _method_call(node)
        if receiver_method is not None and isinstance(node, ast.Call):
            calls.append((node, receiver_method))
    return calls


# A matching call, with what the fix needs to know (result-subscripted: the name it is bound to).
_Hit = tuple[ast.Call, tuple[tuple[str, str], ...]]


def _matches_in_scope(
    nodes: Sequence[ast.AST], pattern: Pattern, calls: list[tuple[ast.Call, tuple[str, str]]] | None = None,
    parents: dict[int, ast.AST] | None = None,
) -> list[_Hit]:
    if calls is None:
        calls = _scope_calls(nodes)
    targets = [n for n, (_, method) in calls if method == pattern.method and _call_qualifies(n, pattern)]
    if pattern.kind == "method-called" or not targets:
        return [(call, ()) for call in targets]
    hits: list[_Hit] = []
    if pattern.kind == "call-not-followed-by":
        for call in targets:
            if not isinstance(call.func, ast.Attribute):
                continue
            receiver = ast.unparse(call.func.value)
            followed = any(
                method == pattern.then and (not pattern.same_receiver or other_receiver == receiver) and _after(n, call)
                for n, (other_receiver, method) in calls
            )
            if not followed:
                hits.append((call, ()))
        return hits
    # result-subscripted: directly, or through the single name the result was bound to
    if parents is None:
        parents = _parents(nodes)
    for call in targets:
        parent = parents.get(id(call))
        if isinstance(parent, ast.Subscript) and parent.value is call and _subscript_ok(parent, pattern):
            hits.append((call, ()))
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
                hits.append((call, (("bound", bound),)))
                break
    return hits


def _parents(nodes: Sequence[ast.AST]) -> dict[int, ast.AST]:
    parents: dict[int, ast.AST] = {}
    for node in nodes:
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    return parents


def _char_column(line_text: str, byte_offset: int) -> int:
    """ast gives UTF-8 byte offsets; findings carry character columns."""
    return len(line_text.encode("utf-8")[:byte_offset].decode("utf-8", errors="replace"))


# (index of the pattern in the list given, line, byte column, end line, end byte column, facts for the fix)
Match = tuple[int, int, int, int, int, tuple[tuple[str, str], ...]]


def pattern_matches(source: str, patterns: Sequence[Pattern], provider_packages: Sequence[str] | None = None) -> tuple[Match, ...]:
    """Where each pattern fires in one file's source: plain values, so they can be cached per file.

    One parse and one walk per scope for every pattern. A file that does not parse, or (with
    `provider_packages`) imports none of them, yields nothing.
    """
    # Patterns on a resolved symbol are matched by the checks stage, where callees are resolved.
    if not any(not p.on_symbol for p in patterns):
        return ()
    try:
        with paused_gc():
            tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ()
    scopes, all_parents, imported = _scope_walk(tree)
    if provider_packages is not None and not imported & set(provider_packages):
        return ()
    # One parent map for the file: a node has one parent, so it answers as each scope's would.
    parents = all_parents if any(p.kind == "result-subscripted" for p in patterns) else None
    matches: list[Match] = []
    for nodes in scopes:
        calls = _scope_calls(nodes)
        if not calls:
            continue
        for number, pattern in enumerate(patterns):
            if pattern.on_symbol:
                continue
            for call, facts in _matches_in_scope(nodes, pattern, calls, parents):
                matches.append((number, call.lineno, call.col_offset, call.end_lineno or call.lineno, call.end_col_offset or 0, facts))
    return tuple(matches)


def findings_of_matches(
    matches: Iterable[Match], lines: Sequence[str], path: str, patterns: Sequence[Pattern], *, consumer: str
) -> list[Finding]:
    """The findings `pattern_matches` stands for, in report order."""
    findings: list[Finding] = []
    for number, line, column, end_line, end_column, facts in matches:
        pattern = patterns[number]
        line_text = lines[line - 1] if line - 1 < len(lines) else ""
        end_text = lines[end_line - 1] if end_line - 1 < len(lines) else ""
        details: list[tuple[str, str]] = [("pattern", pattern.id), ("method", pattern.method or ""), *facts]
        if pattern.recipe:
            details.append(("recipe", pattern.recipe))
        findings.append(
            Finding(
                rule=pattern.id,
                severity=pattern.severity,
                consumer=consumer,
                path=path,
                line=line,
                column=_char_column(line_text, column),
                callee=None,
                param=None,
                message=pattern.message,
                source=line_text.strip(),
                advice=pattern.advice,
                end_line=end_line,
                end_column=_char_column(end_text, end_column),
                details=tuple(details),
            )
        )
    return sorted(findings, key=lambda f: f.sort_key)


def match_patterns(
    source: str,
    path: str,
    patterns: Sequence[Pattern],
    *,
    consumer: str,
    provider_packages: Sequence[str] | None = None,
) -> list[Finding]:
    """Findings for every pattern that fires in one consumer file (`path` as Findings report it).

    A file that does not parse yields nothing here (the engine reports parse errors).
    With `provider_packages`, a file that imports none of them yields nothing.
    """
    matches = pattern_matches(source, patterns, provider_packages)
    return findings_of_matches(matches, source.splitlines(), path, patterns, consumer=consumer)
