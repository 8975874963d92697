"""Format-preserving edits of one consumer file, with LibCST.

Each fix kind is a small frozen edit (RemoveKeyword, RenameKeyword, AddKeyword,
PositionalToKeyword, RenameAttribute, RewriteImport, InsertCallAfter, DropSubscript) that names its target by the
position a Finding reports: the first line (1-based) and column (0-based) where the
call, attribute use or import starts. `apply_edits` applies every edit of a file in
one pass, so all positions refer to the scanned text. Only the touched calls and
imports change; comments, layout and trailing commas are kept. An edit whose change
is already there reports "already-applied" and changes nothing, which makes fixing
fixed code a no-op.
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Union

import libcst as cst
from libcst.metadata import (
    CodeRange,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
)

from apiaudit.infra.frozen import record


class EditStatus(str, enum.Enum):
    """What became of one edit."""

    APPLIED = "applied"
    ALREADY = "already-applied"  # the change is already there: fixing fixed code is a no-op
    NOT_FOUND = "not-found"
    CONFLICT = "conflict"


APPLIED, ALREADY, NOT_FOUND, CONFLICT = EditStatus.APPLIED, EditStatus.ALREADY, EditStatus.NOT_FOUND, EditStatus.CONFLICT


@record
class RemoveKeyword:
    line: int
    column: int
    keyword: str
    callee_name: str | None = None  # the called name, to tell apart calls starting at one position


@record
class RenameKeyword:
    line: int
    column: int
    old: str
    new: str
    callee_name: str | None = None


@record
class AddKeyword:
    line: int
    column: int
    keyword: str
    value: str  # Python expression source
    callee_name: str | None = None


@record
class PositionalToKeyword:
    line: int
    column: int
    names: tuple[str, ...]  # the parameter each positional argument binds to, in order ("" = unknown)
    max_positional: int  # how many positional arguments the callee accepts
    callee_name: str | None = None


@record
class RenameAttribute:
    line: int
    column: int
    old: str
    new: str


@record
class RewriteImport:
    """``from OLD import name`` -> ``from new_module import name`` (``new_name as name`` when renamed)."""

    line: int
    column: int
    name: str
    new_module: str
    new_name: str | None = None


@record
class InsertCallAfter:
    """After the statement holding ``R.<callee_name>(...)``, a new statement ``R.method(args)``.

    Only a statement of its own in a block (``R.m(...)``, ``x = R.m(...)``, awaited or not) is
    edited: after a ``return``, inside a condition or a one-line suite there is no safe place.
    """

    line: int
    column: int
    method: str
    args: str  # source of the arguments, "" for none
    callee_name: str | None = None


@record
class DropSubscript:
    """``R.m(...)[0]`` -> ``R.m(...)`` (`bound` None), or, after ``bound = R.m(...)``, each later
    ``bound[0]`` in the same function -> ``bound``."""

    line: int
    column: int
    bound: str | None = None
    callee_name: str | None = None


@record
class AddParameter:
    """`def f(self, a, b)` -> `def f(self, a, b, name=None)`: a function the provider calls accepts
    what it now passes. `line` is the `def` line (as `ast` reports it)."""

    line: int
    column: int
    name: str


Edit = Union[
    RemoveKeyword, RenameKeyword, AddKeyword, PositionalToKeyword, RenameAttribute, RewriteImport, InsertCallAfter, DropSubscript,
    AddParameter,
]
CALL_EDITS = (RemoveKeyword, RenameKeyword, AddKeyword, PositionalToKeyword)


@record
class Outcome:
    edit: Edit
    status: EditStatus
    note: str = ""


@record
class EditResult:
    code: bytes
    outcomes: tuple[Outcome, ...]

    @property
    def changed(self) -> bool:
        return any(o.status == APPLIED for o in self.outcomes)


def terminal_name(expr: cst.BaseExpression) -> str | None:
    """The last identifier of a callee expression: ``a.b.C`` -> ``C``."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return None


def callee_name_of(callee: str | None) -> str | None:
    """The name a call of `callee` (a Finding's dotted path) most likely uses."""
    if not callee:
        return None
    parts = callee.split(".")
    if parts[-1] == "__init__" and len(parts) > 1:
        return parts[-2]
    return parts[-1]


