"""Consumer stage: every provider use in the consumer's files, from source alone."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Callable, Iterable

from apiaudit.consumer.model import ConsumerFile, ConsumerOptions, Site
from apiaudit.consumer.visitor import ModuleVisitor
from apiaudit.sources.base import CodeTree


def module_name(tree: CodeTree, path: Path) -> tuple[str, bool]:
    """Dotted module name of a file under the tree's root, and whether it is a package __init__."""
    rel = path.relative_to(tree.root).with_suffix("")
    parts = list(rel.parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts) if parts else path.stem, is_package


def collect_file(tree: CodeTree, path: Path, options: ConsumerOptions) -> ConsumerFile:
    rel = path.relative_to(tree.root).as_posix()
    module, is_package = module_name(tree, path)
    try:
        source = path.read_bytes().decode("utf-8", errors="replace")
        syntax = ast.parse(source, filename=rel)
    except SyntaxError as exc:
        return ConsumerFile(
            path=rel, module=module, error=f"{exc.msg}", error_site=Site(exc.lineno or 1, max((exc.offset or 1) - 1, 0))
        )
    except (OSError, ValueError, RecursionError) as exc:
        return ConsumerFile(path=rel, module=module, error=str(exc), error_site=Site(1, 0))
    return ModuleVisitor(source, rel, module, is_package, options).run(syntax)


def collect(
    tree: CodeTree, options: ConsumerOptions, on_file: Callable[[str], None] | None = None, files: Iterable[Path] | None = None
) -> tuple[ConsumerFile, ...]:
    out = []
    for path in files if files is not None else tree.python_files():
        out.append(collect_file(tree, path, options))
        if on_file:
            on_file(path.name)
    return tuple(out)
