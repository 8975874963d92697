"""What a provider definition's own source says about its deprecation, read from the `ast` node
Griffe parses anyway (`FactsExtension` records it), so forecasting never parses a provider file
a second time.

A definition's `Marks`: its decorators that can deprecate it or rewrite its keywords (PEP 702's
`deprecated`, and every decorator that is not a builtin: `deprecate_kwargs("old")`, a
`deprecate_kwarg("old", new_name="new")` whose wrapper renames a keyword, with its call's
arguments as far as they are literals; `provider.keyword_rewrites` reads what the wrapper
does), whether its body
always warns with a deprecation category, which parameters it warns about when passed, and
whether it warns at all (what makes a provider decorator factory a deprecating one). Names are
resolved through the module's own import bindings; what they resolve to is the forecaster's
business (`apiaudit.checks.deprecations`).
"""

from __future__ import annotations

import ast
import builtins

from apiaudit.infra.astutil import absolute_import, dotted_text
from apiaudit.infra.frozen import record

CATEGORIES = ("DeprecationWarning", "FutureWarning", "PendingDeprecationWarning")


@record
class DecoratorMark:
    """One decorator that may deprecate the definition (or some of its keywords), or rewrite the
    keywords it is called with."""

    target: str  # dotted path of what is called or applied, through the module's imports
    is_call: bool
    # The call's arguments in order: each positional one's string literal (None: any other
    # value), each keyword one's (name, string literal or None); `unpacks`: a `*x`/`**x` is there
    positional: tuple[str | None, ...] = ()
    keywords: tuple[tuple[str, str | None], ...] = ()
    unpacks: bool = False
    message: str = "deprecated"  # `@deprecated("...")`'s message

    @property
    def strings(self) -> tuple[str, ...]:
        """Its positional string literals (keyword names, for a `deprecate_kwargs("old")`)."""
        return tuple(s for s in self.positional if s)

    @property
    def keyword_string(self) -> str | None:
        """Its first keyword argument given as a string (a message)."""
        return next((value for _, value in self.keywords if value), None)


@record
class Marks:
    decorators: tuple[DecoratorMark, ...] = ()
    whole: str | None = None  # the message when the body always warns
    keywords: tuple[tuple[str, str], ...] = ()  # (parameter, message) warned about when passed
    warns: bool = False  # the body warns with a deprecation category somewhere

    def __bool__(self) -> bool:
        return bool(self.decorators or self.whole or self.keywords or self.warns)


def may_warn(source: str | None) -> bool:
    """Whether a module's text can hold a deprecation warning (unknown text: it may)."""
    return source is None or any(category in source for category in CATEGORIES)