def _keyword_index(call: cst.Call, name: str) -> int | None:
    for index, arg in enumerate(call.args):
        if arg.keyword is not None and arg.keyword.value == name:
            return index
    return None


class FileIndex:
    """One parsed file: nodes by the position Findings use, and each node's enclosing functions."""

    def __init__(self, source: bytes | str):
        self.module = cst.parse_module(source)
        self._wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
        self._positions = self._wrapper.resolve(PositionProvider)
        self.parents = self._wrapper.resolve(ParentNodeProvider)
        self.next_statement: dict[int, cst.BaseStatement] = {}  # id(statement) -> the one after it in its block
        self.subscripts: list[cst.Subscript] = []
        self.calls: dict[tuple[int, int], list[cst.Call]] = defaultdict(list)
        self.attributes: dict[tuple[int, int], list[cst.Attribute]] = defaultdict(list)
        self.import_froms: list[tuple[cst.ImportFrom, CodeRange]] = []
        self.enclosing: dict[int, tuple[cst.FunctionDef, ...]] = {}
        self.defs: dict[int, list[cst.FunctionDef]] = defaultdict(list)  # by the line of the name after `def`
        self._collect()

    def _key(self, node: cst.CSTNode) -> tuple[int, int]:
        """(line, character column): the unit findings use (apiaudit.consumer.positions)."""
        start = self._positions[node].start
        return (start.line, start.column)

    def _collect(self) -> None:
        index = self

        class Collector(cst.CSTVisitor):
            def __init__(self) -> None:
                self.functions: list[cst.FunctionDef] = []

            def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
                self.functions.append(node)
                index.defs[index._positions[node.name].start.line].append(node)

            def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
                self.functions.pop()

            def visit_Call(self, node: cst.Call) -> None:
                index.calls[index._key(node)].append(node)
                index.enclosing[id(node)] = tuple(reversed(self.functions))

            def visit_Attribute(self, node: cst.Attribute) -> None:
                index.attributes[index._key(node)].append(node)

            def visit_Subscript(self, node: cst.Subscript) -> None:
                index.subscripts.append(node)
                index.enclosing[id(node)] = tuple(reversed(self.functions))

            def visit_Module(self, node: cst.Module) -> None:
                index._link(node.body)

            def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
                index._link(node.body)

            def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
                index.import_froms.append((node, index._positions[node]))

        self.module.visit(Collector())

    def _link(self, body: Sequence[cst.BaseStatement]) -> None:
        for statement, following in zip(body, body[1:]):
            self.next_statement[id(statement)] = following

    def start(self, node: cst.CSTNode) -> tuple[int, int]:
        return self._key(node)

    def end(self, node: cst.CSTNode) -> tuple[int, int]:
        end = self._positions[node].end
        return (end.line, end.column)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def functions_around(self, node: cst.CSTNode) -> tuple[cst.FunctionDef, ...]:
        """Functions enclosing a call, innermost first."""
        return self.enclosing.get(id(node), ())

    def resolve_call(self, line: int, column: int, callee_name: str | None, keyword: str | None = None) -> cst.Call | None:
        """The call a Finding points at; among calls starting at one place, prefer the named callee."""
        candidates = self.calls.get((line, column), [])
        if callee_name:
            named = [c for c in candidates if terminal_name(c.func) == callee_name]
            candidates = named or candidates
        if keyword is not None:
            with_keyword = [c for c in candidates if _keyword_index(c, keyword) is not None]
            candidates = with_keyword or candidates
        return candidates[0] if candidates else None

    def resolve_import(self, line: int, column: int) -> cst.ImportFrom | None:
        for node, span in self.import_froms:
            if (span.start.line, span.start.column) <= (line, column) <= (span.end.line, span.end.column):
                return node
        return None


# --- whitespace-aware list surgery -------------------------------------------------------

_PW = cst.ParenthesizedWhitespace


def _has_comment(ws: cst.BaseParenthesizableWhitespace) -> bool:
    return isinstance(ws, _PW) and (ws.first_line.comment is not None or any(e.comment for e in ws.empty_lines))


