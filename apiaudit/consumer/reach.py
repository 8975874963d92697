"""Which consumer modules run: the modules nothing reachable imports and no user-facing import
path reaches (docs/rules.md, "Modules nothing runs").

A module is reachable from the roots through the edges each file's reading records
(`ConsumerFile.reaches`: what its import statements on live lines name, and dotted consumer
names its string literals hold), importing a module running its packages' `__init__` first.
The roots are what runs without being imported by the consumer itself:

- in a library, every user-facing module: one a user may import by its path, whose dotted
  path has no private part (`_name`) and no per-release copy (a package named with a release
  number of two parts or more: `vllm_v0_6/`, `vllm_v_0_5_4/`, `compat_2_1/`; a module file so
  named, `connector_v1_085.py`, stays user-facing: a user may name it in a provider's
  configuration);
- in a plugin (a distribution declaring entry points in a group other than console or GUI
  scripts: `vllm.general_plugins`, `pytest11`), only what its entry points run: the provider
  loads the plugin through them, and a module neither they nor what they name reach (a legacy
  worker a platform no longer names, a runner kept from an older provider) runs only if
  something outside imports it;
- `__main__` modules, modules written to be run (`if __name__ == "__main__":`), test files
  (`test_*.py`, `*_test.py`, `conftest.py`) and loose scripts;
- the modules the distribution's entry points name (`*.dist-info/entry_points.txt`, or
  `[project.scripts]`/`[project.entry-points]` of a `pyproject.toml` beside the package);
- the modules its documentation or examples name (the wheel's long description, a README,
  `docs/` or `examples/` beside the package): a user is told to import them.

So a library shipping `pkg/vllm_v0_6/`, `pkg/vllm_v0_7/` (older provider internals, one
folder per release it once supported) that no module imports any more on a live line has
those folders' findings conditional, while `pkg/contrib/tool.py`, which nothing imports but a
user may, is audited as any module. A tree given as a subpackage (`only`) is all reachable.
"""

from __future__ import annotations

import ast
import configparser
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from apiaudit.consumer.records import ConsumerFile, DeadCode, EntryPoint, NamedOnlyInDeadCode, ReachedWhen, RunsWhen, Site
from apiaudit.infra.astutil import breadth_first, descendants, unparse
from apiaudit.sources.base import CodeTree

# A release number in a module or package name: `0_6`, `v0_6_3`, `2_1` (two parts or more).
_RELEASE = re.compile(r"(?<![0-9])[0-9]+_[0-9]+")
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?::[A-Za-z_][\w.]*)?$")
_TESTS = re.compile(r"^(?:test_.*|.*_test|conftest)$")


def named_modules(
    tree: ast.Module, top: str, source: str | None = None, release: str | None = None, skip: Collection[tuple[int, int]] = (),
    dead: Sequence[DeadCode] = (),
) -> tuple[str, ...]:
    """Dotted names under the package `top` that the module's string literals hold
    (`"pkg.ext.Worker"`, `"pkg.cli:main"`): modules a registry, an injection keyword or
    `importlib.import_module` may run. `source`, the module's text: no walk where no quote opens
    on `top` (`"pkg.`, or `"pkg"` that an implicit concatenation continues). In a version table
    (a dict whose keys are all release numbers: `{"0.9.2": "pkg.copied_scheduler_v0_9", ...}`),
    only the entries for the audited `release` are edges; the others run on other releases.
    `skip`: the (line, column) of strings that name a module on a condition only
    (`conditional_names`); `dead`: the statements that never run on the release (the walk's),
    whose strings name nothing."""
    if source is not None and not _quotes_top(top, source):
        return ()
    prefix = f"{top}."
    found: dict[str, None] = {}
    elsewhere = _other_releases_entries(tree, release) if release else set()
    for node in ast.walk(tree):
        if id(node) in elsewhere:
            continue
        if isinstance(node, ast.Constant) and (node.lineno, node.col_offset) not in skip:
            module = _dotted_name(node, prefix)
            if module is not None and not any(d.first <= node.lineno <= d.last for d in dead):
                found[module] = None
    return tuple(found)


