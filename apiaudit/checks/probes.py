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
        text = "\n".join(file.lines[node.lineno - 1 : node.end_lineno])  # its lines (get_source_segment splits the file each time)
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
    # how it says a name is missing: by its result, by raising, or no telling
    sense: Literal["result", "raise", "unknown"] = "unknown"
    # what the call evaluates to on the release (truthy or not); None when undecided, or when
    # its result does not say which way "missing" goes
    truth: bool | None = None
    missing: str = ""  # fails: the first name of its table the release lacks
    tested: int = 0  # how many names it tests
    # whether the call raises on the release (a probe that raises when a name is missing,
    # `require_support()`); None when undecided, or when it does not raise that way
    raises: bool | None = None


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
    raising = on_missing is None and _raises_when_missing(found[1])
    sense: Literal["result", "raise", "unknown"] = "result" if on_missing is not None else "raise" if raising else "unknown"
    names = list(dict.fromkeys(_tested_names(ctx, dotted)))
    if sense == "unknown" or not names:
        return ProbeOutcome("undecided", sense)
    undecided = False
    for name in names:
        there = _exists(ctx, name)
        if there is False:
            return ProbeOutcome("fails", sense, on_missing, name, len(names), raises=True if raising else None)
        undecided = undecided or there is None
    if undecided:
        return ProbeOutcome("undecided", sense)
    return ProbeOutcome("passes", sense, None if on_missing is None else not on_missing, tested=len(names), raises=False if raising else None)


@record
class ProbeGate:
    """What the probes in front of every call of a consumer function (every construction of a
    class) decide on the release: `dead`, each call sits after a probe that fails; otherwise
    each sits after one, some undecided (`guard`: their text, for conditional findings)."""

    dead: bool
    guard: str = ""
    probes: tuple[tuple[str, int], ...] = ()  # (consumer path, line) of each probe in front


_Gate = tuple[str, bool | None, str, int]  # (probe, the test's expected truth or None: called to raise, text, line)
_SiteResult = Literal["dead", "undecided", "runs"]


def behind_probes(ctx: CheckContext, module: str, function: str) -> ProbeGate | None:
    """For code in `function` of `module` ("run", "Engine.__init__"): where every call of the
    top-level function it is in (every construction of its class) sits after a probe of the
    provider in its caller, in another module too (`if not supported(): return` first, or
    `require_support()` raising before `Engine()` is built), that code runs only where the
    probes pass. None where one call is not behind a probe or behind one that passes, where the
    name is used otherwise (passed on, named in a string: something else may call it), or where
    the consumer never calls it (the provider may). Memoised per consumer."""
    unit = function.split(".", 1)[0]
    if not unit or unit == "<module>" or not _has_probes(ctx):
        return None
    key = f"{module}.{unit}"
    if key in ctx.probe_gates:
        known = ctx.probe_gates[key]
        return known if isinstance(known, ProbeGate) else None
    ctx.probe_gates[key] = None  # a call from inside itself decides nothing
    result = _gate_of(ctx, key)
    ctx.probe_gates[key] = result
    return result


def _has_probes(ctx: CheckContext) -> bool:
    """Whether any consumer file reads like a probe of the provider (`probes_provider`'s test on
    its whole text): where none does, no code is behind a probe, and no file is parsed to say so."""
    key = "\x00has-probes"
    if key not in ctx.probe_gates:
        ctx.probe_gates[key] = any(_PROBING.search(f.source) and _names_provider(ctx, f.source) for f in ctx.files)
    return bool(ctx.probe_gates[key])


def _gate_of(ctx: CheckContext, dotted: str) -> ProbeGate | None:
    short = dotted.rpartition(".")[2]
    word = re.compile(rf"\b{re.escape(short)}\b")
    results: list[_SiteResult] = []
    guards: list[str] = []
    probes: list[tuple[str, int]] = []
    for file in ctx.files:
        if short not in file.source:
            continue
        tree = consumer_tree(ctx, file)
        if not isinstance(tree, ast.Module):
            return None
        names = module_names(tree, file.module)
        strings, uses = _read_uses(ctx, file, tree)
        if any(word.search(text) for text in strings):
            return None  # named in a string: something may build or call it by name
        for caller, site, by_name in _uses_of(uses, short):
            local = {**names, **_local_imports(caller, file.module)} if caller is not None else names
            if by_name and local.get(short) != dotted:
                continue  # another object of the same name (an attribute may be this one: kept)
            if site is None or caller is None:
                return None  # not a call (passed on, a base, a decorator), or a call at import
            gates = _gates_before(caller.body, site, local)
            result = _site_result(ctx, gates, guards)
            if result == "runs":
                return None
            results.append(result)
            probes.extend((file.path, line) for _, _, _, line in gates)
    if not results:
        return None
    if all(r == "dead" for r in results):
        return ProbeGate(True, probes=tuple(dict.fromkeys(probes)))
    return ProbeGate(False, " and ".join(dict.fromkeys(guards)), tuple(dict.fromkeys(probes)))