def _separator(call: cst.Call) -> cst.BaseParenthesizableWhitespace:
    """The whitespace this call puts between arguments (newline + indent for one-per-line calls)."""
    for arg in call.args[:-1]:
        if isinstance(arg.comma, cst.Comma):
            ws = arg.comma.whitespace_after
            return ws.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[]) if isinstance(ws, _PW) else ws
    before = call.whitespace_before_args
    if isinstance(before, _PW):
        return before.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
    return cst.SimpleWhitespace(" ")


def _fresh_line(template: _PW, empty_lines: Sequence[cst.EmptyLine] = ()) -> _PW:
    """A bare newline that keeps `template`'s following indentation."""
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(), empty_lines=list(empty_lines), indent=template.indent, last_line=template.last_line
    )


def append_argument(call: cst.Call, new_arg: cst.Arg) -> cst.Call:
    args = list(call.args)
    if not args:
        return call.with_changes(args=[new_arg])
    last = args[-1]
    sep = _separator(call)
    if isinstance(last.comma, cst.Comma):  # trailing comma: keep one after the new argument
        tail = last.comma.whitespace_after
        if isinstance(tail, _PW):
            last_line = sep.last_line if isinstance(sep, _PW) else tail.last_line
            args[-1] = last.with_changes(comma=last.comma.with_changes(whitespace_after=tail.with_changes(empty_lines=[], last_line=last_line)))
            new_arg = new_arg.with_changes(comma=cst.Comma(whitespace_after=_fresh_line(tail, tail.empty_lines)))
        else:
            args[-1] = last.with_changes(comma=last.comma.with_changes(whitespace_after=sep if not isinstance(sep, _PW) else cst.SimpleWhitespace(" ")))
            new_arg = new_arg.with_changes(comma=cst.Comma(whitespace_after=tail))
    else:
        tail = last.whitespace_after_arg
        if isinstance(tail, _PW):
            last_line = sep.last_line if isinstance(sep, _PW) else tail.last_line
            args[-1] = last.with_changes(
                comma=cst.Comma(whitespace_after=tail.with_changes(empty_lines=[], last_line=last_line)),
                whitespace_after_arg=cst.SimpleWhitespace(""),
            )
            new_arg = new_arg.with_changes(whitespace_after_arg=_fresh_line(tail, tail.empty_lines))
        else:
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=sep), whitespace_after_arg=cst.SimpleWhitespace(""))
            new_arg = new_arg.with_changes(whitespace_after_arg=tail)
    return call.with_changes(args=[*args, new_arg])


def _merge_empty_lines(ws, extra: Sequence[cst.EmptyLine]):
    if not extra or not isinstance(ws, _PW):
        return ws
    return ws.with_changes(empty_lines=[*ws.empty_lines, *extra])


def remove_argument(call: cst.Call, index: int) -> cst.Call:
    """Drop one argument; the comment on its own line goes with it, other comments stay."""
    args = list(call.args)
    removed = args.pop(index)
    removed_ws = removed.comma.whitespace_after if isinstance(removed.comma, cst.Comma) else None
    removed_tail = removed_ws if removed_ws is not None else removed.whitespace_after_arg
    own_line_comments = list(removed_ws.empty_lines) if isinstance(removed_ws, _PW) else []
    if not args:
        before = call.whitespace_before_args
        if _has_comment(before) or own_line_comments:
            last_line = removed_tail.last_line if isinstance(removed_tail, _PW) else cst.SimpleWhitespace("")
            before = _merge_empty_lines(before, own_line_comments).with_changes(last_line=last_line)
        else:
            before = cst.SimpleWhitespace("")
        return call.with_changes(args=[], whitespace_before_args=before)
    if index < len(args):  # not the last: comments on lines after it now precede the next argument
        if index == 0:
            call = call.with_changes(whitespace_before_args=_merge_empty_lines(call.whitespace_before_args, own_line_comments))
        else:
            prev = args[index - 1]
            if isinstance(prev.comma, cst.Comma):
                args[index - 1] = prev.with_changes(comma=prev.comma.with_changes(whitespace_after=_merge_empty_lines(prev.comma.whitespace_after, own_line_comments)))
        return call.with_changes(args=args)
    prev = args[-1]  # the removed argument was last: the one before it ends the list now
    prev_ws = prev.comma.whitespace_after if isinstance(prev.comma, cst.Comma) else prev.whitespace_after_arg
    end: cst.BaseParenthesizableWhitespace
    if isinstance(prev_ws, _PW) and isinstance(removed_tail, _PW):
        end = prev_ws.with_changes(empty_lines=[*prev_ws.empty_lines, *removed_tail.empty_lines], last_line=removed_tail.last_line)
    elif isinstance(prev_ws, _PW) and _has_comment(prev_ws):
        end = prev_ws.with_changes(last_line=cst.SimpleWhitespace(""))
    else:
        end = removed_tail
    if removed_ws is not None:
        comma = prev.comma if isinstance(prev.comma, cst.Comma) else cst.Comma()
        args[-1] = prev.with_changes(comma=comma.with_changes(whitespace_after=end))
    else:
        args[-1] = prev.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=end)
    return call.with_changes(args=args)


