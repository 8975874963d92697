"""Baselines: accept what is known today, fail on what is new.

An entry is keyed by rule, file, callee, parameter and the call's source text with its
whitespace and comments normalized away: never by line number, so an edit elsewhere in the
file keeps the baseline valid. Identical keys are counted (two identical bad calls in one
file need two entries), and each finding consumes one.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from apiaudit.errors import InputError
from apiaudit.findings import Finding
from apiaudit.infra.frozen import record

BASELINE_FORMAT = 1
_COMMENT_RE = re.compile(r"#[^\n]*")
_TRAILING_COMMA_RE = re.compile(r",(?=[)\]}])")


def normalize_source(source: str | None) -> str:
    """The call's text without comments, whitespace and trailing commas: layout is not identity."""
    if not source:
        return ""
    return _TRAILING_COMMA_RE.sub("", "".join(_COMMENT_RE.sub("", source).split()))


@dataclass(frozen=True, order=True)
class BaselineKey:
    rule: str
    path: str
    callee: str | None
    param: str | None
    source: str  # normalize_source(finding.source), or the message when there is no source

    @classmethod
    def of(cls, f: Finding, *, with_callee: bool = True) -> BaselineKey:
        source = normalize_source(f.source) if f.source else f"message:{f.message}"
        return cls(f.rule, f.path, f.callee if with_callee else None, f.param, source)


@record
class Baseline:
    path: Path
    entries: Counter  # Counter[BaselineKey]

    def split(self, findings: Iterable[Finding]) -> tuple[list[Finding], list[Finding], int]:
        """(new findings, findings the baseline holds, baseline entries nothing matched: fixed)."""
        left = Counter(self.entries)
        new, known = [], []
        for f in findings:
            key = BaselineKey.of(f)
            if left[key] > 0:
                left[key] -= 1
                known.append(f)
            else:
                new.append(f)
        return new, known, sum(left.values())


def baseline_document(findings: Iterable[Finding]) -> dict[str, Any]:
    """The baseline file's content: one entry per distinct key, with a count, sorted."""
    counts: Counter = Counter()
    messages: dict[BaselineKey, str] = {}
    for f in findings:
        key = BaselineKey.of(f)
        counts[key] += 1
        messages.setdefault(key, f.message)
    entries = [
        {"rule": k.rule, "path": k.path, "callee": k.callee, "param": k.param, "source": k.source,
         "count": counts[k], "message": messages[k]}
        for k in sorted(counts, key=lambda k: (k.path, k.rule, k.callee or "", k.param or "", k.source))
    ]  # fmt: skip
    return {"apiaudit_baseline": BASELINE_FORMAT, "entries": entries}


def write_baseline(path: Path, findings: Iterable[Finding]) -> int:
    """Write the baseline file (whole or not at all); the number of findings recorded."""
    from apiaudit.infra.atomic import atomic_write

    document = baseline_document(findings)
    path = Path(path).expanduser()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise InputError(f"cannot write baseline {path}: {exc.strerror or exc}") from None
    return sum(e["count"] for e in document["entries"])


def read_baseline(path: Path) -> Baseline:
    """The baseline at `path`; InputError (one line) when it is missing or not a baseline file."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise InputError(f"baseline file {path} does not exist (write one with --write-baseline {path})")
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"baseline file {path} is not readable JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("apiaudit_baseline") != BASELINE_FORMAT:
        raise InputError(f"{path} is not an apiaudit baseline (format {BASELINE_FORMAT}); rewrite it with --write-baseline")
    entries: Counter = Counter()
    raw = document.get("entries")
    if not isinstance(raw, list):
        raise InputError(f"baseline file {path}: 'entries' must be a list")
    for i, e in enumerate(raw):
        try:
            key = BaselineKey(e["rule"], e["path"], e.get("callee"), e.get("param"), e["source"])
            count = int(e.get("count", 1))
        except (KeyError, TypeError, ValueError):
            raise InputError(f"baseline file {path}: entries[{i}] needs rule, path, source and a count") from None
        if not all(isinstance(v, (str, type(None))) for v in (key.callee, key.param)) or count < 1:
            raise InputError(f"baseline file {path}: entries[{i}] is malformed")
        entries[key] += count
    return Baseline(path, entries)
