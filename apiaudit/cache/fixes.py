"""Exact fixes, cached: what `fixes.exact` planned for a report's findings, kept by everything it
read (apiaudit's own code, the rules, each fixable finding and the sha256 of its file), so that a
warm `scan --format json|sarif` answers them without importing the fixer (LibCST) or parsing a
file again."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from apiaudit.findings import ExactFix, Finding, Replacement
from apiaudit.infra.json_lists import load_items, store_items

_DIR = "exact-fixes"


def key(engine: str, rules: str, provider: str, findings: Sequence[tuple[Finding, Path]]) -> str | None:
    """The key of the fixes of `findings` (each with its file's path under the consumer root):
    None when a file cannot be read (then nothing is cached)."""
    digest = hashlib.sha256(f"{engine}\0{rules}\0{provider}\n".encode())
    for finding, path in findings:
        try:
            content = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            return None
        fields = (finding.rule, finding.path, finding.line, finding.column, finding.message, finding.callee, finding.param, content)
        digest.update(json.dumps(fields, default=str).encode())
        digest.update(repr(finding.recipe).encode())
    return digest.hexdigest()


def lookup(cache_dir: Path, name: str, count: int) -> list[ExactFix | None] | None:
    """The fixes stored under `name`, one per fixable finding in order; None when absent or unreadable."""
    return load_items(cache_dir / _DIR, name, count, _decoded)


def store(cache_dir: Path, name: str, fixes: Sequence[ExactFix | None]) -> None:
    """Keep the fixes (a full disk keeps nothing: the next run plans them again)."""
    store_items(cache_dir / _DIR, name, fixes, _encoded)


def _encoded(fix: ExactFix | None) -> dict | None:
    if fix is None:
        return None
    return {"description": fix.description, "edits": [[r.start_line, r.start_column, r.end_line, r.end_column, r.text] for r in fix.replacements]}


def _decoded(item: dict | None) -> ExactFix | None:
    if item is None:
        return None
    edits = tuple(Replacement(int(a), int(b), int(c), int(d), str(t)) for a, b, c, d, t in item["edits"])
    return ExactFix(str(item["description"]), edits)