def _remove_aliases(node: cst.ImportFrom, names: set[str]) -> cst.ImportFrom:
    if isinstance(node.names, cst.ImportStar):
        return node
    aliases = list(node.names)
    kept = [a for a in aliases if a.evaluated_name not in names]
    if aliases and kept and aliases[-1] not in kept:  # the new last name ends the list as the old last did
        old_end, own = aliases[-1].comma, kept[-1].comma
        if isinstance(old_end, cst.Comma) and isinstance(own, cst.Comma):
            own_ws, end_ws = own.whitespace_after, old_end.whitespace_after
            if isinstance(own_ws, _PW) and isinstance(end_ws, _PW):  # keep this line's comment
                end_ws = own_ws.with_changes(empty_lines=[*own_ws.empty_lines, *end_ws.empty_lines], last_line=end_ws.last_line)
            kept[-1] = kept[-1].with_changes(comma=own.with_changes(whitespace_after=end_ws))
        else:
            kept[-1] = kept[-1].with_changes(comma=old_end)
    return node.with_changes(names=kept)


def _imports_name(body: Sequence[cst.CSTNode], module_code: str, name: str) -> bool:
    for statement in body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None:
                if cst.Module([]).code_for_node(small.module) == module_code and not isinstance(small.names, cst.ImportStar):
                    if any(a.evaluated_name == name for a in small.names):
                        return True
    return False


def _import_insert_index(body: Sequence[cst.CSTNode]) -> int:
    """After the module's leading docstring and import block."""
    index = 0
    for position, statement in enumerate(body):
        if not isinstance(statement, cst.SimpleStatementLine):
            break
        small = statement.body
        if all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in small):
            index = position + 1
        elif position == 0 and len(small) == 1 and isinstance(small[0], cst.Expr) and isinstance(small[0].value, cst.SimpleString):
            index = 1
        else:
            break
    return index


# --- the one-pass transformer ------------------------------------------------------------


@dataclass
class _Plan:
    call_edits: dict[int, list[Edit]] = field(default_factory=lambda: defaultdict(list))
    attribute_edits: dict[int, list[RenameAttribute]] = field(default_factory=lambda: defaultdict(list))
    import_edits: dict[int, list[RewriteImport]] = field(default_factory=lambda: defaultdict(list))
    insert_after: dict[int, list[tuple[InsertCallAfter, str]]] = field(default_factory=lambda: defaultdict(list))  # id(statement)
    subscript_drops: dict[int, list[DropSubscript]] = field(default_factory=lambda: defaultdict(list))  # id(subscript)
    def_edits: dict[int, list[AddParameter]] = field(default_factory=lambda: defaultdict(list))  # id(FunctionDef)
    outcomes: dict[int, Outcome] = field(default_factory=dict)  # by id(edit) -> final outcome


def _equal_style(call: cst.Call) -> cst.AssignEqual:
    for arg in call.args:
        if arg.keyword is not None and isinstance(arg.equal, cst.AssignEqual):
            return arg.equal
    return cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