def _dotted_name(node: ast.AST, prefix: str) -> str | None:
    """The dotted name a string literal holds under `prefix` (`"pkg.cli:main"` -> `pkg.cli`)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
        if text.startswith(prefix) and len(text) < 200 and _DOTTED.match(text):
            return text.partition(":")[0]
    return None


def quotes_package(top: str, source: str) -> bool:
    """Whether a module's text quotes package `top` (alone or leading a dotted name): where it does
    not, no string there names one of its modules (`named_modules`, `conditional_names`)."""
    return _quotes_top(top, source)


def _quotes_top(top: str, source: str) -> bool:
    """Whether `top` is quoted, alone or leading a dotted name: six searches in C cost less than one pattern's."""
    return any(f"{quote}{top}{after}" in source for quote in "\"'" for after in ".\"'")


def conditional_names(
    tree: ast.Module, top: str, provider_packages: Sequence[str], branch_tests: Mapping[tuple[int, int], bool], source: str | None = None
) -> tuple[ReachedWhen, ...]:
    """The consumer modules (under `top`) this module names only on a condition:

    - a dotted name a `return` gives inside `if` tests no release decides (`branch_tests`, from
      the walk: run-time data, or a provider value the release may decide), as a platform hook
      picks a class by its arguments (`if use_v1: return "pkg.v1.Backend"` / `elif not use_mla:
      return "pkg.v0.Backend"`), or stores in one place (`if envs.USE_V1: cfg.worker_cls =
      "pkg.v1.Worker"` / `else: cfg.worker_cls = "pkg.v0.Worker"`, as a platform's config hook
      does): the module runs only when its branch is taken. A name returned or stored outside
      such tests (every call gives it) is an edge as any string is (`named_modules`);
    - the value of an import map, a dict whose keys are all dotted provider names and whose values
      are all dotted consumer names (`{"prov.layers.sampler": "pkg.ops.sampler"}`, which an import
      hook serves in the key's place): the value runs when the key is imported.
    """
    if source is not None and not _quotes_top(top, source):
        return ()
    prefix = f"{top}."
    provider = tuple(f"{p}." for p in provider_packages)
    found: list[ReachedWhen] = []

    # an import map's keys are strings naming provider modules: none quoted, no walk for maps
    maps = bool(provider) and (source is None or any(_quotes_top(p, source) for p in provider_packages))
    for node in breadth_first(tree) if maps else ():
        if not isinstance(node, ast.Dict) or not node.keys:
            continue
        keys = [k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else None for k in node.keys]
        if not all(k is not None and k.startswith(provider) and _DOTTED.match(k) for k in keys):
            continue
        values = [_dotted_name(v, prefix) for v in node.values]
        if all(values):
            found += [ReachedWhen(m or "", Site(v.lineno, v.col_offset), stands_for=k or "") for k, m, v in zip(keys, values, node.values)]

    # (test, negated, decided by the release); its text only for a name picked under it (the walk
    # keeps every `if` no release decides: most pick nothing)
    Tests = tuple[tuple[ast.expr, bool, bool], ...]
    Returned = list[tuple[str, str, Site, Tests]]  # (where the name goes, module, site, tests)

    def visit(body: list[ast.stmt], tests: Tests, returned: Returned) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                picks(stmt.body)
            elif isinstance(stmt, ast.ClassDef):
                visit(stmt.body, (), [])
            elif isinstance(stmt, ast.If):
                decided = branch_tests.get((stmt.lineno, stmt.col_offset))
                if decided is None:
                    visit(stmt.body, tests, returned)
                    visit(stmt.orelse, tests, returned)
                    continue
                holds, fails = (stmt.test, False, decided), (stmt.test, True, decided)
                visit(stmt.body, (*tests, holds), returned)
                visit(stmt.orelse, (*tests, fails), returned)
                # `if use_mla: return A` / `return B`: what follows an arm that returns runs on the other side
                if _returns(stmt.body) and not _returns(stmt.orelse):
                    tests = (*tests, fails)
                elif _returns(stmt.orelse) and not _returns(stmt.body):
                    tests = (*tests, holds)
            elif isinstance(stmt, (ast.Return, ast.Assign, ast.AnnAssign)):
                # what a `return` gives, or what an assignment stores in one place (`cfg.worker_cls = "pkg.v0.Worker"`)
                # a return's whole value; an assignment's only where it stores a string itself
                held = stmt.value if isinstance(stmt, ast.Return) or isinstance(stmt.value, ast.Constant) else None
                names = [
                    (module, node) for node in (breadth_first(held) if held is not None else ())
                    if isinstance(node, ast.expr) and (module := _dotted_name(node, prefix)) is not None
                ]  # fmt: skip
                if names:  # the target's text only where a name is stored (most assignments store none)
                    slot = "return" if isinstance(stmt, ast.Return) else " = ".join(unparse(t) for t in _targets(stmt))
                    returned += [(slot, module, Site(node.lineno, node.col_offset), tests) for module, node in names]
            else:
                for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                    inner = getattr(stmt, field, None)
                    if isinstance(inner, list):
                        visit([s for part in inner for s in (part.body if isinstance(part, (ast.ExceptHandler, ast.match_case)) else [part])], tests, returned)

    def picks(body: list[ast.stmt]) -> None:
        """A function that picks among consumer names by its tests (two or more names returned, or
        stored in the same place: `worker_cls = "pkg.v1.Worker"` in one arm, `"pkg.v0.Worker"` in
        the other): a name picked under tests runs only on them. One name, even under a test (`if
        cached: return cached` / `return "pkg.m.C"`), is what the function gives: an edge outright."""
        returned: Returned = []
        visit(body, (), returned)
        for slot, module, site, tests in returned:
            if len({m for s, m, _, _ in returned if s == slot}) < 2:
                continue
            if tests:
                condition = " and ".join(dict.fromkeys(_test_text(t, negated) for t, negated, _ in tests))
                found.append(ReachedWhen(module, site, condition, by_release=any(r for _, _, r in tests)))

    visit(tree.body, (), [])
    return tuple(found)


