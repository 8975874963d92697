"""Extract provider uses from one consumer module with `ast` (never executing it).

A small abstract interpreter, one pass per function: names hold `values.Value`s, branches
get child scopes that meet again in `values.join`, and every `if`, `assert`, early
`return`/`raise` and `try/except` narrows whether the lines after it run (`guards.py`).
A branch decided dead on the audited release emits nothing; one left to the provider
index carries its `Condition`s; one nobody can decide is conditional. Nothing here looks
at the provider.

The walk's parts live in `consumer/walk/` (its `__init__` lists them); this module builds
them for one module, wires the few calls back up between them, and runs them.
"""

from __future__ import annotations

import ast
import functools
import itertools
import re
from dataclasses import replace

from apiaudit.consumer import guards as g
from apiaudit.consumer.imports import ConsumerNames, ImportContext, module_imports
from apiaudit.consumer.patching import patch_helper
from apiaudit.consumer.reach import conditional_names, named_only_in_dead_code, quotes_package
from apiaudit.consumer.records import ClassFacts, ConsumerFile, ConsumerOptions, DeadCode, PrivateCalls
from apiaudit.consumer.values import (
    Const,
    ConsumerRef,
    DictValue,
    Helper,
    ImportChoice,
    ParsedVersion,
    Probe,
    ProviderVersion,
    Value,
    VersionPart,
)
from apiaudit.consumer.walk.decide import Decider
from apiaudit.consumer.walk.definitions import Definitions
from apiaudit.consumer.walk.dicts import Dicts
from apiaudit.consumer.walk.evaluate import Evaluator
from apiaudit.consumer.walk.fold import Folding
from apiaudit.consumer.walk.record import Recorder
from apiaudit.consumer.walk.scopes import Env, Scope
from apiaudit.consumer.walk.state import Found, WalkState, site_of
from apiaudit.consumer.walk.statements import Statements

__all__ = ["ModuleVisitor", "module_imports", "site_of"]


class ModuleVisitor:
    """One consumer module, read once: its uses (`run`), or what other modules import from it (`exports`)."""

    def __init__(
        self, source: str, path: str, module: str, is_package: bool, options: ConsumerOptions, names: ConsumerNames | None = None
    ):
        """`names`: what other consumer modules export (default: the tables `options` carry)."""
        self.source = source
        self.path = path
        self.module = module
        self.options = options
        self.imports_ctx = ImportContext(module, is_package, options, names)
        # the statements that never run on the release, once `run` has walked
        self.dead_ranges: tuple[DeadCode, ...] = ()

    def run(self, tree: ast.Module) -> ConsumerFile:
        with _Walk(self._state(top_only=False, postponed=_postponed(tree))) as walk:
            walk.module(tree, emit=True)
        found = walk.state.found
        done = ConsumerFile(
            path=self.path,
            module=self.module,
            uses=tuple(found.uses),
            imports=tuple(found.imports),
            classes=tuple(_dynamic(c) if c.dotted in found.dynamic_classes else c for c in found.classes),
            injections=tuple(found.injections),
            rpc_calls=tuple(found.rpc_calls),
            method_bindings=tuple(found.method_bindings),
            attribute_stores=tuple(found.attribute_stores),
            guard_stops=tuple(found.guard_stops),
            release_gates=tuple(found.release_gates),
            notes=tuple(found.notes.values()),
            source=self.source,
            reaches=tuple(found.reaches),
            private_calls=tuple(PrivateCalls(name, tuple(lives)) for name, lives in sorted(found.private_calls.items())),
            private_refs=tuple(sorted(found.private_refs)),
            dead_named=named_only_in_dead_code(tree, found.dead_ranges),
            functions=tuple(found.functions),
            replacements=tuple(found.replacements),
            reaches_when=conditional_names(tree, self.module.split(".")[0], self.options.provider_packages, found.branch_tests, self.source)
            if walk.state.quotes_package
            else (),  # the text quotes no module of its package
        )
        # read by `collect`, which names the modules the file's strings hold but for these lines
        self.dead_ranges = tuple(found.dead_ranges)
        return done

    def exports(self, tree: ast.Module) -> dict[str, Value]:
        """Module constants and guard helpers other modules may import (folded at module level)."""
        out: dict[str, Value] = {}
        with _Walk(self._state(top_only=True)) as walk:
            walk.module(tree, emit=False)
            for name, value in walk.state.module_env.vars.items():
                if isinstance(value, Helper):
                    out[f"{self.module}.{name}"] = walk.folding.capture(value)
                elif isinstance(value, (Const, ProviderVersion, ParsedVersion, VersionPart, DictValue, ImportChoice, Probe)):
                    out[f"{self.module}.{name}"] = value
        return out

    def _state(self, top_only: bool, postponed: bool = False) -> WalkState:
        # No dict value yet (here or imported): calls cannot touch one.
        found = Found(self.imports_ctx.names.has_dicts, self.imports_ctx.names.has_requirements)
        # By position: built once per file, and cheaper so.
        return WalkState(
            self.module, self.options, self.imports_ctx, _folder(self.options), Env(), top_only, found, postponed,
            self._names_release(), "setattr" in self.source, "__version__" in self.source,
            quotes_package(self.module.split(".")[0], self.source), "yield" in self.source or "await" in self.source,
        )  # fmt: skip

    def _names_release(self) -> bool:
        """Whether the text may read the provider's version or name it (any case, any of `-_.`)."""
        if "__version__" in self.source:
            return True
        spellings = _spellings((self.options.provider_distribution, *self.options.provider_packages))
        if spellings is None:  # too many ways to spell: the pattern, case-blind (a slower search)
            names = [n for n in (self.options.provider_distribution, *self.options.provider_packages) if n]
            spelled = "|".join(r"[-_.]".join(map(re.escape, re.split(r"[-_.]", n))) for n in names)
            return bool(spelled) and re.search(spelled, self.source, re.IGNORECASE) is not None
        text = self.source.lower()  # one pass in C; a case-blind regex search costs ten times more
        return any(spelling in text for spelling in spellings)