def module_imports(module: ast.Module, name: str, is_package: bool) -> dict[str, str]:
    """Names the module's import statements bind at module level (inside if/try too), to dotted paths."""
    package = name if is_package else name.rpartition(".")[0]
    out: dict[str, str] = {}
    pending: list[ast.stmt] = list(module.body)
    while pending:
        stmt = pending.pop(0)
        if isinstance(stmt, ast.ImportFrom):
            base = absolute_import(package, stmt.module, stmt.level)
            for alias in stmt.names:
                out[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                out[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(stmt, ast.If):
            pending[:0] = stmt.body + stmt.orelse
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":  # `try/except*` (3.11+)
            clauses = [getattr(stmt, "body", []), *(h.body for h in getattr(stmt, "handlers", [])), getattr(stmt, "orelse", []), getattr(stmt, "finalbody", [])]
            pending[:0] = [s for clause in clauses for s in clause]
    return out


def marks_of(
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, imports: dict[str, str], module: str, body_may_warn: bool
) -> Marks:
    """The `Marks` of one definition; `body_may_warn` False (the module never names a deprecation
    category) skips reading its body."""
    decorators = tuple(d for d in (_decorator_mark(d, imports, module) for d in node.decorator_list) if d is not None)
    if not body_may_warn or isinstance(node, ast.ClassDef):
        return Marks(decorators, warns=body_may_warn and _warns(node) is not None)
    whole, keywords = _function_facts(node)
    return Marks(decorators, whole, tuple(sorted(keywords.items())), _warns(node) is not None)


def _decorator_mark(decorator: ast.expr, imports: dict[str, str], module: str) -> DecoratorMark | None:
    call = decorator if isinstance(decorator, ast.Call) else None
    text = dotted_text(call.func if call else decorator)
    if text is None:
        return None
    first, _, rest = text.partition(".")
    if first not in imports and hasattr(builtins, first):
        return None  # `@property`, `@staticmethod`: a builtin neither deprecates nor rewrites
    head = imports.get(first, f"{module}.{first}")
    target = f"{head}.{rest}" if rest else head
    if call is None:
        return DecoratorMark(target, False)
    positional = tuple(_string(a) for a in call.args)
    keywords = tuple((k.arg, _string(k.value)) for k in call.keywords if k.arg is not None)
    unpacks = any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)
    return DecoratorMark(target, True, positional, keywords, unpacks, _message(call))


def _string(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _message(call: ast.Call) -> str:
    first = call.args[0] if call.args else None
    if isinstance(first, ast.Call) and first.args:  # warnings.warn(DeprecationWarning(msg))
        first = first.args[0]
    text = _string(first) if first is not None else None
    if text is None and isinstance(first, ast.JoinedStr):
        text = "".join(v.value for v in first.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    return (text or "deprecated").strip()


def _is_deprecation_warn(call: ast.Call) -> bool:
    """`warnings.warn(msg, DeprecationWarning)` / `warn(msg, category=FutureWarning)`."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name != "warn":
        return False
    candidates = list(call.args[1:2]) + [k.value for k in call.keywords if k.arg == "category"]
    if call.args and isinstance(call.args[0], ast.Call):  # warnings.warn(DeprecationWarning(msg))
        candidates.append(call.args[0].func)
    for c in candidates:
        label = c.attr if isinstance(c, ast.Attribute) else c.id if isinstance(c, ast.Name) else None
        if label in CATEGORIES:
            return True
    return False


def warning_in(body: list[ast.stmt]) -> str | None:
    """The message of a deprecation warning the block gives (`warnings.warn(msg, DeprecationWarning)`)."""
    for stmt in body:
        call = _warns(stmt)
        if call is not None:
            return _message(call)
    return None


def _warns(node: ast.AST) -> ast.Call | None:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and _is_deprecation_warn(sub):
            return sub
    return None


def _tested_names(test: ast.expr) -> tuple[set[str], set[str]]:
    """(variables, strings) a condition tests for *being passed*: `x`, `x is not None`, `"x" in kwargs`,
    `kwargs.get("x")` (and `is not None`), joined by and/or. A test of a value (`x == "slow"`)
    deprecates a value, not the keyword, and names nothing."""
    names: set[str] = set()
    strings: set[str] = set()

    def lookup(node: ast.expr) -> str | None:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "pop") and node.args:
            return _string(node.args[0])
        return None

    def visit(node: ast.expr) -> None:
        if isinstance(node, ast.BoolOp):
            for value in node.values:
                visit(value)
        elif isinstance(node, ast.Name):
            names.add(node.id)
        elif (looked_up := lookup(node)) is not None:
            strings.add(looked_up)
        elif isinstance(node, ast.Compare) and len(node.ops) == 1:
            op, right, left = node.ops[0], node.comparators[0], node.left
            if isinstance(op, ast.IsNot) and isinstance(right, ast.Constant) and right.value is None:
                if isinstance(left, ast.Name):
                    names.add(left.id)
                elif (looked_up := lookup(left)) is not None:
                    strings.add(looked_up)
            elif isinstance(op, ast.In) and (text := _string(left)) is not None:
                strings.add(text)

    visit(test)
    return names, strings


def _function_facts(func: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str | None, dict[str, str]]:
    """(message if the body always warns, {keyword: message} for warnings under a test of a parameter)."""
    params = {a.arg for a in (*func.args.args, *func.args.kwonlyargs)} - {"self", "cls"}
    keywords: dict[str, str] = {}
    for stmt in func.body:
        if isinstance(stmt, ast.If):
            warned = _warns(stmt)
            if warned is not None:
                names, strings = _tested_names(stmt.test)
                # A parameter tested by name, or a string looked up in **kwargs (a keyword it no longer declares).
                tested = (names & params) | (strings if func.args.kwarg is not None else set())
                for name in sorted(tested):
                    keywords.setdefault(name, _message(warned))
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and _is_deprecation_warn(stmt.value):
            return _message(stmt.value), keywords
    return None, keywords
