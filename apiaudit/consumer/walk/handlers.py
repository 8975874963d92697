"""What a `try` around imports does: which imports its body makes, what its handlers catch, and
what a handler puts in place of the feature when it drops it (a flag, stand-in classes)."""

from __future__ import annotations

import ast

from apiaudit.consumer.imports import ImportContext
from apiaudit.consumer.records import ImportRef
from apiaudit.infra.astutil import dotted_text

_BROAD = {"Exception", "BaseException"}


def body_imports(body: list[ast.stmt], ctx: ImportContext) -> tuple[ImportRef, ...]:
    out: list[ImportRef] = []
    for stmt in body:
        if isinstance(stmt, ast.Import):
            out += [ImportRef(a.name, None, stmt.lineno) for a in stmt.names]
        elif isinstance(stmt, ast.ImportFrom):
            base = ctx.absolute(stmt.module, stmt.level)
            out += [ImportRef(base, a.name, stmt.lineno) for a in stmt.names if a.name != "*"]
    return tuple(out)


def only_imports(body: list[ast.stmt]) -> bool:
    """A try body that can fail only at its imports (flags and constants aside)."""
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass)):
            continue
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, (ast.Constant, ast.Name)):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue
        return False
    return True


def handler_kind(node) -> str:
    """'ImportError' | 'ModuleNotFoundError' | 'broad' | 'other': what an except clause catches."""
    names = handler_names(node)
    if names & {"ImportError"}:
        return "ImportError"
    if names & _BROAD:
        return "broad"
    if names & {"ModuleNotFoundError"}:
        return "ModuleNotFoundError"
    return "other"


def reraises(handler: ast.ExceptHandler) -> bool:
    """A handler whose own statements raise (`raise`, `raise Other(...) from e`): the failure goes on."""
    return any(isinstance(stmt, ast.Raise) for stmt in handler.body)


def handler_names(node) -> set[str]:
    if node is None:
        return {"BaseException"}
    if isinstance(node, ast.Tuple):
        out: set[str] = set()
        for e in node.elts:
            out |= handler_names(e)
        return out
    name = dotted_text(node)
    return {name.rsplit(".", 1)[-1]} if name else set()


def handler_text(node: ast.expr | None) -> str:
    """How an `except` clause names what it catches (`Exception`, `(ImportError, OSError)`)."""
    return "BaseException" if node is None else ast.unparse(node)


def imported_names(body: list[ast.stmt]) -> set[str]:
    """The names the import statements of a `try` body bind."""
    return {
        (alias.asname or alias.name).split(".")[0]
        for statement in body if isinstance(statement, (ast.Import, ast.ImportFrom))
        for alias in statement.names
    }  # fmt: skip


def dropped(handlers: list[ast.ExceptHandler], imported: set[str]) -> str | None:
    """What an import handler puts instead of the feature, where it drops it: stand-in classes it
    defines for the provider's (a plugin class built on a stand-in does nothing for the
    provider), with the flags it sets false or None beside them. A flag alone chooses another
    path, which the code tests (`_use_new_api = False`), and the imported name itself set to None
    is the usual optional import: neither drops anything by itself."""
    flags: list[str] = []
    stand_ins: list[str] = []
    for handler in handlers:
        for statement in handler.body:
            if isinstance(statement, ast.ClassDef):
                stand_ins.append(statement.name)
            elif isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant) and statement.value.value in (False, None):
                flags += [f"{t.id} = {statement.value.value}" for t in statement.targets if isinstance(t, ast.Name) and t.id not in imported]
    if not stand_ins:
        return None
    parts = [f"sets {', '.join(flags)}"] if flags else []
    parts += [f"defines stand-in{'s' if len(stand_ins) > 1 else ''} {', '.join(stand_ins)}"]
    return ", ".join(parts)