def named_only_in_dead_code(tree: ast.Module, dead: Sequence[DeadCode]) -> tuple[NamedOnlyInDeadCode, ...]:
    """The module-level functions this module names only in code the release never runs (`dead`,
    the walk's): verl's `process_..._for_vllm14`, which `apply_vllm_fp8_patches()` installs only
    after `if vllm_ver >= Version("0.20.0"): ...; return` on 0.23.0. A name is any reference: a
    name read or stored, an attribute, a string equal to it or ending in `.name`/`:name` (`__all__`,
    `getattr`, a dotted path); one inside the function itself does not count. So are methods of the
    module's classes that derive from none of another package (`_own_classes`: no other code calls
    them by name). A function named nowhere here is not one (a library's API: a user calls it), nor
    one decorated (a decorator may register it), a dunder, or a name defined twice. Another file
    naming it keeps it live too (`still_named_only_in_dead_code`)."""
    if not dead:
        return ()
    defs: dict[str, ast.FunctionDef | ast.AsyncFunctionDef | None] = {}
    for stmt in (*tree.body, *(s for c in _own_classes(tree) for s in c.body)):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            plain = not stmt.decorator_list and not (stmt.name.startswith("__") and stmt.name.endswith("__"))
            defs[stmt.name] = stmt if plain and stmt.name not in defs else None
    named: dict[str, list[int]] = {}
    for node in descendants(tree) if any(defs.values()) else ():  # in any order: the lines are sorted
        if isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.Attribute):
            name = node.attr
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 300:
            name = re.split(r"[.:]", node.value)[-1]
        else:
            continue
        if defs.get(name) is not None:
            named.setdefault(name, []).append(node.lineno)
    found = []
    for name, lines in named.items():
        fn = defs[name]
        assert fn is not None
        last = fn.end_lineno or fn.lineno
        outside = sorted(line for line in lines if not fn.lineno <= line <= last)
        where = [next((d for d in dead if d.first <= line <= d.last), None) for line in outside]
        if not outside or not all(where) or any(d.first <= fn.lineno <= d.last for d in dead):
            continue
        first = where[0]
        assert first is not None
        found.append(NamedOnlyInDeadCode(name, (fn.body[0].lineno, last), outside[0], first.why))
    return tuple(sorted(found, key=lambda f: f.body))


def _own_classes(tree: ast.Module) -> list[ast.ClassDef]:
    """The module-level classes whose bases are all classes of this module, so deriving from none
    of another package (no keywords: a metaclass may call anything): nothing but this module's
    own code calls their methods by name."""
    classes = {s.name: s for s in tree.body if isinstance(s, ast.ClassDef)}
    own: dict[str, ast.ClassDef] = {}
    grew = True
    while grew:
        grew = False
        for name, cls in classes.items():
            if name not in own and not cls.keywords and all(isinstance(b, ast.Name) and b.id in own for b in cls.bases):
                own[name] = cls
                grew = True
    return [c for name, c in own.items() if sum(1 for s in tree.body if isinstance(s, ast.ClassDef) and s.name == name) == 1]


