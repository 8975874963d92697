"""Deprecation forecast: calls that still work today but use what the provider marks as deprecated.

A provider callable is deprecated when it (or its class) is decorated with PEP 702's
`deprecated` (`typing_extensions` or `warnings`), or when its body warns with
`DeprecationWarning`/`FutureWarning` unconditionally. A keyword is deprecated when the body
warns only under a test of that parameter (`if old is not None: warnings.warn(...)`), or when
a decorator from the provider that itself warns so is given the keyword's name as a string
(a `deprecate_kwargs("old")`-style decorator). Each such use is a `deprecated-use` warning;
`apiaudit matrix` says in which later release the name or keyword is gone.

The provider's files are read with `ast` only (never imported); resolution goes through the
provider index, so re-exports are followed as for every other check.
"""

from __future__ import annotations

import ast
from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable

from apiaudit import cachefmt
from apiaudit.astutil import dotted_text
from apiaudit.consumer.model import ConsumerFile, Site, Use
from apiaudit.facts import DeprecationFacts
from apiaudit.findings import Finding, Severity

RULE = "deprecated-use"
_PEP702_MODULES = ("typing_extensions", "warnings")
_CATEGORIES = ("DeprecationWarning", "FutureWarning", "PendingDeprecationWarning")


@dataclass(frozen=True)
class Deprecation:
    """What the provider says is deprecated about one callable."""

    whole: str | None = None  # the message when the callable itself is deprecated
    keywords: tuple[tuple[str, str], ...] = ()  # (keyword, message)


class _Module:
    """One provider file parsed with ast, with the names its imports bind."""

    def __init__(self, tree: ast.Module, module: str):
        self.tree = tree
        self.module = module
        self.imports: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = _absolute(module, node.module, node.level)
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    self.imports[alias.asname or alias.name.split(".")[0]] = alias.asname and alias.name or alias.name.split(".")[0]

    def dotted(self, expr: ast.expr) -> str | None:
        """The dotted path an expression names, through this module's imports (None: not a name)."""
        text = dotted_text(expr)
        if text is None:
            return None
        first, _, rest = text.partition(".")
        own = self.module[: -len(".__init__")] if self.module.endswith(".__init__") else self.module
        head = self.imports.get(first, f"{own}.{first}")
        return f"{head}.{rest}" if rest else head


