"""What every part of one module's walk shares: `WalkState`, and how a node is shown and placed."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from apiaudit.consumer import guards as g
from apiaudit.consumer.imports import ImportContext
from apiaudit.consumer.patching import PatchHelper
from apiaudit.consumer.records import (
    AttributeStore,
    ClassFacts,
    ConsumerOptions,
    DeadCode,
    DefinedFunction,
    GuardStop,
    ReleaseGate,
    ImportUse,
    Injection,
    Liveness,
    MethodBinding,
    Note,
    Replacement,
    RpcCall,
    Site,
    Use,
)
from apiaudit.consumer.walk.scopes import Env
from apiaudit.infra.astutil import unparse
from apiaudit.infra.frozen import record


@dataclass(slots=True)
class Found:
    """What the walk has found so far: the records it emits, and the facts later statements read."""

    dicts_seen: bool  # a dict value exists (here or imported): until then calls cannot touch one
    # a requirement check exists (imported, or defined here: `Folding.helper`): until then no call
    # statement is one
    requirements_seen: bool = True
    # a name's attribute was set (`obj.attr = v`, an env key `obj.attr`): until then no read looks one up
    attrs_assigned: bool = field(default=False, init=False)
    uses: list[Use] = field(default_factory=list, init=False)
    imports: list[ImportUse] = field(default_factory=list, init=False)
    classes: list[ClassFacts] = field(default_factory=list, init=False)
    injections: list[Injection] = field(default_factory=list, init=False)
    rpc_calls: list[RpcCall] = field(default_factory=list, init=False)
    method_bindings: list[MethodBinding] = field(default_factory=list, init=False)
    attribute_stores: list[AttributeStore] = field(default_factory=list, init=False)
    guard_stops: list[GuardStop] = field(default_factory=list, init=False)
    release_gates: list[ReleaseGate] = field(default_factory=list, init=False)
    # consumer classes (dotted) given members by a name computed at run time (`setattr(Cls, name,
    # property(...))` in a loop): any member may be theirs
    dynamic_classes: set[str] = field(default_factory=set, init=False)
    notes: dict[tuple[int, int], Note] = field(default_factory=dict, init=False)
    self_functions: set[str] = field(default_factory=set, init=False)  # module functions whose first parameter is `self`
    reaches: dict[str, None] = field(default_factory=dict, init=False)  # modules live import statements name, in order
    private_calls: dict[str, list[Liveness]] = field(default_factory=dict, init=False)  # `self._x(...)`: each call's liveness
    private_refs: set[str] = field(default_factory=set, init=False)  # private names used otherwise
    # `if` statements (line, column) whose test no release decides here: False where it reads
    # run-time data only (`if use_v1:`), True where it reads a provider object or version the
    # release may decide (`if envs.FLAG:`); a name a `return` gives under them is reached on that
    # condition only (consumer/reach.py)
    branch_tests: dict[tuple[int, int], bool] = field(default_factory=dict, init=False)
    # (first, last) lines of statements that never run on the audited release: an arm its test decides
    # dead, what follows a statement that ends the block (a refusal of the release, a return or raise)
    dead_ranges: list[DeadCode] = field(default_factory=list, init=False)
    # module-level classes (dotted) -> the names their bodies define: `Cls.x` for any other x is a
    # member the class inherits (from its provider base, the checks decide)
    class_members: dict[str, frozenset[str]] = field(default_factory=dict, init=False)
    # an `__init__` with a parameter defaulting to None (its qualified name) -> (its class, its node)
    init_nodes: dict[str, tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = field(default_factory=dict, init=False)
    # a function (its qualified name) -> (its class, the parameters that default to None and are
    # never rebound in its body), read from `init_nodes` on the first test of a name there: a test
    # on one holds only where a caller passes it
    none_defaults: dict[str, tuple[str, frozenset[str]]] = field(default_factory=dict, init=False)
    # module-level functions (dotted) that are patching helpers (consumer/patching.py)
    patch_helpers: dict[str, PatchHelper] = field(default_factory=dict, init=False)
    # functions a patching helper installs where a provider attribute was, as decorators: the
    # replacement, and (for a function nested in another, which `defined_functions` does not
    # list) the function as the provider's callers bind to it
    replacements: list[Replacement] = field(default_factory=list, init=False)
    functions: list[DefinedFunction] = field(default_factory=list, init=False)


@record(slots=True)
class WalkState:
    """One module's walk, as every part sees it: what it reads (fixed for the walk) and what it found."""

    module: str
    options: ConsumerOptions
    imports_ctx: ImportContext
    folder: g.Folder  # guards folded on the audited release
    module_env: Env  # the module's names: what functions and helpers see
    top_only: bool  # exports(): module level only, no function or class bodies
    found: Found
    postponed: bool = False  # `from __future__ import annotations`: annotations are never evaluated
    # the text has `__version__` or the provider's name in some spelling: a helper's body may read
    # the release (False spares every helper a walk looking for it)
    names_release: bool = True
    # the text calls `setattr` somewhere: a module-level function may be a patching helper
    names_setattr: bool = True
    # the text has `__version__`: a chain may read a module's version (a use of it too)
    names_version: bool = True
    # the text quotes its own package: a string may name one of its modules, under the tests the
    # walk keeps (`Found.branch_tests`, which `reach.conditional_names` reads only then)
    quotes_package: bool = True
    # the text has `yield` or `await`: a function here may be a generator or a coroutine
    names_suspend: bool = True


def site_of(node: ast.AST) -> Site:
    return Site(getattr(node, "lineno", 1), getattr(node, "col_offset", 0), getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None))


def text_of(node, limit: int = 120) -> str:
    """A node's source as the reports show it: on one line, at most `limit` characters."""
    if node is None:
        return ""
    try:
        text = unparse(node)
    except (RecursionError, ValueError, AttributeError):
        return f"<expression at line {getattr(node, 'lineno', '?')}>"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def after_leaving(stmt: ast.stmt) -> str:
    """Why what follows `stmt` never runs: it returns or raises first (on this release, for an
    `if` whose every arm that runs leaves the block)."""
    if isinstance(stmt, ast.If):
        return f"after `if {text_of(stmt.test)}` (line {stmt.lineno}), which leaves the block on this release"
    what = "returns" if isinstance(stmt, ast.Return) else "raises" if isinstance(stmt, ast.Raise) else "leaves the block"
    return f"after line {stmt.lineno}, which {what} first"