def still_named_only_in_dead_code(
    file: ConsumerFile, files: Iterable[ConsumerFile], declared: Iterable[EntryPoint], documented: Iterable[str] = ()
) -> tuple[NamedOnlyInDeadCode, ...]:
    """`file.dead_named` but those another file of the consumer names (its text holds the name as
    a word: an import, a call, a string), an entry point names (`module:name`, `module:Cls.name`) or
    the documentation names (`documented`: `pkg.mod.name`, `pkg.mod.Cls.name`): a user is told to call it."""
    named_here = {part for e in declared if e.module == file.module for part in e.attr.split(".")}
    named_here.update(n.rpartition(".")[2] for n in documented if n.startswith(f"{file.module}."))
    kept = [d for d in file.dead_named if d.name not in named_here]
    for other in files if kept else ():
        if other.path != file.path:
            kept = [d for d in kept if d.name not in other.source or re.search(rf"\b{re.escape(d.name)}\b", other.source) is None]
    return tuple(kept)


def _targets(stmt: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]


def _returns(body: list[ast.stmt]) -> bool:
    """Whether a block ends in `return` or `raise` (never falls through)."""
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


def _test_text(test: ast.expr, negated: bool) -> str:
    text = unparse(test)
    return _negated(test, text) if negated else text


def _negated(test: ast.expr, text: str) -> str:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return unparse(test.operand)
    return f"not {text}" if isinstance(test, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) else f"not ({text})"


# A release number as a version table writes its keys: "0.9", "0.10.1", "v0.9.2".
_RELEASE_KEY = re.compile(r"^v?[0-9]+(?:\.[0-9]+)+$")


