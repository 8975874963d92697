"""Inline suppressions: `# apiaudit: ignore[rule-id, ...] -- reason` and `# apiaudit: ignore-file[...]`.

Only comment tokens count (a `# apiaudit:` inside a string is text, not a suppression). A comment
that starts `# apiaudit:` but does not follow the syntax is bad input: one line naming the file and
line, exit 2, so that a typo never silently suppresses nothing (or everything).
"""

from __future__ import annotations

import enum
import io
import re
import tokenize
from pathlib import Path

from apiaudit.errors import InputError
from apiaudit.infra.frozen import record

MARKER = "apiaudit:"
SYNTAX = "# apiaudit: ignore[rule-id, ...] -- reason  (or ignore-file[...] -- reason)"
_COMMENT_RE = re.compile(r"#\s*apiaudit\s*:", re.IGNORECASE)
_DIRECTIVE_RE = re.compile(
    r"^#\s*apiaudit:\s*(?P<kind>ignore-file|ignore)\[(?P<rules>[^\]]*)\]\s*(?:--\s*(?P<reason>\S.*?))?\s*$"
)
_RULE_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


class Scope(str, enum.Enum):
    LINE = "ignore"
    FILE = "ignore-file"


@record
class Suppression:
    """One comment: these rules are suppressed on `line` (Scope.LINE) or in the whole file."""

    consumer: str
    path: str  # relative to the consumer's root, as findings name it
    line: int
    column: int
    scope: Scope
    rules: tuple[str, ...]
    reason: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def comments(text: str) -> list[tuple[int, int, str]]:
    """(line, column, text) of every comment; a file that does not tokenize falls back to a line scan."""
    try:
        return [
            (tok.start[0], tok.start[1], tok.string)
            for tok in tokenize.generate_tokens(io.StringIO(text).readline)
            if tok.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        found = []
        for number, line in enumerate(text.splitlines(), 1):
            index = line.find("#")
            if index >= 0:
                found.append((number, index, line[index:]))
        return found


def parse_file(text: str, *, consumer: str, path: str) -> list[Suppression]:
    """Every suppression in one file's text. InputError on a malformed `# apiaudit:` comment."""
    if MARKER not in text.lower():
        return []  # the common case: no suppression, no tokenizing
    found = []
    for line, column, comment in comments(text):
        # A comment may carry other tools' directives first (`# noqa: E501 # apiaudit: ignore[...]`).
        start = _COMMENT_RE.search(comment)
        if start is None:
            continue
        directive = comment[start.start():].strip()
        match = _DIRECTIVE_RE.match(directive)
        where = f"{path}:{line}"
        if match is None:
            raise InputError(f"{where}: cannot parse suppression {directive!r}; write {SYNTAX}")
        rules = tuple(r.strip() for r in match["rules"].split(",") if r.strip())
        if not rules:
            raise InputError(f"{where}: suppression {directive!r} names no rule id; write {SYNTAX}")
        bad = [r for r in rules if not _RULE_RE.match(r)]
        if bad:
            raise InputError(f"{where}: '{bad[0]}' is not a rule id in {directive!r}; write {SYNTAX}")
        if not match["reason"]:
            raise InputError(f"{where}: suppression {directive!r} gives no reason; write {SYNTAX}")
        found.append(Suppression(consumer, path, line, column, Scope(match["kind"]), rules, match["reason"]))
    return found


def read_suppressions(consumer: str, root: Path, paths: list[str]) -> list[Suppression]:
    """The suppressions in each of `paths` (relative to `root`); unreadable files hold none."""
    found: list[Suppression] = []
    for path in paths:
        try:
            text = (root / path).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        found.extend(parse_file(text, consumer=consumer, path=path))
    return found
