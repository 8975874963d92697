"""Tied breaks, kept: the provider change `cause.tie_findings` found behind each finding of a
downstream's upgrade delta, stored by everything it read, so that a warm `impact` (whole scans
answered from the results cache) does not load each breaking downstream against OLD and NEW
again to re-check the same sites (two thirds of a warm run before this memo).

The key is apiaudit's own code, the rules, OLD and NEW as the report names them (their
origins: a release's version, a path's content digest), the downstream's label, and each
finding with the sha256 of its file; the value is, per finding, the change as plain JSON.
A missing, unreadable or mismatched entry is rebuilt; a full disk keeps nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

from apiaudit.findings import Finding, Report
from apiaudit.impact.results import ProviderChange
from apiaudit.infra.json_lists import load_items, store_items
from apiaudit.recipes.changes import ChangeKind

_DIR = "impact-ties"
_FORMAT = 1


def key(engine: str, rules: str, old: str, new: str, label: str, report: Report, findings: Sequence[Finding]) -> str | None:
    """The key of the changes behind `findings` (those of `report` that are tied); None when a
    finding's file cannot be read (then nothing is cached)."""
    roots = {o.key: Path(o.root) for o in report.consumers}
    digest = hashlib.sha256(f"{_FORMAT}\0{engine}\0{rules}\0{old}\0{new}\0{label}\n".encode())
    contents: dict[Path, str] = {}
    for finding in findings:
        root = roots.get(finding.consumer)
        content = ""
        if root is not None:
            path = root / finding.path
            if path not in contents:
                try:
                    contents[path] = hashlib.sha256(path.read_bytes()).hexdigest()
                except OSError:
                    return None
            content = contents[path]
        fields = (
            finding.consumer, finding.rule, finding.path, finding.line, finding.column, finding.message,
            finding.callee, finding.param, finding.provider_location, content,
        )  # fmt: skip
        digest.update(json.dumps(fields, default=str).encode())
    return digest.hexdigest()


def lookup(cache_dir: Path, name: str, count: int) -> list[ProviderChange] | None:
    """The changes stored under `name`, one per tied finding in order; None when absent, unreadable
    or not `count` long."""
    return load_items(cache_dir / _DIR, name, count, _decoded)


def store(cache_dir: Path, name: str, changes: Sequence[ProviderChange]) -> None:
    """Keep the changes (a full disk keeps nothing: the next run ties them again)."""
    store_items(cache_dir / _DIR, name, changes, _encoded)


_FIELDS = tuple(f.name for f in dataclasses.fields(ProviderChange))


def _encoded(change: ProviderChange) -> dict:
    values = {name: getattr(change, name) for name in _FIELDS}
    values["kind"] = change.kind.value
    return values


def _decoded(item: dict) -> ProviderChange:
    if set(item) != set(_FIELDS):
        raise KeyError("fields of ProviderChange do not match")
    values = {name: (None if item[name] is None else str(item[name])) for name in _FIELDS if name != "kind"}
    values["note"] = values["note"] or ""
    values["rule"] = values["rule"] or ""
    return ProviderChange(kind=ChangeKind(item["kind"]), **values)  # type: ignore[arg-type]