def _apply_call_edit(call: cst.Call, edit: Edit) -> tuple[cst.Call, EditStatus, str]:
    if isinstance(edit, RemoveKeyword):
        index = _keyword_index(call, edit.keyword)
        if index is None:
            return call, ALREADY, f"no keyword {edit.keyword!r} left"
        return remove_argument(call, index), APPLIED, ""
    if isinstance(edit, RenameKeyword):
        index = _keyword_index(call, edit.old)
        if index is None:
            if _keyword_index(call, edit.new) is not None:
                return call, ALREADY, ""
            return call, NOT_FOUND, f"the call passes no keyword {edit.old!r}"
        if _keyword_index(call, edit.new) is not None:
            return call, CONFLICT, f"the call already passes {edit.new!r}"
        args = list(call.args)
        args[index] = args[index].with_changes(keyword=cst.Name(edit.new))
        return call.with_changes(args=args), APPLIED, ""
    if isinstance(edit, AddKeyword):
        if _keyword_index(call, edit.keyword) is not None:
            return call, ALREADY, ""
        try:
            value = cst.parse_expression(edit.value)
        except cst.ParserSyntaxError:
            return call, CONFLICT, f"value {edit.value!r} is not a Python expression"
        new_arg = cst.Arg(keyword=cst.Name(edit.keyword), equal=_equal_style(call), value=value)
        return append_argument(call, new_arg), APPLIED, ""
    if isinstance(edit, PositionalToKeyword):
        if any(arg.star for arg in call.args):
            return call, CONFLICT, "the call unpacks *args/**kwargs; which arguments are surplus is unclear"
        positional = [i for i, arg in enumerate(call.args) if arg.keyword is None]
        if len(positional) <= edit.max_positional:
            return call, ALREADY, ""
        surplus = positional[edit.max_positional :]
        names = [edit.names[p] if p < len(edit.names) else "" for p in range(edit.max_positional, len(positional))]
        if not all(names):
            return call, CONFLICT, "the parameter names of some surplus positional arguments are unknown"
        passed = {arg.keyword.value for arg in call.args if arg.keyword is not None}
        clash = sorted(set(names) & passed)
        if clash:
            return call, CONFLICT, f"{', '.join(clash)} already passed by keyword"
        args = list(call.args)
        equal = _equal_style(call)
        for index, name in zip(surplus, names):
            args[index] = args[index].with_changes(keyword=cst.Name(name), equal=equal)
        return call.with_changes(args=args), APPLIED, ""
    raise TypeError(f"not a call edit: {edit!r}")