@functools.lru_cache(maxsize=16)
def _spellings(names: tuple[str | None, ...]) -> tuple[str, ...] | None:
    """Every lower-case spelling of the names with any of `-_.` between their parts (None when
    that is more than 64: the caller searches with a pattern then)."""
    out: list[str] = []
    for name in names:
        if not name:
            continue
        parts = re.split(r"[-_.]", name.lower())
        if 3 ** (len(parts) - 1) + len(out) > 64:
            return None
        out += ["".join(p + s for p, s in zip(parts, seps + ("",))) for seps in itertools.product("-_.", repeat=len(parts) - 1)]
    return tuple(dict.fromkeys(out))


def _postponed(tree: ast.Module) -> bool:
    """`from __future__ import annotations` (PEP 563): no annotation is evaluated at run time."""
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__" and any(a.name == "annotations" for a in stmt.names):
            return True
        if not (isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__") and not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            return False  # future imports come first
    return False


# The release folders made so far, by (provider version, Python version): a folder is read
# only, and every file of a scan folds on the same one.
_FOLDERS: dict[tuple[str | None, tuple[int, ...]], g.Folder] = {}


def _folder(options: ConsumerOptions) -> g.Folder:
    key = (options.provider_version, tuple(options.python_version))
    folder = _FOLDERS.get(key)
    if folder is None:
        folder = _FOLDERS[key] = g.Folder(*key)
    return folder


class _Walk:
    """The parts of one walk, each given the parts below it; the calls back up are wired here
    and unwired on leaving, so that reference counting frees the walk."""

    def __init__(self, state: WalkState):
        self.state = state
        self.values = values = Evaluator(state)
        self.tests = tests = Decider(state, values)
        self.folding = folding = Folding(state, values, tests)
        dicts = Dicts(state, values)
        record = Recorder(state, values, tests, dicts)
        self.definitions = definitions = Definitions(state, values, record)
        self.statements = Statements(state, values, tests, dicts, record, definitions)
        # The calls back up: values read tests and fold helpers, tests fold helpers, bodies are statements.
        values.tests, values.folding = tests, folding
        tests.folding = folding
        definitions.statements = self.statements

    def __enter__(self) -> _Walk:
        return self

    def __exit__(self, *exc: object) -> None:
        del self.values.tests, self.values.folding, self.tests.folding, self.definitions.statements

    def module(self, tree: ast.Module, emit: bool) -> None:
        state = self.state
        module_env = state.module_env
        scope = Scope(module_env, None, "<module>", emit=emit)
        # Module-level definitions are visible to every function, whatever their order.
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                module_env.vars[node.name] = self.folding.helper(node, scope) or ConsumerRef(f"{state.module}.{node.name}")
                patcher = patch_helper(node) if state.names_setattr else None
                if patcher is not None:
                    state.found.patch_helpers[f"{state.module}.{node.name}"] = patcher
            elif isinstance(node, ast.ClassDef):
                module_env.vars[node.name] = ConsumerRef(f"{state.module}.{node.name}")
                state.found.class_members[f"{state.module}.{node.name}"] = self.definitions.own_members(node)
        self.statements.block(tree.body, scope)


def _dynamic(facts: ClassFacts) -> ClassFacts:
    """A class given members by names computed at run time: like a base the walk cannot read,
    it may supply any member, so none is proven missing."""
    return replace(facts, unread_bases=facts.unread_bases + ("<setattr with a computed name>",))