def _absolute(module: str, name: str | None, level: int) -> str:
    if level == 0:
        return name or ""
    # A module file's own package is its dotted name minus the last part (packages: see _module_name).
    base = module.split(".")[: len(module.split(".")) - level]
    return ".".join(base + ([name] if name else []))


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
    """`warnings.warn(msg, DeprecationWarning)` / `warn(msg, category=FutureWarning)` / `logger.warning_once`-free."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name != "warn":
        return False
    candidates = list(call.args[1:2]) + [k.value for k in call.keywords if k.arg == "category"]
    if call.args and isinstance(call.args[0], ast.Call):  # warnings.warn(DeprecationWarning(msg))
        candidates.append(call.args[0].func)
    for c in candidates:
        label = c.attr if isinstance(c, ast.Attribute) else c.id if isinstance(c, ast.Name) else None
        if label in _CATEGORIES:
            return True
    return False


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


_MODULES_KEPT = 64


class Forecaster:
    """Deprecations of provider callables, found from the index's locations; cached per file and symbol."""

    def __init__(self, index, provider_root: Path, packages: tuple[str, ...]):
        self.index = index
        self.root = Path(provider_root)
        self.packages = packages
        # A few parsed provider modules at a time: a large consumer asks about hundreds of them,
        # and each tree is only needed while its definitions are read (answers are kept in _facts).
        self._modules: OrderedDict[str, _Module | None] = OrderedDict()
        self._facts: dict[str, tuple[str, Deprecation] | None] = {}
        self._warning_decorators: dict[str, bool] = {}

    def _module(self, relative: str) -> _Module | None:
        if relative in self._modules:
            self._modules.move_to_end(relative)
        else:
            while len(self._modules) >= _MODULES_KEPT:
                self._modules.popitem(last=False)
            path = self.root / relative
            try:
                tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
            except (OSError, SyntaxError, ValueError):
                self._modules[relative] = None
            else:
                module = relative[: -len(".py")].replace("/", ".")
                if module.endswith(".__init__"):
                    module = module[: -len(".__init__")] + ".__init__"  # relative imports count from the package
                self._modules[relative] = _Module(tree, module)
        return self._modules[relative]

    def _definition(self, dotted: str):
        """(module, ast node) of the provider definition behind `dotted`, or None."""
        from apiaudit.provider.model import Found

        resolution = self.index.resolve(dotted)
        if not isinstance(resolution, Found) or not resolution.symbol.location:
            return None
        relative, _, line = resolution.symbol.location.rpartition(":")
        module = self._module(relative)
        if module is None or not line.isdigit():
            return None
        name = resolution.symbol.path.rsplit(".", 1)[-1]
        for node in ast.walk(module.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
                if node.lineno == int(line) or any(d.lineno == int(line) for d in node.decorator_list):
                    return resolution.symbol, module, node
        return None

    def _decorator_warns(self, dotted: str) -> bool:
        """Whether a provider decorator factory's code warns with a deprecation category."""
        if dotted not in self._warning_decorators:
            self._warning_decorators[dotted] = False  # a decorator that decorates itself stops here
            found = self._definition(dotted)
            self._warning_decorators[dotted] = bool(found and _warns(found[2]))
        return self._warning_decorators[dotted]

    def _decorators(self, module: _Module, node) -> tuple[str | None, dict[str, str]]:
        whole: str | None = None
        keywords: dict[str, str] = {}
        for decorator in node.decorator_list:
            call = decorator if isinstance(decorator, ast.Call) else None
            target = module.dotted(call.func if call else decorator)
            if target is None:
                continue
            if target.rsplit(".", 1)[-1] == "deprecated" and target.rsplit(".", 1)[0] in _PEP702_MODULES:
                whole = _message(call) if call else "deprecated"
            elif call is not None and call.args and target.split(".")[0] in self.packages:
                names = [s for s in (_string(a) for a in call.args) if s]
                if names and self._decorator_warns(target):
                    extra = next((_string(k.value) for k in call.keywords if _string(k.value)), None)
                    for name in names:
                        keywords[name] = extra or f"'{name}' is deprecated"
        return whole, keywords

    def facts(self, dotted: str) -> tuple[str, Deprecation] | None:
        """(defining path, Deprecation) of what `dotted` names, or None when nothing about it is deprecated."""
        if dotted in self._facts:
            return self._facts[dotted]
        # Plain values, kept in the index memo: a warm scan answers them from the index cache
        # instead of parsing provider files again (they lie in files the index already read).
        memo = getattr(self.index, "memo", None)
        key = ("deprecation", dotted)
        if memo is not None and key in memo:
            self._facts[dotted] = memo[key]
            return memo[key]
        result = self._compute(dotted)
        self._facts[dotted] = result
        if memo is not None:
            memo[key] = result
        return result

    def _compute(self, dotted: str) -> tuple[str, Deprecation] | None:
        found = self._definition(dotted)
        result = None
        if found is not None:
            symbol, module, node = found
            whole, keywords = self._decorators(module, node)
            if isinstance(node, ast.ClassDef):
                init = next((n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "__init__"), None)
                if init is not None:
                    init_whole, init_keywords = self._decorators(module, init)
                    body_whole, body_keywords = _function_facts(init)
                    whole = whole or init_whole or body_whole
                    keywords = {**body_keywords, **init_keywords, **keywords}
            else:
                body_whole, body_keywords = _function_facts(node)
                whole = whole or body_whole
                keywords = {**body_keywords, **keywords}
            if whole or keywords:
                result = (symbol.path, Deprecation(whole, tuple(sorted(keywords.items()))))
        return result


def _source(lines: tuple[str, ...], site: Site) -> str | None:
    if not lines or site.line < 1:
        return None
    end = site.end_line or site.line
    return "\n".join(lines[site.line - 1 : end]) or None


def _calls(use: Use) -> Iterable[tuple[str, Use, int]]:
    """(dotted path called, use, step index) for each call of a provider name along a chain of attributes."""
    if use.root.kind != "symbol":
        return
    dotted = use.root.name
    for i, step in enumerate(use.steps):
        if step.kind == "attr" and step.name:
            dotted = f"{dotted}.{step.name}"
        elif step.kind == "call" and step.call is not None:
            if step.check:
                yield dotted, use, i
            return
        else:
            return


def find_deprecations(forecaster: Forecaster, file: ConsumerFile, consumer: str) -> list[Finding]:
    """A `deprecated-use` warning for each call of a deprecated provider callable or keyword in
    one consumer file (`forecaster`: one per release, shared by every file of a scan)."""
    out: list[Finding] = []
    if file.error is None:
        for use in file.uses:
            for dotted, _, i in _calls(use):
                known = forecaster.facts(dotted)
                if known is None:
                    continue
                path, deprecation = known
                call = use.steps[i].call
                short = path.rsplit(".", 1)[-1] if not path.endswith(".__init__") else path.rsplit(".", 2)[-2]
                at = Finding(
                    rule=RULE, severity=Severity.WARNING, consumer=consumer, path=file.path, line=use.site.line,
                    column=use.site.column, end_line=use.site.end_line, end_column=use.site.end_column, callee=path,
                    param=None, message="", source=_source(file.lines, use.site),
                )  # fmt: skip
                if deprecation.whole:
                    out.append(replace(
                        at, message=f"{short}() is deprecated: {deprecation.whole}",
                        advice="Move off it before the provider release that removes it (apiaudit matrix says which).",
                        facts=DeprecationFacts("callable"),
                    ))  # fmt: skip
                used = set(call.keyword_names()) if call else set()
                for keyword, message in deprecation.keywords:
                    if keyword in used:
                        out.append(replace(
                            at, param=keyword, message=f"{short}(): the keyword '{keyword}' is deprecated: {message}",
                            advice=f"Stop passing {keyword}=... before the release that removes it.",
                            facts=DeprecationFacts("keyword"),
                        ))  # fmt: skip
    return out


cachefmt.register(Deprecation)  # its facts are kept in the provider index cache