class _Transformer(cst.CSTTransformer):
    def __init__(self, plan: _Plan, index: FileIndex):
        super().__init__()
        self.plan = plan
        self.index = index

    def _record(self, edit: Edit, status: EditStatus, note: str = "") -> None:
        self.plan.outcomes[id(edit)] = Outcome(edit, status, note)

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        for edit in self.plan.call_edits.get(id(original_node), []):
            updated_node, status, note = _apply_call_edit(updated_node, edit)
            self._record(edit, status, note)
        return updated_node

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        for edit in self.plan.def_edits.get(id(original_node), []):
            no_space = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
            added = cst.Param(name=cst.Name(edit.name), default=cst.Name("None"), equal=no_space)
            params = updated_node.params
            if params.star_arg is not cst.MaybeSentinel.DEFAULT or params.kwonly_params:
                params = params.with_changes(kwonly_params=[*params.kwonly_params, added])  # after *args or `*`
            else:
                params = params.with_changes(params=[*params.params, added])
            updated_node = updated_node.with_changes(params=params)
            self._record(edit, APPLIED)
        return updated_node

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        for edit in self.plan.attribute_edits.get(id(original_node), []):
            updated_node = updated_node.with_changes(attr=cst.Name(edit.new))
            self._record(edit, APPLIED)
        return updated_node

    def leave_Subscript(self, original_node: cst.Subscript, updated_node: cst.Subscript) -> cst.BaseExpression:
        edits = self.plan.subscript_drops.get(id(original_node), [])
        if not edits:
            return updated_node
        for edit in edits:
            self._record(edit, APPLIED)
        value = updated_node.value
        if original_node.lpar and not value.lpar:  # (x[0]) keeps its parentheses
            value = value.with_changes(lpar=original_node.lpar, rpar=original_node.rpar)
        return value

    def leave_SimpleStatementLine(self, original_node, updated_node):
        result = self._rewrite_imports(original_node, updated_node)
        inserts = self.plan.insert_after.get(id(original_node), [])
        if not inserts:
            return result
        statements = list(result.nodes) if isinstance(result, cst.FlattenSentinel) else [result]
        for edit, text in inserts:
            statements.append(cst.parse_statement(text))
            self._record(edit, APPLIED)
        return cst.FlattenSentinel(statements)

    def _rewrite_imports(self, original_node, updated_node):
        extra: list[cst.BaseStatement] = []
        new_body = list(updated_node.body)
        for position, small in enumerate(original_node.body):
            edits = self.plan.import_edits.get(id(small), [])
            if not edits:
                continue
            node = new_body[position]
            aliases = {a.evaluated_name: a for a in node.names} if not isinstance(node.names, cst.ImportStar) else {}
            order = list(aliases)
            moving = sorted((e for e in edits if e.name in aliases), key=lambda e: order.index(e.name))
            targets = {(e.new_module, e.new_name) for e in moving}
            if len(moving) == len(aliases) and len(targets) == 1:  # everything moves to one place: rewrite in place
                new_module, _ = next(iter(targets))
                renamed = []
                for alias in node.names:
                    edit = next(e for e in moving if e.name == alias.evaluated_name)
                    if edit.new_name and edit.new_name != edit.name:
                        alias = alias.with_changes(name=cst.Name(edit.new_name), asname=alias.asname or cst.AsName(name=cst.Name(edit.name)))
                    renamed.append(alias)
                new_body[position] = node.with_changes(module=cst.parse_expression(new_module), names=renamed)
            else:
                new_body[position] = _remove_aliases(node, {e.name for e in moving})
                by_module: dict[str, list[str]] = defaultdict(list)  # one new statement per module
                for edit in moving:
                    alias = aliases[edit.name]
                    asname = alias.asname.name.value if alias.asname is not None else None
                    if edit.new_name and edit.new_name != edit.name:
                        by_module[edit.new_module].append(f"{edit.new_name} as {asname or edit.name}")
                    else:
                        by_module[edit.new_module].append(f"{edit.name} as {asname}" if asname else edit.name)
                for module_name, names in by_module.items():
                    extra.append(cst.parse_statement(f"from {module_name} import {', '.join(names)}\n"))
            for edit in moving:
                self._record(edit, APPLIED)
        if not extra:
            return updated_node.with_changes(body=new_body)
        return cst.FlattenSentinel([updated_node.with_changes(body=new_body), *extra])


