"""Statements in order, and whether the lines after each still run.

`Statements.block` walks a body: names are bound as assignments, imports and definitions
bind them; an `if`, `assert`, a call to a requirement check, early `return`/`raise` and
`try/except` narrow whether the rest runs (a branch decided dead on the audited release is not walked; one left to the checks
runs under its `Condition`s); branches meet again in `scopes.merge`. Names a `try` body binds
from imports that may fail hold both ways (`ImportChoice`). Expressions are the `Recorder`'s
to emit and the `Evaluator`'s to read; tests the `Decider`'s; definitions the `Definitions`'.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from apiaudit.consumer import guards as g
from apiaudit.consumer.imports import import_alias_value
from apiaudit.consumer.records import CaughtImport, Condition, ConditionKind, DeadCode, GuardStop, ImportRef, ReleaseGate
from apiaudit.consumer.values import (
    RELEASE_VALUES, UNBOUND, UNKNOWN, Chain, Const, ConsumerRef, DictValue, Helper, ImportChoice, Unknown, Value,
)
from apiaudit.consumer.walk.decide import Decider
from apiaudit.consumer.walk.definitions import Definitions
from apiaudit.consumer.walk.dicts import Dicts
from apiaudit.consumer.walk.evaluate import Evaluator
from apiaudit.consumer.walk.handlers import body_imports, dropped, handler_kind, handler_names, handler_text, imported_names, only_imports, reraises
from apiaudit.consumer.walk.record import Recorder
from apiaudit.consumer.walk.scopes import (
    Env,
    Scope,
    assigned_attr_key,
    branch_scope,
    continue_under,
    declared_only,
    forget_self_attr,
    forget_targets,
    is_self,
    merge,
    set_self_attr,
    unchecked,
    under,
)
from apiaudit.consumer.walk.state import WalkState, after_leaving, site_of, text_of
from apiaudit.consumer.walk.unpack import returned_items, unpacked
from apiaudit.infra.astutil import descendants, dotted_text



class Statements:
    """The statements of one module's walk."""

    __slots__ = ("state", "values", "tests", "dicts", "record", "definitions", "refused")

    def __init__(self, state: WalkState, values: Evaluator, tests: Decider, dicts: Dicts, record: Recorder, definitions: Definitions):
        self.state = state
        self.values = values
        self.tests = tests
        self.dicts = dicts
        self.record = record
        self.definitions = definitions
        # The statement that just refused the audited release (a failing `assert` or a release
        # gate's raise), as "`test` (module, line N)", until the block it ends reads what follows it.
        self.refused: str | None = None

    def block(self, body: list[ast.stmt], scope: Scope) -> bool:
        """Walk statements in order; False when the block cannot complete (return, raise, dead rest)."""
        for index, stmt in enumerate(body):
            try:
                if not self._stmt(stmt, scope):
                    if scope.emit and index + 1 < len(body):
                        self._dead(body[index + 1 :], after_leaving(stmt))
                    if self.refused is not None:
                        # what the rest would have installed is the consumer's intent, refused here
                        self.record.injections_behind(body[index + 1 :], scope, self.refused)
                        self.refused = None
                    return False
            except RecursionError:
                continue  # valid but pathologically deep code: that statement degrades to unknown
        return True

    def _stmt(self, stmt: ast.stmt, scope: Scope) -> bool:  # the commonest kinds first (no two branches take one)
        if isinstance(stmt, ast.Assign):
            read = self.record.expr(stmt.value, scope)
            # as read again: a target keeps a chain's steps unchecked either way (`unchecked`); the others have none
            value: Value | None = read if isinstance(read, (Chain, Const, ConsumerRef, Unknown)) else self.values.value(stmt.value, scope)
            self.dicts.forget_table(stmt.value, scope)  # `other = table`: two names for one dict
            if isinstance(value, DictValue) and isinstance(stmt.value, (ast.Name, ast.Attribute)):
                # `other = kw`: two names for one dict; a change through either is not followed.
                holder = self.dicts.holder(stmt.value, scope)
                if holder is not None:
                    holder[1](DictValue(frozenset(), True))
                value = DictValue(frozenset(), True)
            for target in stmt.targets:
                self._assign(target, value, scope)
        elif isinstance(stmt, ast.Expr):
            self.record.expr(stmt.value, scope)
            return self._required(stmt.value, scope)
        elif isinstance(stmt, ast.If):
            return self._if(stmt, scope)
        elif isinstance(stmt, ast.Assert):
            self.record.expr(stmt.test, scope)
            decision = self.tests.decide(stmt.test, scope)
            if decision.if_true.dead and scope.emit and self._reads_release(stmt.test, scope):
                self._failing_assert(stmt, scope)
            return continue_under(scope, decision.if_true)
        elif isinstance(stmt, ast.Import):
            self.record.reach(stmt, scope)
            for alias in stmt.names:
                self.record.import_use(alias.name, None, alias, scope, stmt)
                name, value = import_alias_value(self.state.imports_ctx, alias, self.state.options)
                scope.env.vars[name] = value
        elif isinstance(stmt, ast.ImportFrom):
            self.record.reach(stmt, scope)
            base = self.state.imports_ctx.absolute(stmt.module, stmt.level)
            for alias in stmt.names:
                if alias.name == "*":
                    continue
                self.record.import_use(base, alias.name, alias, scope, stmt)
                scope.env.vars[alias.asname or alias.name] = self.state.imports_ctx.value_for(f"{base}.{alias.name}")
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in stmt.decorator_list:
                self.record.expr(d, scope)
            qual = f"{scope.function}.{stmt.name}" if scope.function != "<module>" else stmt.name
            if scope.cls is not None:
                qual = f"{scope.cls.dotted.rsplit('.', 1)[-1]}.{stmt.name}"
            if scope.function != "<module>" or scope.cls is not None:
                scope.env.vars[stmt.name] = UNKNOWN if scope.cls is None else scope.env.lookup(stmt.name) or UNKNOWN
            elif scope.env is not self.state.module_env:
                # A def in a module-level block (an `except ImportError:` fallback, an `if` arm)
                # binds the name there to the consumer's own function (the module's top-level
                # defs were bound before the walk).
                scope.env.vars[stmt.name] = ConsumerRef(f"{self.state.module}.{stmt.name}")
            self.definitions.function_def(stmt, scope, qual)
        elif isinstance(stmt, ast.ClassDef):
            self.definitions.class_def(stmt, scope)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            return self._try(stmt, scope)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self.record.expr(stmt.value, scope)
            declared = self.values.annotation_value(stmt.annotation, scope)
            held = declared or (self.values.value(stmt.value, scope) if stmt.value is not None else None)
            if stmt.value is None and declared is None and isinstance(stmt.target, ast.Name):
                return True  # `x: int` binds nothing
            self._assign(stmt.target, held, scope)
        elif isinstance(stmt, ast.AugAssign):
            self.record.expr(stmt.value, scope)
            self._target_loads(stmt.target, scope)
            if isinstance(stmt.target, ast.Name):
                scope.env.vars[stmt.target.id] = UNKNOWN
            elif isinstance(stmt.target, ast.Attribute):
                forget_self_attr(stmt.target, scope)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            self.record.expr(stmt.iter, scope)
            self._loop(stmt, scope, targets=stmt.target)
        elif isinstance(stmt, ast.While):
            self.record.expr(stmt.test, scope)
            self._loop(stmt, scope)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self.record.expr(item.context_expr, scope)
                if item.optional_vars is not None:
                    forget_targets(item.optional_vars, scope)
            return self.block(stmt.body, scope)
        elif isinstance(stmt, ast.Match):
            self.record.expr(stmt.subject, scope)
            arms = []
            for case in stmt.cases:
                arm = scope.child()
                arms.append((arm, self.block(case.body, arm)))
            merge(scope, [(a.env, ft) for a, ft in arms] + [(scope.env.child(), True)])
        elif isinstance(stmt, ast.Delete):
            for t in stmt.targets:
                self._target_loads(t, scope)
                self._delete(t, scope)
        elif isinstance(stmt, (ast.Return, ast.Raise)):
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self.record.expr(child, scope)
            if isinstance(stmt, ast.Return) and scope.returns is not None:
                scope.returns.append(returned_items(stmt.value, scope))
            return False
        elif isinstance(stmt, (ast.Break, ast.Continue)):
            return False
        else:
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self.record.expr(child, scope)
        return True

    def _required(self, node: ast.expr, scope: Scope) -> bool:
        """`_require_new_api()`, a requirement check (`if <test>: raise`): the rest runs where no test holds."""
        if not self.state.found.requirements_seen:
            return True  # no requirement check here or among the imports: the callee is none
        func = self.values.value(node.func, scope) if isinstance(node, ast.Call) else None
        if not (isinstance(func, Helper) and func.form == "require" and isinstance(node, ast.Call)):
            return True
        return all(continue_under(scope, decision.if_false) for decision in self.tests.folding.requirement_tests(func, node, scope))

    def _stopping(self, branch: g.Branch, stmt: ast.If, scope: Scope) -> g.Branch:
        """Mark the narrowing conditions of `branch` as job-stopping, and record each at the guard."""
        marked = []
        for c in branch.conditions:
            if c.kind in (ConditionKind.NARROWS, ConditionKind.IS_INSTANCE) and c.target is not None:
                c = replace(c, stops=True, line=stmt.test.lineno)
                if scope.emit:
                    self.state.found.guard_stops.append(GuardStop(c, site_of(stmt.test), scope.function, scope.live))
            marked.append(c)
        narrow = []
        for name, value in branch.narrow:
            last_step = value.steps[-1] if isinstance(value, Chain) and value.steps else None
            if isinstance(value, Chain) and last_step is not None and last_step.kind == "narrow" and last_step.guard is not None:
                stopping = replace(last_step.guard, stops=True, line=stmt.test.lineno)
                value = Chain(value.root, value.steps[:-1] + (replace(last_step, guard=stopping),))
            narrow.append((name, value))
        return replace(branch, conditions=tuple(marked), narrow=tuple(narrow))

    def _if(self, stmt: ast.If, scope: Scope) -> bool:
        self.record.expr(stmt.test, scope)
        if _is_type_checking(stmt.test):
            # Never runs; its imports are for type checkers (reported as such), its body read as today,
            # but a value it assigns is a declaration, not what the name holds at run time.
            typing_arm = replace(scope.child(), type_checking=True, guard="TYPE_CHECKING")
            self.block(stmt.body, typing_arm)
            runtime_arm = scope.child()
            self.block(stmt.orelse, runtime_arm)
            merge(scope, [(declared_only(typing_arm.env), True), (runtime_arm.env, True)])
            return True
        decision = self.tests.decide(stmt.test, scope)
        if g.at_run_time(decision):
            if self.state.quotes_package:  # else no name of the package is picked under it: nothing reads the test
                self.state.found.branch_tests[(stmt.lineno, stmt.col_offset)] = self._reads_provider(stmt.test, scope)
        elif not decision.decided and not decision.if_true.conditions and decision.if_true.undecided and not decision.if_false.dead:
            self.state.found.branch_tests[(stmt.lineno, stmt.col_offset)] = True
        arms: list[tuple[Env, bool]] = []
        falls: list[g.Branch] = []
        gated = False
        for branch, body, truth in ((decision.if_true, stmt.body, True), (decision.if_false, stmt.orelse, False)):
            if branch.dead:
                if scope.emit and body:
                    side = "under" if truth else "in the `else` of"
                    self._dead(body, f"{side} `if {text_of(stmt.test)}` (line {stmt.lineno}), {'false' if truth else 'true'} on this release")
                continue
            arm = branch_scope(scope, branch)
            through = self.block(body, arm)
            arms.append((arm.env, through))
            if through:
                falls.append(branch)
            elif decision.decided and scope.emit:
                gated = self._release_gate(stmt, body, arm, truth) or gated
        if not falls:
            if gated:
                self.refused = f"the raise under `if {text_of(stmt.test)}` ({self.state.module}, line {stmt.lineno})"
            return False
        merge(scope, arms)
        if len(falls) == 1 and len(arms) == 2:
            # The other arm returned or raised: a narrowing guard there stops the job for the
            # classes that fail it.
            return continue_under(scope, self._stopping(falls[0], stmt, scope))
        if len(falls) == 1 and len(arms) == 1:
            only = falls[0]
            scope.live = under(scope.live, only)
        return True

    def _dead(self, body: list[ast.stmt], why: str) -> None:
        """Statements the release never runs, and why: strings there name no module, functions named only there run only there."""
        self.state.found.dead_ranges.append(DeadCode(body[0].lineno, body[-1].end_lineno or body[-1].lineno, why))

    def _reads_provider(self, test: ast.expr, scope: Scope) -> bool:
        """Whether a run-time test reads a provider object (`envs.USE_V1`), which may be gone."""
        for node in descendants(test):
            if isinstance(node, (ast.Name, ast.Attribute)):
                value = self.values.value(node, scope)
                if isinstance(value, Chain) and value.root.kind == "symbol":
                    return True
        return False

    def _release_gate(self, stmt: ast.If, body: list[ast.stmt], arm: Scope, raises_when: bool) -> bool:
        """The arm of a decided test that raises, where the test reads the provider's release:
        the consumer refuses this release here (`if not SUPPORTED_MIN <= version < MAX: raise`).
        `raises_when`: the test's truth that takes this arm (False for the `else:`)."""
        last = body[-1] if body else None
        if isinstance(last, ast.Raise) and self._reads_release(stmt.test, arm):
            self.state.found.release_gates.append(ReleaseGate(site_of(last), arm.function, text_of(stmt.test), arm.live, raises_when))
            return True
        return False

    def _failing_assert(self, stmt: ast.Assert, scope: Scope) -> None:
        """`assert <a test of the release>` that fails on the audited release: a refusal as a
        release gate's raise is, and the rest of the block never runs. A version compared as
        text there is no wrong branch but the break itself (`assert prov.__version__ > "0.8"`
        raises on 0.10.0), so its note says so."""
        text = text_of(stmt.test)
        self.state.found.release_gates.append(ReleaseGate(site_of(stmt), scope.function, text, scope.live, raises_when=False))
        test_site = site_of(stmt.test)
        note = self.state.found.notes.get((test_site.line, test_site.column))
        if note is not None:
            detail = f"{note.detail}, so the assert fails and nothing after it runs"
            self.state.found.notes[(test_site.line, test_site.column)] = replace(note, detail=detail, breaks=True)
        self.refused = f"`assert {text}` ({self.state.module}, line {stmt.lineno})"

    def _reads_release(self, test: ast.expr, scope: Scope) -> bool:
        """Whether the test reads the audited release: its version, a value parsed from it, or a
        consumer helper that does (folded on the release)."""
        for node in ast.walk(test):
            if isinstance(node, (ast.Name, ast.Attribute, ast.Call)):
                value = self.values.value(node, scope)
                if isinstance(value, RELEASE_VALUES):
                    return True
                if isinstance(node, ast.Call) and isinstance(self.values.value(node.func, scope), Helper):
                    return True
        return False

    def _loop(self, stmt, scope: Scope, targets=None) -> None:
        filled = _keys_filled(stmt)
        before = {name: scope.env.lookup(name) for name in filled[0]} if filled else {}
        body = scope.child()
        if targets is not None:
            forget_targets(targets, body)
        self.block(stmt.body, body)
        # The body may run zero times: what it binds meets what was there before.
        merge(scope, [(body.env, True), (scope.env.child(), True)])
        if targets is not None:
            forget_targets(targets, scope)
        if filled:
            # `for key in ["n", "best_of"]: kw[key] = ...`: every item becomes a key.
            for name, held in before.items():
                if isinstance(held, DictValue):
                    scope.env.vars[name] = DictValue(held.keys | filled[1], held.open)
        if stmt.orelse:
            orelse = scope.child()
            self.block(stmt.orelse, orelse)
            merge(scope, [(orelse.env, True), (scope.env.child(), True)])

    def _try(self, stmt, scope: Scope) -> bool:
        kinds = [handler_kind(h.type) for h in stmt.handlers]
        catches_import = any(k in ("ImportError", "ModuleNotFoundError", "broad") for k in kinds)
        caught: CaughtImport | None = "ImportError" if any(k in ("ImportError", "broad") for k in kinds) else ("ModuleNotFoundError" if catches_import else None)
        body = scope.child()
        if catches_import:
            named = next((handler_text(h.type) for h, k in zip(stmt.handlers, kinds) if k in ("ImportError", "ModuleNotFoundError", "broad")), "ImportError")
            body.guard = scope.guard or f"try/except {named}"
            body.caught = caught
            body.drops = scope.drops or dropped(stmt.handlers, imported_names(stmt.body))
        probe = next((h for h in stmt.handlers if "TypeError" in handler_names(h.type) and not reraises(h)), None)
        if probe is not None:
            body.type_error_handler = probe.lineno
        body_through = self.block(stmt.body, body)
        refs = body_imports(stmt.body, self.state.imports_ctx)
        provider_refs = tuple(r for r in refs if self.state.imports_ctx.is_provider(r.module))
        imports_only = only_imports(stmt.body)
        arms: list[tuple[Env, bool]] = [(body.env, body_through)]
        import_handler = False
        for handler, kind in zip(stmt.handlers, kinds):
            live = scope.live
            fallback_condition = None
            if kind in ("ImportError", "ModuleNotFoundError") or (kind == "broad" and imports_only):
                if provider_refs and len(provider_refs) == len(refs) and (imports_only or kind != "broad"):
                    fallback_condition = Condition(
                        ConditionKind.IMPORT_FAILS, True, f"{text_of(stmt.body[0])} fails", imports=provider_refs,
                        caught="ModuleNotFoundError" if kind == "ModuleNotFoundError" else "ImportError",
                    )
                    live = live.under(fallback_condition)
                    import_handler = True
                # otherwise: imports from outside the provider, or other code: the handler may run on any release
            arm = scope.child(live)
            if handler is probe:
                arm.type_error_retry = probe.lineno
            if handler.name:
                arm.env.vars[handler.name] = UNKNOWN
            through = self.block(handler.body, arm)
            if fallback_condition is not None and through:
                self._import_choices(scope, body.env, arm.env, fallback_condition, refs)
                arms.append((arm.env, False))  # merged as choices
            else:
                arms.append((arm.env, through))
        if import_handler:
            # The body's own bindings, where no choice was made, are kept as the body left them.
            for name, value in body.env.written().items():
                if name not in scope.env.vars or not isinstance(scope.env.vars[name], ImportChoice):
                    scope.env.vars[name] = value
            for env, through in arms[1:]:
                if through:
                    merge(scope, [(env, True), (scope.env.child(), True)])
        else:
            merge(scope, arms)
        if stmt.orelse:
            # `else:` runs only when the body completed: with what the body bound (the import
            # worked), not with the handlers' stand-ins merged in
            orelse = scope.child()
            orelse.env = body.env.child()
            self.block(stmt.orelse, orelse)
            merge(scope, [(orelse.env, True)])
        if stmt.finalbody:
            self.block(stmt.finalbody, scope)
        return body_through or any(ft for _, ft in arms[1:]) or import_handler

    def _import_choices(self, scope: Scope, body: Env, handler: Env, condition: Condition, refs: tuple[ImportRef, ...]) -> None:
        """Names the try body bound: the body's value when its imports work, the handler's when one fails."""
        bound = body.written()
        fallback = handler.written()
        for name in dict.fromkeys(list(bound) + list(fallback)):
            ok = bound.get(name, scope.env.lookup(name))
            alt = fallback.get(name, scope.env.lookup(name))
            if ok is None and alt is None:
                continue
            origin = next((r for r in refs if (r.name or r.module.split(".")[0]) == name or (r.name and r.name == name)), refs[0])
            scope.env.vars[name] = ImportChoice(
                ok if ok is not None else UNBOUND, alt if alt is not None else UNBOUND, condition.imports, condition.caught, origin
            )

    def _assign(self, target, value: Value | None, scope: Scope) -> None:
        if isinstance(target, ast.Name):
            scope.env.vars[target.id] = unchecked(value) if value is not None else UNKNOWN
        elif isinstance(target, ast.Attribute):
            self._target_loads(target, scope)
            self.record.injection_by_store(target.attr, value, target, scope, target.value)
            if scope.cls is not None and is_self(target.value, scope):
                set_self_attr(scope, target.attr, value if value is not None else UNKNOWN, replace_ok=False)
                return
            self.record.store(target.value, target.attr, scope, target)
            if isinstance(target.value, ast.Name):
                self.record.bind_function(target.value, value, scope, target)
                # `obj.attr = v` creates the attribute (no __slots__): later reads here are the consumer's own value
                scope.env.vars[assigned_attr_key(target.value.id, target.attr)] = UNKNOWN
                self.state.found.attrs_assigned = True
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = unpacked(target.elts, value)
            for elt, item in zip(target.elts, items):
                self._assign(elt.value if isinstance(elt, ast.Starred) else elt, item, scope)
        elif isinstance(target, ast.Subscript):
            self._target_loads(target, scope)
            self.dicts.forget_table(target.value, scope)
            key = target.slice
            holder = self.dicts.holder(target.value, scope)
            if holder is not None:
                current, write = holder
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    write(DictValue(current.keys | {key.value}, current.open))
                else:
                    write(DictValue(current.keys, True))
        else:
            self._target_loads(target, scope)

    def _delete(self, target, scope: Scope) -> None:
        if isinstance(target, ast.Subscript):
            self.dicts.forget_table(target.value, scope)
            holder = self.dicts.holder(target.value, scope)
            if holder is not None:
                current, write = holder
                key = target.slice
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    write(DictValue(current.keys - {key.value}, current.open))
                else:
                    write(DictValue(frozenset(), True))
        elif isinstance(target, ast.Name):
            scope.env.vars[target.id] = UNBOUND

    def _target_loads(self, target, scope: Scope) -> None:
        """`a.b.c = v` loads `a.b`; `a[i] = v` loads `a` and `i`."""
        if isinstance(target, ast.Attribute):
            self.record.expr(target.value, scope)
        elif isinstance(target, ast.Subscript):
            self.record.expr(target.value, scope)
            self.record.expr(target.slice, scope)