def failing_gates(ctx: CheckContext, file: ConsumerFile) -> Iterator[tuple[ast.stmt, str, ProbeOutcome, tuple[str, ...]]]:
    """(statement, probe text, outcome, consumer functions and classes it keeps from running)
    for each probe in front of the rest of a function's body that fails on the release
    (`require_support()` raising, `if not probe(): return`), where what follows calls consumer
    code that runs only behind probes (`behind_probes`: dead) and uses the provider."""
    if not _has_probes(ctx):
        return
    called = {m.group(1) for m in _STATEMENT_CALL.finditer(file.source)}
    if not any(_fails_somewhere(ctx, short) for short in called):
        return  # no statement here calls a probe that fails: nothing to parse
    tree = consumer_tree(ctx, file)
    if not isinstance(tree, ast.Module):
        return
    names = module_names(tree, file.module)
    for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        if not any(isinstance(n, ast.Name) and n.id in called for s in function.body for n in ast.walk(s)):
            continue
        local = {**names, **_local_imports(function, file.module)}
        for at, statement in enumerate(function.body):
            gate = _gate_statement(statement, local)
            if gate is None:
                continue
            probe, expect, text = gate
            found = outcome(ctx, probe)
            if found is None or found.verdict != "fails":
                continue
            if (expect is None and found.sense != "raise") or (expect is not None and found.truth in (None, expect)):
                continue
            kept = tuple(dict.fromkeys(u for s in function.body[at + 1:] for u in _called_units(ctx, s, local)))
            if kept:
                yield statement, text, found, kept


# A statement calling a function by its plain name, or testing such a call (`if not probe(`).
_STATEMENT_CALL = re.compile(r"^[ \t]+(?:if[ \t]+(?:not[ \t]+)?)?([A-Za-z_]\w*)\(", re.M)


def _fails_somewhere(ctx: CheckContext, short: str) -> bool:
    """Whether a consumer function of that name is a probe that fails on the release."""
    key = f"\x00fails:{short}"  # beside the functions' own outcomes, under keys no dotted name has
    if key not in ctx.probe_outcomes:
        held = ctx.probe_outcomes.get("\x00by-short")
        by_short: dict[str, list[str]] = held if isinstance(held, dict) else {}
        if not isinstance(held, dict):
            for dotted, function in ctx.functions.items():
                if function.owner is None:
                    by_short.setdefault(dotted.rpartition(".")[2], []).append(dotted)
            ctx.probe_outcomes["\x00by-short"] = by_short
        ctx.probe_outcomes[key] = any(getattr(outcome(ctx, d), "verdict", "") == "fails" for d in by_short.get(short, ()))
    return bool(ctx.probe_outcomes[key])


def _gate_statement(statement: ast.stmt, names: dict[str, str]) -> tuple[str, bool | None, str] | None:
    """(probe, the truth the rest needs or None: called to raise, text) of a statement that
    stops the rest of its block unless a consumer call says so."""
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) and isinstance(statement.value.func, ast.Name):
        called = names.get(statement.value.func.id)
        return (called, None, ast.unparse(statement.value)) if called else None
    if isinstance(statement, ast.If) and statement.body and isinstance(statement.body[-1], (ast.Return, ast.Raise)):
        tested = _tested_call(statement.test, names)
        return (tested[0], not tested[1], tested[2]) if tested is not None else None
    return None


def _called_units(ctx: CheckContext, statement: ast.stmt, names: dict[str, str]) -> Iterator[str]:
    """Consumer functions and classes a statement calls by name that run only behind probes
    that fail, and use the provider."""
    for node in ast.walk(statement):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        dotted = names.get(node.func.id, "")
        module, _, short = dotted.rpartition(".")
        gate = behind_probes(ctx, module, short) if module else None
        if gate is not None and gate.dead and any(u.function.split(".", 1)[0] == short for f in ctx.files if f.module == module for u in f.uses):
            yield short


_Use = tuple[str, FunctionNode | None, ast.Call | None, bool]  # (name, function it is in, the call it makes, a plain name)