def _other_releases_entries(tree: ast.Module, release: str) -> set[int]:
    """ids of the values of version tables whose key is not the audited release (nor a prefix of
    it, as "0.9" is of "0.9.2")."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict) or len(node.keys) < 2:
            continue
        keys = [k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else None for k in node.keys]
        if not all(k is not None and _RELEASE_KEY.match(k) for k in keys):
            continue
        for key, value in zip(keys, node.values):
            wanted = (key or "").lstrip("v")
            if not (release == wanted or release.startswith(wanted + ".")):
                skipped.update(id(n) for n in ast.walk(value))
    return skipped


def unreachable_modules(tree: CodeTree, files: Sequence[ConsumerFile], also_reached: Iterable[str] = ()) -> frozenset[str]:
    """The paths of the files nothing reachable imports (see the module's doc); `also_reached`:
    dotted names the other consumers of the scan reach (job scripts given beside the package)."""
    return module_reach(tree, files, also_reached)[0]


def module_reach(
    tree: CodeTree, files: Sequence[ConsumerFile], also_reached: Iterable[str] = ()
) -> tuple[frozenset[str], dict[str, tuple[RunsWhen, ...]]]:
    """(the paths of the files nothing reachable imports, the paths of those reached only through
    names given on a condition -> those conditions: `ConsumerFile.reaches_when` of a reachable
    file, then what the module so named imports). An import map's module is reached outright
    where a reachable module imports the provider module it stands for (the hook then serves it)."""
    if not tree.packages or tree.only:
        return frozenset(), {}
    # a job file (no module) runs what its command lines name
    also_reached = [*also_reached, *(name for f in files if not f.module for name in f.reaches)]
    modules = {f.module: f for f in files if f.module}
    scripts = {p.relative_to(tree.root).as_posix() for p in tree.scripts if p.is_relative_to(tree.root)}
    declared = entry_points(tree)
    library = not is_plugin(declared)
    copies = per_release_copies(f.path for f in files)
    queue = [
        f.module for f in files
        if f.path in scripts or (f.path not in copies and _runs_by_itself(f.module, f.path, library=library)) or _runs_as_main(f)
    ]  # fmt: skip
    queue += [e.module for e in declared if e.module in modules]
    queue += [m for m in documented_modules(tree) if m in modules]
    for name in also_reached:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        if name:
            queue.append(name)
    reached = _closure(modules, queue, set())
    imported = {name for m in reached for name in modules[m].reaches} if any(f.reaches_when for f in files) else set()
    outright = [w.module for m in reached for w in modules[m].reaches_when if w.stands_for and w.stands_for in imported]
    if outright:
        reached = _closure(modules, outright, reached)
    conditional: dict[str, dict[RunsWhen, None]] = {}
    for module in sorted(reached):
        file = modules[module]
        for named in file.reaches_when:
            why = RunsWhen(named, f"{file.path}:{named.site.line}")
            for other in _closure(modules, [named.module], reached) - reached:
                conditional.setdefault(modules[other].path, {})[why] = None
    dead = frozenset(f.path for f in files if f.module not in reached and f.path not in conditional)
    return dead, {path: tuple(whys) for path, whys in conditional.items()}


def _closure(modules: Mapping[str, ConsumerFile], start: Iterable[str], known: set[str]) -> set[str]:
    """`known` and the modules `start` names (the module named, or the package holding the name),
    with every module they import, through every package on the way."""
    reached = set(known)
    queue = []
    for target in start:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target:
            queue.append(target)
    while queue:
        module = queue.pop()
        if module in reached:
            continue
        reached.add(module)
        file = modules.get(module)
        targets = (module.rpartition(".")[0], *(file.reaches if file is not None else ()))
        for target in targets:
            # The module named, or the package holding the name; and every package on the way.
            while target:
                if target in modules and target not in reached:
                    queue.append(target)
                target = target.rpartition(".")[0]
    return reached


def mark_unreachable(tree: CodeTree, files: Sequence[ConsumerFile], also_reached: Iterable[str] = ()) -> tuple[ConsumerFile, ...]:
    """`files` with `unreachable` set on those nothing reachable imports, and `runs_when` on those
    reached only on a condition (and both cleared on the rest); `dead_named` keeps only the
    functions nothing else in the tree names (`still_named_only_in_dead_code`)."""
    dead, conditional = module_reach(tree, files, also_reached)
    why = f"imported by nothing in {tree.name}"
    declared, documented = (entry_points(tree), documented_modules(tree)) if any(f.dead_named for f in files) else ((), ())
    out = []
    for f in files:
        unreachable = why if f.path in dead else None
        runs_when = conditional.get(f.path, ())
        dead_named = still_named_only_in_dead_code(f, files, declared, documented) if f.dead_named else ()
        if (f.unreachable, f.runs_when, f.dead_named) != (unreachable, runs_when, dead_named):
            f = replace(f, unreachable=unreachable, runs_when=runs_when, dead_named=dead_named)
        out.append(f)
    return tuple(out)


def reached_across(trees: Sequence[CodeTree], files: Sequence[Sequence[ConsumerFile]]) -> list[tuple[ConsumerFile, ...]]:
    """Each consumer's files marked again with what the scan's other consumers reach: a job script
    given beside the package runs the package modules it imports."""
    out = []
    for i, (tree, own) in enumerate(zip(trees, files)):
        others = [name for j, theirs in enumerate(files) if j != i for f in theirs for name in f.reaches]
        out.append(mark_unreachable(tree, own, others) if others else tuple(own))
    return out


def per_release_copies(paths: Iterable[str]) -> frozenset[str]:
    """The module files that are one of a family of per-release copies: two or more files of
    one folder whose names differ only in a release number (`copied_scheduler_v0_9.py` beside
    `copied_scheduler_v0_10.py`). Each runs only where something imports or names it (a version
    table picks one), never by its path alone. A lone numbered module (`connector_v1_085.py`
    beside `connector_v1.py`) is no family: a user may name it in a provider's configuration."""
    families: dict[tuple[str, str], list[str]] = {}
    for path in paths:
        folder, _, name = path.rpartition("/")
        stem = name.removesuffix(".py")
        if stem == name or not _RELEASE.search(stem):
            continue
        families.setdefault((folder, _RELEASE.sub("#", stem)), []).append(path)
    return frozenset(p for members in families.values() if len(members) > 1 for p in members)


# Entry-point groups that make commands, not plugins: a distribution declaring only these is a
# library whose modules a user imports.
_SCRIPT_GROUPS = frozenset({"console_scripts", "gui_scripts"})

def is_plugin(declared: Iterable[EntryPoint]) -> bool:
    """Whether a distribution with these entry points is a plugin: one declares a group other than
    console or GUI scripts, which the provider loads (it runs what they reach and what the
    provider calls, not what a user imports)."""
    return any(e.group not in _SCRIPT_GROUPS for e in declared)


_MAIN_GUARD = re.compile(r"^if\s+__name__\s*==\s*[\"']__main__[\"']\s*:", re.MULTILINE)


def _runs_as_main(file: ConsumerFile) -> bool:
    """A module written to be run (`python -m pkg.tool`): it tests `__name__ == "__main__"`."""
    return "__main__" in file.source and _MAIN_GUARD.search(file.source) is not None


def _runs_by_itself(module: str, path: str, *, library: bool = True) -> bool:
    """A root by its path: a `__main__`, a test file, or (in a library) a user-facing module."""
    parts = module.split(".")
    leaf = Path(path).stem
    if leaf == "__main__" or _TESTS.match(leaf):
        return True
    if not library:
        return False
    # A release number marks a copied package (a folder), not one module: a user may name
    # `pkg/connector_v1_085.py` in a provider's configuration.
    packages = parts if leaf == "__init__" else parts[:-1]
    return not any(part.startswith("_") for part in parts) and not any(_RELEASE.search(part) for part in packages)


# Text read for module names a user is told to import; beyond this a document is not read on.
_DOC_BYTES = 2_000_000
_DOC_SUFFIXES = (".md", ".rst", ".txt", ".py", ".ipynb")


def documented_modules(tree: CodeTree) -> tuple[str, ...]:
    """Dotted names under the tree's packages that its documentation or examples write: the
    wheel's long description (`*.dist-info/METADATA`), a README, `docs/` and `examples/` beside
    the package (a source tree's)."""
    if not tree.packages or not tree.root.is_dir():
        return ()
    names = re.compile(r"\b(?:" + "|".join(re.escape(p) for p in tree.packages) + r")(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
    found: dict[str, None] = {}
    budget = _DOC_BYTES
    for path in _documents(tree):
        try:
            text = path.read_bytes()[:budget].decode("utf-8", "replace")
        except OSError:
            continue
        budget -= len(text)
        found.update(dict.fromkeys(m.group(0) for m in names.finditer(text)))
        if budget <= 0:
            break
    return tuple(found)


def _documents(tree: CodeTree) -> Iterable[Path]:
    yield from sorted(tree.root.glob("*.dist-info/METADATA"))
    # a release's folder holds the wheel alone; a source tree's docs lie beside its packages
    for folder in () if tree.kind == "release" else (tree.root, tree.root.parent):
        yield from sorted(p for p in folder.glob("README*") if p.is_file())
        for sub in ("docs", "examples", "example"):
            base = folder / sub
            if base.is_dir():
                yield from sorted(p for p in base.rglob("*") if p.suffix in _DOC_SUFFIXES and p.is_file())


def entry_point_modules(tree: CodeTree) -> tuple[str, ...]:
    """Modules the distribution's entry points name (console scripts, plugins)."""
    return tuple(dict.fromkeys(e.module for e in entry_points(tree)))


def entry_points(tree: CodeTree) -> tuple[EntryPoint, ...]:
    """The entry points the distribution declares: its `*.dist-info/entry_points.txt` (a wheel),
    or `[project.scripts]`/`[project.gui-scripts]`/`[project.entry-points.GROUP]` of a
    `pyproject.toml` beside the package (a source tree)."""
    found: list[EntryPoint] = []
    for info in sorted(tree.root.glob("*.dist-info")) if tree.root.is_dir() else ():
        parser = configparser.ConfigParser(interpolation=None, delimiters=("=",))
        parser.optionxform = str  # type: ignore[assignment, method-assign]  # names keep their case
        try:
            parser.read(info / "entry_points.txt", encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue
        found += [_entry(section, name, value) for section in parser.sections() for name, value in parser[section].items()]
    for folder in (tree.root, tree.root.parent):
        found += [_entry(group, name, value) for group, name, value in _pyproject_entry_points(folder / "pyproject.toml")]
    return tuple(e for e in dict.fromkeys(found) if e.module)


def _entry(group: str, name: str, value: str) -> EntryPoint:
    """`module:attr [extras]` -> its parts."""
    spec = value.partition("[")[0].strip()
    module, _, attr = spec.partition(":")
    return EntryPoint(group, name.strip(), module.strip(), attr.strip())


def _pyproject_entry_points(path: Path) -> list[tuple[str, str, str]]:
    if not path.is_file():
        return []
    from apiaudit.infra.tomlcompat import tomllib  # only where there is a file to parse

    try:
        project = tomllib.loads(path.read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    if not isinstance(project, dict):
        return []
    from apiaudit.sources.sdist import project_entry_points  # as a source release's are read

    return project_entry_points(project)