def _keys_filled(stmt) -> tuple[frozenset[str], frozenset[str]] | None:
    """(dict names, keys) for `for k in <literal strings>: d[k] = ...` whose body runs whole for
    each item (no break/continue/return/raise, no `if`) and touches those names only to store
    `d[k]`; None otherwise."""
    if not (isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name) and not stmt.orelse and isinstance(stmt.iter, (ast.List, ast.Tuple))):
        return None
    items = [e.value for e in stmt.iter.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    if not items or len(items) != len(stmt.iter.elts) or len(items) > 64:
        return None
    key = stmt.target.id
    names: set[str] = set()
    for part in stmt.body:
        if not isinstance(part, (ast.Assign, ast.Expr, ast.AnnAssign)):
            return None
        targets = part.targets if isinstance(part, ast.Assign) else [part.target] if isinstance(part, ast.AnnAssign) else []
        for t in targets:
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and isinstance(t.slice, ast.Name) and t.slice.id == key:
                names.add(t.value.id)
            elif not isinstance(t, ast.Name) or t.id == key:
                return None
    stored = {id(t.value) for part in stmt.body if isinstance(part, ast.Assign) for t in part.targets if isinstance(t, ast.Subscript)}
    for part in stmt.body:
        for node in ast.walk(part):
            if isinstance(node, ast.Name) and node.id in names and id(node) not in stored:
                return None  # read, passed on or changed otherwise: not only filled
    return (frozenset(names), frozenset(items)) if names else None


def _is_type_checking(test) -> bool:
    name = dotted_text(test)
    return name is not None and name.rsplit(".", 1)[-1] == "TYPE_CHECKING"
