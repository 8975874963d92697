"""What every output format shares: its options, the findings it shows, the summary."""

from __future__ import annotations

import hashlib
import shutil
import textwrap
from collections import Counter
from dataclasses import replace
from typing import Callable

from apiaudit.findings import CodeOrigin, Finding, Report, Severity, Suppressed, SuppressedBy
from apiaudit.infra.frozen import record

TOOL_NAME = "apiaudit"
# Where SARIF consumers (code-scanning UIs) send a reader who wants to know the tool.
INFORMATION_URI = "https://pypi.org/project/apiaudit/"
CANNOT_JUDGE = "cannot-judge"
# Used when the width cannot be known (not a terminal, no $COLUMNS).
DEFAULT_WIDTH = 120
MIN_WIDTH = 60


def terminal_width() -> int:
    """$COLUMNS or the terminal's width; DEFAULT_WIDTH when neither is known."""
    return max(MIN_WIDTH, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


def wrap(text: str, width: int, indent: str = "", hanging: str = "    ") -> list[str]:
    """`text` as lines of at most `width` characters: `indent` before the first, `hanging` after.

    Long dotted names break only at dots or spaces, never mid-identifier."""
    if len(indent) + len(text) <= width:
        return [indent + text]
    return textwrap.wrap(
        text, width=width, initial_indent=indent, subsequent_indent=indent + hanging,
        break_long_words=False, break_on_hyphens=False,
    ) or [indent]


@record
class RenderOptions:
    show_unresolved: bool = False
    width: int | None = None
    color: bool = False
    show_suppressed: bool = False
    show_unreachable: bool = False
    # The table shows provider signatures whole (else only the parameters that matter).
    verbose: bool = False


def tool_version() -> str:
    """The running apiaudit's version; a source checkout that is not installed says so."""
    try:
        import apiaudit

        version = getattr(apiaudit, "__version__", None)
        if isinstance(version, str) and version:
            return version
    except ImportError:  # pragma: no cover - we are inside apiaudit
        pass
    from importlib import (
        metadata,  # only where apiaudit has no __version__ (never in practice)
    )

    try:
        return metadata.version(TOOL_NAME)
    except metadata.PackageNotFoundError:
        return "0+unknown"


def shown_paths(report: Report) -> Report:
    """The report as every format prints it: each finding's path from the project root
    (`CodeOrigin.shown`: `src/mypkg/engine.py` where the import root is `src/`), suppressed and
    fixed findings too, and the `path:line` of a suppression comment. `render` applies it once,
    so no format decides a path; JSON's reader takes it back off (`import_root_paths`)."""
    return _moved_paths(report, lambda origin, path: origin.shown(path))


def import_root_paths(report: Report) -> Report:
    """The inverse of `shown_paths`: a written document's paths, from the import root again."""

    def back(origin: CodeOrigin, path: str) -> str:
        return path[len(origin.display_root):] if path.startswith(origin.display_root) else path

    return _moved_paths(report, back)


def _moved_paths(report: Report, move: Callable[[CodeOrigin, str], str]) -> Report:
    origins = {c.key: c for c in report.consumers if c.display_root}
    if not origins:
        return report

    def moved(f: Finding) -> Finding:
        origin = origins.get(f.consumer)
        return replace(f, path=move(origin, f.path)) if origin is not None else f

    def moved_suppressed(s: Suppressed) -> Suppressed:
        # An inline or file-wide comment's `where` is `path:line` in the finding's file.
        finding, where = moved(s.finding), s.where
        if s.by in (SuppressedBy.INLINE, SuppressedBy.FILE) and where.startswith(s.finding.path + ":"):
            where = finding.path + where[len(s.finding.path):]
        return replace(s, finding=finding, where=where)

    delta = report.delta
    return replace(
        report,
        findings=tuple(map(moved, report.findings)),
        suppressed=tuple(map(moved_suppressed, report.suppressed)),
        delta=replace(delta, fixed=tuple(map(moved, delta.fixed))) if delta is not None else None,
    )


def fingerprint(f: Finding) -> str:
    """The hex sha256 of the finding's baseline key (rule, consumer, path, callee, param, source):
    what identifies it without its line, so that it survives code moving around it."""
    from apiaudit.policy.baseline import BaselineKey

    key = BaselineKey.of(f)
    text = "\0".join((f.consumer, key.rule, key.path, key.callee or "", key.param or "", key.source))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def finding_id(f: Finding, seen: Counter) -> str:
    """The finding's stable id, `FINGERPRINT:N`: JSON's `id`, SARIF's partial fingerprint and
    GitLab's fingerprint are this one value. `N` counts the findings of one fingerprint in report
    order (`seen` carries the count across a report's findings, then its suppressed ones), telling
    identical calls in one file apart. The path in it is the one the report prints (from the project
    root), as every format renders it."""
    key = fingerprint(f)
    seen[key] += 1
    return f"{key}:{seen[key]}"


def sorted_findings(report: Report) -> list[Finding]:
    return sorted(report.findings, key=lambda f: f.sort_key)


def visible_findings(report: Report, show_unresolved: bool, show_unreachable: bool = False) -> list[Finding]:
    """Findings a human-facing format lists: cannot-judge, and those in modules nothing imports
    (summed up in one line, `unreachable_line`), only when asked for."""
    return [
        f
        for f in sorted_findings(report)
        if (show_unresolved or f.rule != CANNOT_JUDGE) and (show_unreachable or not f.unreachable)
    ]


def unreachable_line(report: Report, *, listed: bool) -> str | None:
    """`12 findings in 7 modules imported by nothing in mypkg (conditional; --show-unreachable to
    list)`: the one line the findings of modules nothing runs take; None when there are none."""
    dead = [f for f in report.findings if f.unreachable]
    if not dead:
        return None
    modules = len({(f.consumer, f.path) for f in dead})
    consumers = ", ".join(dict.fromkeys(f.consumer for f in dead))
    hint = "" if listed else "; --show-unreachable to list"
    return (
        f"{_plural(len(dead), 'finding')} in {_plural(modules, 'module')} imported by nothing in {consumers} "
        f"(conditional: they run only if something else imports them{hint})"
    )


def severity_counts(report: Report, *, unreachable: bool = True) -> dict[str, int]:
    """Counts per severity that leave cannot-judge out, so that the four numbers add up to all
    findings; without the findings of modules nothing imports when `unreachable` is False."""
    counts = {s.value: 0 for s in Severity}
    for f in report.findings:
        if f.rule != CANNOT_JUDGE and (unreachable or not f.unreachable):
            counts[f.severity.value] += 1
    return counts


def severity_phrases(report: Report, *, unreachable_listed: bool) -> list[str]:
    """`4 errors (164 more in modules imported by nothing: --show-unreachable)`, `1 warning`,
    `2 info`: the numbers count what a human-facing format lists; the findings of modules
    nothing imports, unless listed, are named beside them and not counted in."""
    shown = severity_counts(report, unreachable=unreachable_listed)
    every = severity_counts(report)
    hint = ": --show-unreachable"
    phrases = []
    for severity, word in (("error", "error"), ("warning", "warning"), ("info", None)):
        if word is None and not every[severity]:
            continue
        phrase = _plural(shown[severity], word) if word else f"{shown[severity]} info"
        more = every[severity] - shown[severity]
        if more:
            phrase += f" ({more} more in modules imported by nothing{hint})"
            hint = ""  # said once
        phrases.append(phrase)
    return phrases


# A signature with at most this many parameters is shown whole in the table.
SIGNATURE_PARAMETERS_SHOWN = 6
_OPENING, _CLOSING = "([{", ")]}"


def short_signature(signature: str, param: str | None) -> str:
    """A long provider signature cut to the parameters that matter in a table row: `param` and its
    neighbours (the first few when `param` is not one of them), `...` for each run left out;
    what follows the closing parenthesis stays. `EngineArgs(...)` has ~100 parameters: whole,
    it fills ~100 wrapped lines. JSON and `--verbose` keep the whole text."""
    opening = signature.find("(")
    parts = _top_level_parts(signature, opening + 1) if opening >= 0 else None
    if parts is None:
        return signature
    parameters, closing = parts
    if len(parameters) <= SIGNATURE_PARAMETERS_SHOWN:
        return signature
    names = [p.strip().lstrip("*").split(":", 1)[0].split("=", 1)[0].strip() for p in parameters]
    at = names.index(param) if param in names else None
    kept = set(range(at - 1, at + 2)) if at is not None else set(range(3))
    shown: list[str] = []
    for i, text in enumerate(parameters):
        if i in kept:
            shown.append(text.strip())
        elif not shown or shown[-1] != "...":
            shown.append("...")
    return f"{signature[:opening + 1]}{', '.join(shown)}{signature[closing:]}"


def _top_level_parts(text: str, start: int) -> tuple[list[str], int] | None:
    """The comma-separated parts of `text` from `start` up to the parenthesis that closes there,
    and that parenthesis's index; brackets and quoted strings nest. None when it never closes."""
    depth, quote, begin = 0, "", start
    parts: list[str] = []
    for i in range(start, len(text)):
        char = text[i]
        if quote:
            if char == quote and text[i - 1] != "\\":
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in _OPENING:
            depth += 1
        elif char in _CLOSING and depth:
            depth -= 1
        elif char == ")":
            parts.append(text[begin:i])
            return [p for p in parts if p.strip()], i
        elif char == "," and not depth:
            parts.append(text[begin:i])
            begin = i + 1
    return None


def short_finding(f: Finding) -> str:
    """`path:line:col rule: message`, one line (lists of suppressed or fixed findings)."""
    return f"{f.path}:{f.line}:{f.column + 1} {f.rule}: {f.message}"


def origin_label(origin: CodeOrigin) -> str:
    return f"{origin.name} {origin.version}" if origin.version else f"{origin.name} ({origin.root})"


def headline(report: Report) -> str:
    consumers = ", ".join(origin_label(c) for c in report.consumers) or "(no consumer)"
    line = f"{consumers} \u00d7 {origin_label(report.provider)}"
    if report.rules_version:
        line += f" (rules {report.rules_version})"
    return line


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def summary_line(report: Report, *, unresolved_listed: bool, suppressed_listed: bool = False,
                 unreachable_listed: bool = False) -> str:
    """`3 errors, 1 warning, 12 cannot judge (--show-unresolved to list) in 41 files, 0.42 s`:
    the counts of what is listed (`severity_phrases`)."""
    parts = severity_phrases(report, unreachable_listed=unreachable_listed)
    cannot = f"{report.cannot_judge} cannot judge"
    if report.cannot_judge and not unresolved_listed:
        cannot += " (--show-unresolved to list)"
    parts.append(cannot)
    if report.suppressed:
        parts.append(suppressed_phrase(report, listed=suppressed_listed))
    return f"{', '.join(parts)} in {_plural(report.files_scanned, 'file')}, {report.duration_s:.2f} s"


def suppressed_phrase(report: Report, *, listed: bool) -> str:
    """`4 suppressed (2 inline, 2 baseline; --show-suppressed to list)`."""
    by: dict[str, int] = {}
    for s in report.suppressed:
        by[s.by.value] = by.get(s.by.value, 0) + 1
    kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(by.items()))
    hint = "" if listed else "; --show-suppressed to list"
    return f"{len(report.suppressed)} suppressed ({kinds}{hint})"


def policy_lines(report: Report, *, unreachable_listed: bool = False) -> list[str]:
    """What the baseline, the upgrade delta, the config's notices and the modules nothing imports
    add to a summary, one line each."""
    lines = []
    if report.delta is not None:
        d = report.delta
        lines.append(
            f"upgrade from {origin_label(d.against)} to {origin_label(report.provider)}: "
            f"{_plural(len(report.findings), 'finding')} introduced, {len(d.fixed)} fixed, {d.unchanged} unchanged"
        )
    if report.baseline is not None:
        b = report.baseline
        lines.append(
            f"baseline {b.path}: {b.matched} known finding{'s' if b.matched != 1 else ''} left out, "
            f"{b.fixed} entr{'ies' if b.fixed != 1 else 'y'} now fixed"
            + (" (rewrite it with --write-baseline)" if b.fixed else "")
        )
    lines.extend(report.notices)
    dead = unreachable_line(report, listed=unreachable_listed)
    if dead is not None:
        lines.append(dead)
    return lines