def apply_edits(index: FileIndex, edits: Sequence[Edit], add_imports: Sequence[str] = ()) -> EditResult:
    """Apply every edit to the file `index` was built from, in one pass.

    `add_imports` are ``from x import y`` statements some edit's value needs; each is
    inserted after the module's import block unless the name is already imported so.
    """
    plan = _Plan()
    for edit in edits:
        if isinstance(edit, CALL_EDITS):
            keyword = edit.keyword if isinstance(edit, RemoveKeyword) else edit.old if isinstance(edit, RenameKeyword) else None
            call = index.resolve_call(edit.line, edit.column, edit.callee_name, keyword)
            if call is None:
                plan.outcomes[id(edit)] = Outcome(edit, NOT_FOUND, f"no call starts at {edit.line}:{edit.column}")
            else:
                plan.call_edits[id(call)].append(edit)
        elif isinstance(edit, RenameAttribute):
            candidates = index.attributes.get((edit.line, edit.column), [])
            target = next((a for a in candidates if a.attr.value == edit.old), None)
            if target is not None:
                plan.attribute_edits[id(target)].append(edit)
            elif any(a.attr.value == edit.new for a in candidates):
                plan.outcomes[id(edit)] = Outcome(edit, ALREADY)
            else:
                plan.outcomes[id(edit)] = Outcome(edit, NOT_FOUND, f"no attribute {edit.old!r} at {edit.line}:{edit.column}")
        elif isinstance(edit, RewriteImport):
            node = index.resolve_import(edit.line, edit.column)
            if node is None:
                plan.outcomes[id(edit)] = Outcome(edit, NOT_FOUND, f"no 'from ... import' at {edit.line}:{edit.column}")
            elif node.relative:
                plan.outcomes[id(edit)] = Outcome(edit, CONFLICT, "a relative import is not rewritten")
            elif isinstance(node.names, cst.ImportStar):
                plan.outcomes[id(edit)] = Outcome(edit, CONFLICT, "a star import is not rewritten")
            elif node.module is not None and index.code(node.module) == edit.new_module:
                plan.outcomes[id(edit)] = Outcome(edit, ALREADY)
            elif any(a.evaluated_name == edit.name for a in node.names):
                plan.import_edits[id(node)].append(edit)
            elif _imports_name(index.module.body, edit.new_module, edit.new_name or edit.name):
                plan.outcomes[id(edit)] = Outcome(edit, ALREADY)
            else:
                plan.outcomes[id(edit)] = Outcome(edit, NOT_FOUND, f"the import at {edit.line}:{edit.column} does not import {edit.name!r}")
        elif isinstance(edit, InsertCallAfter):
            _plan_insert_after(index, plan, edit)
        elif isinstance(edit, DropSubscript):
            _plan_drop_subscript(index, plan, edit)
        elif isinstance(edit, AddParameter):
            defs = index.defs.get(edit.line, [])
            if not defs:
                plan.outcomes[id(edit)] = Outcome(edit, NOT_FOUND, f"no def at line {edit.line}")
            elif any(p.name.value == edit.name for p in _all_params(defs[0].params)):
                plan.outcomes[id(edit)] = Outcome(edit, ALREADY)
            else:
                plan.def_edits[id(defs[0])].append(edit)
        else:
            raise TypeError(f"unknown edit {edit!r}")

    module = index.module.visit(_Transformer(plan, index))
    if any(o.status == APPLIED for o in plan.outcomes.values()):
        module = _add_imports(module, add_imports)
    outcomes = tuple(plan.outcomes.get(id(e), Outcome(e, NOT_FOUND, "target not reached")) for e in edits)
    return EditResult(code=module.bytes, outcomes=outcomes)


def _all_params(params: cst.Parameters) -> list[cst.Param]:
    star = [params.star_arg] if isinstance(params.star_arg, cst.Param) else []
    kwargs = [params.star_kwarg] if params.star_kwarg is not None else []
    return [*params.posonly_params, *params.params, *star, *params.kwonly_params, *kwargs]


def _add_imports(module: cst.Module, statements: Sequence[str]) -> cst.Module:
    body = list(module.body)
    new_lines: list[cst.SimpleStatementLine | cst.BaseCompoundStatement] = []
    for text in statements:
        statement = cst.parse_statement(text.strip() + "\n")
        small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else None
        if isinstance(small, cst.ImportFrom) and small.module is not None and not isinstance(small.names, cst.ImportStar):
            module_code = cst.Module([]).code_for_node(small.module)
            if all(_imports_name(body + new_lines, module_code, a.evaluated_name) for a in small.names):
                continue
        elif isinstance(small, cst.Import):
            wanted = {a.evaluated_name for a in small.names}
            present = {
                a.evaluated_name
                for s in body + new_lines
                if isinstance(s, cst.SimpleStatementLine)
                for i in s.body
                if isinstance(i, cst.Import)
                for a in i.names
            }
            if wanted <= present:
                continue
        new_lines.append(statement)
    if not new_lines:
        return module
    at = _import_insert_index(body)
    return module.with_changes(body=body[:at] + new_lines + body[at:])


# --- call-protocol edits (pattern recipes) ---------------------------------------------


