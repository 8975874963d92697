"""Fixes: LibCST codemods per fix kind, a planner from findings, an apply journal, and an overlay."""

from __future__ import annotations

from apiaudit.fixes.codemods import (
    AddKeyword,
    FileIndex,
    PositionalToKeyword,
    RemoveKeyword,
    RenameAttribute,
    RenameKeyword,
    RewriteImport,
    apply_edits,
)
from apiaudit.fixes.journal import (
    ConsumerIdentity,
    JournalEntry,
    NotRestored,
    RevertResult,
    apply,
    default_journal_dir,
    revert,
)
from apiaudit.fixes.overlay import Overlay, Skipped, write_overlay
from apiaudit.fixes.plan import (
    FileFix,
    FixedFinding,
    FixPlan,
    Unfixable,
    describe_unfixable,
    plan_fixes,
    unified_diff,
)
from apiaudit.fixes.scope import Candidate, scope_candidates

__all__ = [
    "AddKeyword",
    "Candidate",
    "ConsumerIdentity",
    "FileFix",
    "FileIndex",
    "FixPlan",
    "FixedFinding",
    "JournalEntry",
    "NotRestored",
    "Overlay",
    "PositionalToKeyword",
    "RemoveKeyword",
    "RenameAttribute",
    "RenameKeyword",
    "RevertResult",
    "RewriteImport",
    "Skipped",
    "Unfixable",
    "apply",
    "apply_edits",
    "default_journal_dir",
    "describe_unfixable",
    "plan_fixes",
    "revert",
    "scope_candidates",
    "unified_diff",
    "write_overlay",
]