def _read_uses(ctx: CheckContext, file: ConsumerFile, tree: ast.Module) -> tuple[list[str], list[_Use]]:
    """A module's string literals and every name or attribute it reads, with the function each
    is in (None: at import, a class body, a decorator or a base), the call it makes (None when
    it is not called there) and whether it is a plain name (else an attribute: `mod.Engine(...)`);
    annotations left out (a type named, nothing run). Read once a file."""
    key = f"\x00uses:{file.path}"  # beside the units' gates, under keys no dotted name has
    held = ctx.probe_gates.get(key)
    if isinstance(held, tuple):
        return held
    calls = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    owner: dict[int, FunctionNode] = {}
    for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        for statement in function.body:
            for node in ast.walk(statement):
                owner[id(node)] = function  # the innermost function wins: walked after its outer one
    annotations = {id(n) for a in _annotations(tree) for n in ast.walk(a)}
    docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}  # prose
    strings: list[str] = []
    uses: list[_Use] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings:
                strings.append(node.value)
        elif id(node) in annotations:
            continue
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            uses.append((node.id, owner.get(id(node)), calls.get(id(node)), True))
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            uses.append((node.attr, owner.get(id(node)), calls.get(id(node)), False))
    ctx.probe_gates[key] = (strings, uses)
    return strings, uses


def _uses_of(uses: list[_Use], short: str) -> Iterator[tuple[FunctionNode | None, ast.Call | None, bool]]:
    for name, caller, call, by_name in uses:
        if name == short:
            yield caller, call, by_name


def _annotations(tree: ast.Module) -> Iterator[ast.expr]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.returns is not None:
                yield node.returns
            arguments = node.args
            for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg):
                if arg is not None and arg.annotation is not None:
                    yield arg.annotation
        elif isinstance(node, ast.AnnAssign):
            yield node.annotation


def _local_imports(function: FunctionNode, module: str) -> dict[str, str]:
    """Names a function imports in its body (`from pkg.compat import check` before it calls it)."""
    return module_names(ast.Module(body=[n for n in ast.walk(function) if isinstance(n, (ast.Import, ast.ImportFrom))], type_ignores=[]), module)


def _gates_before(body: list[ast.stmt], site: ast.AST, names: dict[str, str]) -> list[_Gate]:
    """The consumer calls in front of `site` in a block, at every level down to it: a test that
    leaves the block (`if not probe(): return`), a test whose body holds it (`if probe():`), a
    call as a statement (`require_support()`, which may raise)."""
    line = getattr(site, "lineno", 0)
    gates: list[_Gate] = []
    for statement in body:
        if statement.lineno > line:
            break
        inside = statement.lineno <= line <= (statement.end_lineno or statement.lineno)
        if isinstance(statement, ast.If):
            gate = _tested_call(statement.test, names)
            if inside:
                branch = statement.body if any(n is site for s in statement.body for n in ast.walk(s)) else statement.orelse
                if gate is not None:
                    gates.append((gate[0], gate[1] == (branch is statement.body), gate[2], statement.lineno))
                return gates + _gates_before(branch, site, names)
            if gate is not None and statement.body and isinstance(statement.body[-1], (ast.Return, ast.Raise)):
                gates.append((gate[0], not gate[1], gate[2], statement.lineno))
            continue
        if inside:
            for child in ("body", "orelse", "finalbody"):
                block = getattr(statement, child, None)
                if isinstance(block, list) and any(n is site for s in block for n in ast.walk(s)):
                    return gates + _gates_before(block, site, names)
            return gates
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) and isinstance(statement.value.func, ast.Name):
            called = names.get(statement.value.func.id)
            if called:
                gates.append((called, None, ast.unparse(statement.value), statement.lineno))
    return gates


def _tested_call(test: ast.expr, names: dict[str, str]) -> tuple[str, bool, str] | None:
    """(consumer function, whether its result is tested truthy, text) of `if f(...)` / `if not f(...)`."""
    truthy = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, truthy = test.operand, not truthy
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id in names:
        return names[test.func.id], truthy, ast.unparse(test)
    return None


def _site_result(ctx: CheckContext, gates: list[_Gate], guards: list[str]) -> _SiteResult:
    """Dead where a probe in front fails; undecided where one cannot be decided (its text added
    to `guards`); runs where no probe is in front or each one passes."""
    undecided = False
    for probe, expect, text, _ in gates:
        found = outcome(ctx, probe)
        if found is None:
            continue  # not a probe: run-time data
        if expect is None and found.sense != "raise":
            continue  # called as a statement for what it does, not to raise: decides nothing here
        decided = found.raises if expect is None else found.truth
        if decided is None:
            undecided = True
            guards.append(f"{text} (a probe of the provider, before every call)")
        elif (expect is None and decided) or (expect is not None and decided != expect):
            return "dead"
    return "undecided" if undecided else "runs"


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


def _raises_when_missing(node: FunctionNode) -> bool:
    """Whether the probe raises when a name is missing: a `raise` under a test or in a handler
    of its body, and no value returned (`require_support()`: called for what it raises)."""
    if any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(node)):
        return False
    return any(isinstance(n, ast.Raise) for statement in node.body if isinstance(statement, (ast.If, ast.Try)) for n in ast.walk(statement))


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