def _own_statement(index: FileIndex, call: cst.Call) -> tuple[cst.SimpleStatementLine, bool] | None:
    """The statement line whose only statement is `call` (bare, assigned or awaited); whether awaited."""
    node: cst.CSTNode = call
    parent: cst.CSTNode | None = index.parents.get(node)
    if isinstance(parent, cst.Await) and parent.expression is call:
        node, parent = parent, index.parents.get(parent)
    awaited = node is not call
    if not isinstance(parent, (cst.Expr, cst.Assign, cst.AnnAssign)) or parent.value is not node:
        return None
    line = index.parents.get(parent)
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    return line, awaited


def _calls_on(statement: cst.BaseStatement | None, index: FileIndex, receiver: str, method: str) -> bool:
    """Is `statement` ``receiver.method(...)`` (awaited or not) on its own?"""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    value = small.value if isinstance(small, (cst.Expr, cst.Assign, cst.AnnAssign)) else None
    if isinstance(value, cst.Await):
        value = value.expression
    return (
        isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == method and index.code(value.func.value) == receiver
    )  # fmt: skip


def _plan_insert_after(index: FileIndex, plan: _Plan, edit: InsertCallAfter) -> None:
    call = index.resolve_call(edit.line, edit.column, edit.callee_name)
    if call is None:
        plan.outcomes[id(edit)] = Outcome(edit, NOT_FOUND, f"no call starts at {edit.line}:{edit.column}")
        return
    if not isinstance(call.func, cst.Attribute):
        plan.outcomes[id(edit)] = Outcome(edit, CONFLICT, "the call has no receiver to call the next step on")
        return
    own = _own_statement(index, call)
    if own is None:
        plan.outcomes[id(edit)] = Outcome(
            edit, CONFLICT, f"the call is not a simple statement of its own in a block; add .{edit.method}(...) by hand"
        )
        return
    statement, awaited = own
    receiver = index.code(call.func.value)
    if _calls_on(index.next_statement.get(id(statement)), index, receiver, edit.method):
        plan.outcomes[id(edit)] = Outcome(edit, ALREADY)
        return
    text = f"{'await ' if awaited else ''}{receiver}.{edit.method}({edit.args})\n"
    try:
        cst.parse_statement(text)
    except cst.ParserSyntaxError:
        plan.outcomes[id(edit)] = Outcome(edit, CONFLICT, f"`{text.strip()}` is not a Python statement")
        return
    plan.insert_after[id(statement)].append((edit, text))


def _is_zero_index(subscript: cst.Subscript) -> bool:
    if len(subscript.slice) != 1:
        return False
    element = subscript.slice[0].slice
    return isinstance(element, cst.Index) and isinstance(element.value, cst.Integer) and element.value.evaluated_value == 0


def _plan_drop_subscript(index: FileIndex, plan: _Plan, edit: DropSubscript) -> None:
    call = index.resolve_call(edit.line, edit.column, edit.callee_name)
    if call is None:
        plan.outcomes[id(edit)] = Outcome(edit, NOT_FOUND, f"no call starts at {edit.line}:{edit.column}")
        return
    if edit.bound is None:
        parent = index.parents.get(call)
        if not isinstance(parent, cst.Subscript) or parent.value is not call:
            plan.outcomes[id(edit)] = Outcome(edit, ALREADY, "the result is not indexed")
        elif not _is_zero_index(parent):
            plan.outcomes[id(edit)] = Outcome(edit, CONFLICT, "the result is indexed with something other than [0]")
        else:
            plan.subscript_drops[id(parent)].append(edit)
        return
    scope = [id(f) for f in index.functions_around(call)[:1]]
    after = index.end(call)
    uses = [
        node for node in index.subscripts
        if isinstance(node.value, cst.Name) and node.value.value == edit.bound
        and [id(f) for f in index.functions_around(node)[:1]] == scope and index.start(node) > after
        and not isinstance(index.parents.get(node), (cst.AssignTarget, cst.Del))
    ]  # fmt: skip
    zero = [node for node in uses if _is_zero_index(node)]
    if not zero:
        status, note = (CONFLICT, f"`{edit.bound}` is indexed with something other than [0]") if uses else (ALREADY, "")
        plan.outcomes[id(edit)] = Outcome(edit, status, note)
        return
    for node in zero:
        plan.subscript_drops[id(node)].append(edit)
