"""Find a value for a missing parameter in the call's scope.

A candidate is one of (the issue's three kinds, nothing cleverer):
  - a same-named variable: a parameter or local of an enclosing function, or a module-level name;
  - a module constant whose name ends in the parameter's name (``KV_BLOCK_SIZE`` for ``block_size``);
  - an attribute of a config object already in scope: ``<...config>.<param>`` read in an
    enclosing function, or ``x.<param>`` where ``x = SomeConfig(<param>=...)`` there.
A fix uses a candidate only when exactly one fits; otherwise the candidates are listed.
"""

from __future__ import annotations

import re

import libcst as cst

from apiaudit.fixes.codemods import FileIndex, terminal_name
from apiaudit.infra.frozen import record

_CONFIG_NAME = re.compile(r"(config|cfg|conf)$", re.IGNORECASE)
_NESTED_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


@record
class Candidate:
    expression: str
    why: str  # "same-named variable", "module constant", "attribute of a config object in scope"

    def describe(self) -> str:
        return f"{self.expression} ({self.why})"


def _target_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for element in target.elements for n in _target_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return []


class _Walker(cst.CSTVisitor):
    """Names bound in one function body (not nested scopes), attribute reads, config constructions."""

    def __init__(self, root: cst.CSTNode):
        self.root = root
        self.bound: set[str] = set()
        self.attribute_reads: list[cst.Attribute] = []
        self.constructed: list[tuple[str, cst.Call]] = []  # (name, the call assigned to it)

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is not self.root and isinstance(node, _NESTED_SCOPES):
            if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                self.bound.add(node.name.value)
            return False
        return super().on_visit(node)

    def visit_Param(self, node: cst.Param) -> None:
        self.bound.add(node.name.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self.bound.update(_target_names(target.target))
            if isinstance(target.target, cst.Name) and isinstance(node.value, cst.Call):
                self.constructed.append((target.target.value, node.value))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.bound.update(_target_names(node.target))
        if isinstance(node.target, cst.Name) and isinstance(node.value, cst.Call):
            self.constructed.append((node.target.value, node.value))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.bound.update(_target_names(node.target))

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.bound.update(_target_names(node.target))

    def visit_For(self, node: cst.For) -> None:
        self.bound.update(_target_names(node.target))

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self.bound.update(_target_names(node.asname.name))

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is not None:
            self.bound.update(_target_names(node.asname.name))
        else:
            self.bound.add(node.evaluated_name.split(".")[0])

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.attribute_reads.append(node)


def _walk(root: cst.CSTNode) -> _Walker:
    walker = _Walker(root)
    root.visit(walker)
    return walker


def scope_candidates(index: FileIndex, call: cst.Call, name: str) -> list[Candidate]:
    """Every candidate value for parameter `name` at `call`, in a stable order, without duplicates."""
    functions = index.functions_around(call)
    function_walks = [_walk(f) for f in functions]
    module_walk = _walk(index.module)
    candidates: list[Candidate] = []

    if any(name in w.bound for w in function_walks) or name in module_walk.bound:
        candidates.append(Candidate(name, "same-named variable"))

    suffix = name.upper()
    for bound in sorted(module_walk.bound):
        if bound != name and bound.isupper() and (bound == suffix or bound.endswith("_" + suffix)):
            candidates.append(Candidate(bound, "module constant"))

    config_values: dict[str, str] = {}  # candidate expression -> the value it was built with
    for walk in function_walks:
        for attribute in walk.attribute_reads:
            if attribute.attr.value == name and _CONFIG_NAME.search(terminal_name(attribute.value) or ""):
                candidates.append(Candidate(index.code(attribute), "attribute of a config object in scope"))
        for variable, construction in walk.constructed:
            if not _CONFIG_NAME.search(variable):
                continue
            for arg in construction.args:
                if arg.keyword is not None and arg.keyword.value == name:
                    expression = f"{variable}.{name}"
                    config_values[expression] = index.code(arg.value)
                    candidates.append(Candidate(expression, "attribute of a config object in scope"))

    unique: list[Candidate] = []
    for candidate in candidates:
        if all(candidate.expression != c.expression for c in unique):
            unique.append(candidate)
    # `cfg.block_size` built from `BLOCK_SIZE` is the same value as the constant: one candidate.
    plain = {c.expression for c in unique}
    return [c for c in unique if config_values.get(c.expression) not in plain]
