"""The package's shape (issue 23): imports flow one way, and the root shows the stages.

Read statically: every `import` in apiaudit/, at module level or inside a function (a lazy
import is still a dependency), except those under `if TYPE_CHECKING:`; in the provider stage
those count too (a type checker follows them, and one edit makes them run).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "apiaudit"


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(tree: ast.AST, *, type_checking: bool = False):
    """Every import statement under `tree`; those under `if TYPE_CHECKING:` only with `type_checking`."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node  # an `else:` branch's import too, not only its nested ones
            continue
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test) and not type_checking:
                stack.extend(child.orelse)
            else:
                stack.append(child)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _graph(*, type_checking: bool = False) -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text()), type_checking=type_checking):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                # `from pkg import sub` depends on the submodule, not on the package's __init__
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circles_in_the_package():
    assert _cycles(_graph()) == []


# Where no circle passes even through imports under `if TYPE_CHECKING:`. Elsewhere one remains:
# the package root's lazy public API (`apiaudit/__init__.py`) names, for type checkers only,
# modules that import the root back.
STRICT = "apiaudit.provider"


def test_no_import_circle_through_the_provider_stage_type_checking_imports_included():
    through_provider = [
        circle for circle in _cycles(_graph(type_checking=True)) if any(m == STRICT or m.startswith(STRICT + ".") for m in circle)
    ]
    assert through_provider == []


def test_imports_for_type_checkers_are_read_only_when_asked():
    tree = ast.parse("if TYPE_CHECKING:\n    import a\nelse:\n    import b\ndef f():\n    import c\n")
    assert sorted(n.names[0].name for n in _imports(tree)) == ["b", "c"]
    assert sorted(n.names[0].name for n in _imports(tree, type_checking=True)) == ["a", "b", "c"]


def test_the_cycle_finder_finds_a_circle_through_lazy_imports():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_root_holds_the_seam_and_the_values_every_stage_reads():
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert root == ["__init__.py", "__main__.py", "audit.py", "engine.py", "errors.py", "evidence.py", "findings.py"]


def test_one_meaning_per_module_name():
    names = [p.stem for p in PACKAGE.rglob("*.py")]
    assert "facts" not in names  # evidence (a check), extension (Griffe), config (the ML model)
    # "model" is the ML model a job loads (apiaudit/model/); each stage's values are records.py
    assert not any(p.name == "model.py" for p in PACKAGE.rglob("*.py"))
    assert {p.parent.name for p in PACKAGE.rglob("records.py")} == {"consumer", "provider", "recipes"}


# The flow, earliest first: a module may import its own stage and earlier ones only.
# (The cache's data format serves every stage; whole scans are cached from their sources.)
FLOW = (
    "errors", "infra", "cache.codec", "evidence", "findings", "sources", "cache.scans", "recipes", "model",
    "provider", "consumer", "checks", "engine", "policy", "report", "audit", "fixes", "gate", "matrix",
    "impact", "trainer_env", "runner", "action", "cli", "__main__",
)  # fmt: skip


def _stage(module: str) -> int | None:
    rest = module.split(".", 1)[1] if "." in module else ""
    for i, stage in reversed(list(enumerate(FLOW))):
        if rest == stage or rest.startswith(stage + "."):
            return i
    return None


def test_imports_flow_from_earlier_stages_only():
    backwards = [
        f"{module} -> {target}"
        for module, targets in _graph().items()
        for target in targets
        if None not in (_stage(module), _stage(target)) and _stage(target) > _stage(module)  # type: ignore[operator]
    ]
    assert sorted(backwards) == []
    assert {module.split(".")[1] for module in _modules() if module.count(".") == 1} - {f.split(".")[0] for f in FLOW} == set()


def test_the_consumer_walk_is_split_along_its_seams():
    walk = PACKAGE / "consumer" / "walk"
    parts = {p.stem for p in walk.glob("*.py")} - {"__init__"}
    assert {"scopes", "state", "statements", "evaluate", "decide", "record", "definitions"} <= parts
    sizes = {p.name: len(p.read_text().splitlines()) for p in [*walk.glob("*.py"), PACKAGE / "consumer" / "visitor.py"]}
    assert max(sizes.values()) <= 500, sizes


def test_the_provider_index_is_split_by_concern():
    index = PACKAGE / "provider" / "index"
    parts = {p.stem for p in index.glob("*.py")} - {"__init__"}
    assert {"memo", "resolve", "mro", "inference", "signatures", "membership", "moves"} <= parts
    sizes = {p.name: len(p.read_text().splitlines()) for p in index.glob("*.py")}
    assert max(sizes.values()) <= 500, sizes
