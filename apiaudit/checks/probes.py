"""Capability probes: consumer functions that test the provider by names (issue 37, cause 4).

A probe imports by name, looks a module up, tests an attribute or catches an import failure
(`probes_provider`), over names of the provider: a table of dotted names, `find_spec("pkg.mod")`,
a `try: from pkg.mod import x`. What it guards (`if not probe(): return`) runs only where it
passes. Where the names it tests are all readable, the release decides it (`outcome`): every
name there, the probe passes and what it guards is judged as any live line; one missing, the
probe fails, the guarded code never runs, and one `probe-fails` finding at the probe's call says
which name it lacks instead of one error per guarded line. Otherwise it stays undecided.

Read from the consumer's text on demand (parsed once per file, `flows.consumer_tree`), never run.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Literal

from apiaudit.checks.context import CheckContext
from apiaudit.checks.flows import called_name, consumer_tree
from apiaudit.consumer.records import ConsumerFile
from apiaudit.infra.astutil import module_names
from apiaudit.infra.frozen import record
from apiaudit.provider.records import Found, Missing

# What a probe of the provider does in its text: imports by name, module lookups, attribute tests.
_PROBING = re.compile(r"\b(?:import_module|find_spec|hasattr|resolve_obj_by_qualname)\s*\(|\bexcept\s+(?:\(?\s*)?(?:ImportError|ModuleNotFoundError|AttributeError)")
# A name as a probe's table writes it: `pkg.mod`, `pkg.mod.attr`, `pkg.mod:Class.attr`.
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?::[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)?")
_MAX_FUNCTIONS = 40  # consumer functions read for one probe's names, at most

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def probes_provider(ctx: CheckContext, dotted: str, depth: int = 3) -> bool:
    """Whether the consumer function `dotted` probes the provider: its body (or a consumer
    function it calls, a few calls deep) imports by name, looks a module up, tests an attribute,
    or catches an import failure, in a module that names the provider (an import of it, or its
    names as strings: a table of dotted names). Memoised per consumer."""
    key = (dotted, depth)
    if key in ctx.probes:
        return ctx.probes[key]
    ctx.probes[key] = False  # a function calling itself decides by its other calls
    found = _function(ctx, dotted)
    result = False
    if found is not None:
        file, node = found
        text = ast.get_source_segment(file.source, node) or ""
        result = bool(_PROBING.search(text)) and _names_provider(ctx, file.source)
        if not result and depth > 0:
            names = _module_names_of(ctx, file)
            for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
                called = called_name(call) if isinstance(call.func, ast.Name) else None
                target = names.get(called or "")
                if target and probes_provider(ctx, target, depth - 1):
                    result = True
                    break
    ctx.probes[key] = result
    return result


@record
class ProbeOutcome:
    """What a probe returns on the audited release, when its names decide it."""

    # passes: every name it tests is there; fails: `missing` is not; undecided: a name the
    # index cannot judge, no name read, or no telling which result means "missing"
    verdict: Literal["passes", "fails", "undecided"]
    # what the call evaluates to on the release (truthy or not); None when undecided
    truth: bool | None = None
    missing: str = ""  # fails: the first name of its table the release lacks
    tested: int = 0  # how many names it tests


UNDECIDED = ProbeOutcome("undecided")


def outcome(ctx: CheckContext, dotted: str) -> ProbeOutcome | None:
    """How the probe `dotted` comes out on the audited release; None when the function is no
    probe of the provider (a test on run-time data). Memoised per consumer."""
    if dotted in ctx.probe_outcomes:
        known = ctx.probe_outcomes[dotted]
        return known if isinstance(known, ProbeOutcome) else None
    result: ProbeOutcome | None = None
    if probes_provider(ctx, dotted):
        result = _decide(ctx, dotted)
    ctx.probe_outcomes[dotted] = result
    return result


def _decide(ctx: CheckContext, dotted: str) -> ProbeOutcome:
    found = _function(ctx, dotted)
    if found is None:
        return UNDECIDED
    on_missing = _result_when_missing(found[1])
    names = list(dict.fromkeys(_tested_names(ctx, dotted)))
    if on_missing is None or not names:
        return UNDECIDED
    undecided = False
    for name in names:
        there = _exists(ctx, name)
        if there is False:
            return ProbeOutcome("fails", on_missing, name, len(names))
        undecided = undecided or there is None
    return UNDECIDED if undecided else ProbeOutcome("passes", not on_missing, tested=len(names))


def _result_when_missing(node: FunctionNode) -> bool | None:
    """Whether the probe's result is truthy when a name is missing: a function returning a
    collection (`missing_hooks() -> list[str]`) lists what is missing (truthy); one returning
    booleans says so with the first literal it returns from inside a test or a handler
    (`if not report.ok: return False`, `except ImportError: return False`). None: neither."""
    returns = node.returns
    shown = ast.unparse(returns) if returns is not None else ""
    if re.match(r"(?:typing\.)?(?:list|List|set|Set|tuple|Tuple|Sequence|frozenset)\b", shown):
        return True
    if shown not in ("", "bool"):
        return None
    for statement in node.body:
        if isinstance(statement, (ast.If, ast.Try, ast.For, ast.With)):
            for inner in ast.walk(statement):
                if isinstance(inner, ast.Return) and isinstance(inner.value, ast.Constant) and isinstance(inner.value.value, bool):
                    return inner.value.value
    return None


def _exists(ctx: CheckContext, name: str) -> bool | None:
    """Whether the release has `name` (`pkg.mod`, `pkg.mod.attr`, `pkg.mod:Class.attr`); None
    when the index cannot tell."""
    module, colon, attributes = name.partition(":")
    if colon:
        if not ctx.index.module_exists(module):
            return False
        if not attributes:
            return True
        name = f"{module}.{attributes}"
    elif ctx.index.module_exists(name):
        return True
    resolved = ctx.index.resolve(name)
    if isinstance(resolved, Found):
        return True
    if isinstance(resolved, Missing) and resolved.doubt is None:
        return False
    return None


def _tested_names(ctx: CheckContext, dotted: str) -> Iterator[str]:
    """The provider names the probe `dotted` tests, in the order it reads them: dotted names
    written as string literals in its body or in the module constants it reads (a table of
    them: the literals of the table itself, not those it is computed from), the provider
    modules it imports; then those of the consumer functions it calls, by name or named in such
    a table (`"pkg.adapter:missing_hooks"`, which a probe resolves and calls)."""
    packages = _packages(ctx)
    queue, seen = [dotted], {dotted}
    while queue and len(seen) <= _MAX_FUNCTIONS:
        found = _function(ctx, queue.pop(0))
        if found is None:
            continue
        file, node = found
        names = _module_names_of(ctx, file)
        constants = _constants_of(ctx, file)
        for part in sorted(_walk(node), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
            literals: list[str] = []
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                literals.append(part.value)
            elif isinstance(part, ast.Import):
                literals.extend(alias.name for alias in part.names)
            elif isinstance(part, ast.ImportFrom) and part.module and not part.level:
                literals.extend(f"{part.module}:{alias.name}" for alias in part.names if alias.name != "*")
            elif isinstance(part, ast.Name) and isinstance(part.ctx, ast.Load):
                target = names.get(part.id)
                table = constants.get(part.id)
                if table is None and target:
                    table = _constant(ctx, target)
                if table is not None:
                    literals.extend(_table_literals(table))
                elif target and target not in seen and _function(ctx, target) is not None:
                    seen.add(target)
                    queue.append(target)
            for literal in literals:
                if not _DOTTED.fullmatch(literal):
                    continue
                if literal.split(".", 1)[0].split(":", 1)[0] in packages:
                    yield literal
                else:
                    function = literal.replace(":", ".")
                    if "." in function and function not in seen and _function(ctx, function) is not None:
                        seen.add(function)
                        queue.append(function)


def _walk(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function, not those of an f-string's parts (computed, not a name)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.JoinedStr):
            continue
        yield child
        yield from _walk(child)


def _table_literals(value: ast.expr) -> Iterator[str]:
    """The string literals a module constant holds itself: not in f-strings, not those of the
    names its value reads (a table computed from another is not a table of names to test)."""
    for node in _walk(ast.Expr(value)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value


def _constants_of(ctx: CheckContext, file: ConsumerFile) -> dict[str, ast.expr]:
    """The module-level names of a consumer module assigned once, with their values."""
    tree = consumer_tree(ctx, file)
    assigned: dict[str, ast.expr] = {}
    for node in getattr(tree, "body", ()):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            assigned[node.target.id] = node.value
    return assigned


def _constant(ctx: CheckContext, dotted: str) -> ast.expr | None:
    module, _, name = dotted.rpartition(".")
    file = next((f for f in ctx.files if f.module == module), None)
    return _constants_of(ctx, file).get(name) if file is not None else None


def _packages(ctx: CheckContext) -> frozenset[str]:
    return frozenset(getattr(getattr(ctx.index, "loader", None), "packages", ()) or ())


def _names_provider(ctx: CheckContext, text: str) -> bool:
    return any(re.search(rf"\b{re.escape(p)}\b", text) for p in _packages(ctx))


def _function(ctx: CheckContext, dotted: str) -> tuple[ConsumerFile, FunctionNode] | None:
    module, _, name = dotted.rpartition(".")
    for file in ctx.files:
        if file.module != module:
            continue
        tree = consumer_tree(ctx, file)
        for node in getattr(tree, "body", ()):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                return file, node
    return None


def _module_names_of(ctx: CheckContext, file: ConsumerFile) -> dict[str, str]:
    """The consumer module's top-level names -> dotted paths (its imports and definitions)."""
    tree = consumer_tree(ctx, file)
    return module_names(tree, file.module) if isinstance(tree, ast.Module) else {}
