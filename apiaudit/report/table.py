"""The human-readable report: findings grouped by file, rendered with rich to a string."""

from __future__ import annotations

import re
from io import StringIO
from itertools import groupby

from rich import box
from rich.cells import cell_len, chop_cells
from rich.console import Console, Group, RenderableType
from rich.containers import Lines
from rich.table import Table
from rich.text import Text

from apiaudit.findings import MISSING_CALLEE_RULES, Finding, Report
from apiaudit.report.base import (
    MIN_WIDTH,
    RenderOptions,
    headline,
    policy_lines,
    short_finding,
    short_signature,
    summary_line,
    terminal_width,
    visible_findings,
)

# Below this width severity and rule move into the finding cell, leaving it room to read.
NARROW_WIDTH = 90
# The four-column layout only when the finding column keeps at least this much room.
FINDING_MIN_WIDTH = 72
_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
_LABEL_STYLE = "dim"


class DottedText(Text):
    """Text that wraps a word longer than its line after a dot or a slash, as a person breaks
    `vllm.model_executor.models.llama_eagle.LlamaModel.start_layer` or a path; rich folds such
    a word at whatever column the line ends (`...LlamaModel.start_laye` / `r`). Only a part
    with no dot or slash that is itself longer than a line is still folded mid-word."""

    def wrap(self, console, width, *, justify=None, overflow=None, tab_size=8, no_wrap=None) -> Lines:
        if (overflow or self.overflow) != "fold" or no_wrap or self.no_wrap:
            return super().wrap(console, width, justify=justify, overflow=overflow, tab_size=tab_size, no_wrap=no_wrap)
        lines = Lines()
        for line in self.split(allow_blank=True):
            if "\t" in line:
                line.expand_tabs(tab_size)
            new_lines = line.divide(dotted_breaks(line.plain, width))
            for part in new_lines:
                part.rstrip_end(width)
            new_lines.justify(console, width, justify=justify or self.justify or "default", overflow="fold")
            for part in new_lines:
                part.truncate(width, overflow="fold")
            lines.extend(new_lines)
        return lines


_WORD = re.compile(r"\s*\S+\s*")
_AFTER_SEPARATOR = re.compile(r"[^./]+[./]*|[./]+")


def dotted_breaks(text: str, width: int) -> list[int]:
    """Where to break `text` into lines of at most `width` cells: at spaces, and inside a word
    longer than a line after a `.` or `/` (folded mid-part only when a part alone is too long)."""
    breaks: list[int] = []
    used = 0  # cells on the current line
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group()
        length = cell_len(word.rstrip())
        if used + length <= width:
            used += cell_len(word)
            continue
        if length <= width:  # on a line of its own
            if used and start:
                breaks.append(start)
            used = cell_len(word)
            continue
        stripped = word.rstrip()
        for part_match in _AFTER_SEPARATOR.finditer(stripped):
            part_start, part = start + part_match.start(), part_match.group()
            if part_match.end() == len(stripped):
                part += word[len(stripped):]  # the spaces after the word stay on its last line
            part_length = cell_len(part.rstrip())
            if used + part_length <= width:
                used += cell_len(part)
                continue
            if used and part_start:
                breaks.append(part_start)
                used = 0
            while part_length > width:  # no separator to break at: fold
                chunk = len(chop_cells(part, width)[0])
                part_start, part = part_start + chunk, part[chunk:]
                breaks.append(part_start)
                part_length = cell_len(part.rstrip())
            used = cell_len(part)
    return breaks


def _position(f: Finding) -> str:
    # Columns are 0-based in findings; editors and people count from 1.
    return f"{f.line}:{f.column + 1}" if f.line > 0 else "-"


def _detail_cell(f: Finding, verbose: bool) -> RenderableType:
    """Message, then the call as written, the provider's signature where it lives (the parameters
    that matter unless `verbose`), the fix.

    A label/value grid gives wrapped values a hanging indent under their label.
    """
    rows: list[tuple[str, str, str]] = []
    signature = f.signature if verbose or not f.signature else short_signature(f.signature, f.param)
    if f.source:
        rows.append(("call", f.source.strip("\n"), ""))
    if signature and f.provider_location:
        rows.append(("provider", f"{signature}  ({f.provider_location})", ""))
    elif signature or f.provider_location:
        rows.append(("provider", signature or f.provider_location or "", ""))
    elif f.callee:
        # "not found" only where the rule says the provider lacks it; an absent location alone
        # (a callee the index could not read) proves nothing.
        rows.append(("provider", f"{f.callee} (not found)" if f.rule in MISSING_CALLEE_RULES else f.callee, ""))
    if f.conditional:
        condition = f.guard or ("something outside the consumer imports the module" if f.unreachable else "an undecided guard")
        rows.append(("only if", f"{condition} (conditional: not counted by --fail-on without --strict)", "yellow"))
    if f.reason:
        rows.append(("why", f.reason, "yellow"))
    if f.advice:
        rows.append(("fix", f.advice, "green"))
    message = DottedText(f.message, style="bold", overflow="fold")
    if not rows:
        return message
    grid = Table.grid(padding=(0, 1), expand=True)
    grid.add_column(style=_LABEL_STYLE, no_wrap=True)
    grid.add_column(overflow="fold", ratio=1)
    for label, value, style in rows:
        grid.add_row(label, DottedText(value, style=style, overflow="fold"))
    return Group(message, grid)


def _severity_text(f: Finding) -> Text:
    return Text(f.severity.value, style=_SEVERITY_STYLE.get(f.severity.value, ""))


def _file_table(findings: list[Finding], width: int, verbose: bool) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=True, width=width)
    table.add_column("line:col", no_wrap=True, justify="right")
    # A rule id is a name to search for: never folded mid-word.
    rule_width = max(len(f.rule) for f in findings)
    wide = width >= NARROW_WIDTH and width - (rule_width + len("line:col") + len("severity") + 6) >= FINDING_MIN_WIDTH
    if wide:
        table.add_column("severity", no_wrap=True)
        table.add_column("rule", no_wrap=True, min_width=rule_width, max_width=rule_width)
    # fold, not ellipsis: a long identifier must wrap inside the cell, never vanish.
    table.add_column("finding", overflow="fold", ratio=1)
    for f in findings:
        position = _position(f) + ("\n(if)" if f.conditional else "")
        if wide:
            table.add_row(position, _severity_text(f), Text(f.rule), _detail_cell(f, verbose))
        else:
            # Too narrow for four columns: severity and rule head the finding cell instead.
            head = _severity_text(f).append(f" {f.rule}", style="")
            table.add_row(position, Group(head, _detail_cell(f, verbose)))
    return table


def render(report: Report, options: RenderOptions) -> str:
    width = max(MIN_WIDTH, options.width) if options.width else terminal_width()
    out = StringIO()
    console = Console(
        file=out,
        width=width,
        force_terminal=options.color,
        color_system="standard" if options.color else None,
        no_color=not options.color,
        highlight=False,
        emoji=False,
        markup=False,
        soft_wrap=False,
        legacy_windows=False,
    )
    console.print(DottedText(f"apiaudit: {headline(report)}", style="bold"))
    shown = visible_findings(report, options.show_unresolved, options.show_unreachable)
    several_consumers = len({c.key for c in report.consumers}) > 1
    if not shown:
        console.print()
        console.print(Text("No findings." if not report.findings else "No findings to list.", style="green"))
    for (consumer, path), group in groupby(shown, key=lambda f: (f.consumer, f.path)):
        console.print()
        title = f"{consumer}: {path}" if several_consumers else path
        console.print(DottedText(title, style="bold underline"))
        console.print(_file_table(list(group), width, options.verbose))
    if report.delta is not None and report.delta.fixed:
        console.print()
        console.print(Text(f"Fixed by the upgrade ({len(report.delta.fixed)}):", style="bold"))
        for f in report.delta.fixed:
            console.print(DottedText(f"  {short_finding(f)}", style="green", overflow="fold"))
    if options.show_suppressed and report.suppressed:
        console.print()
        console.print(Text(f"Suppressed ({len(report.suppressed)}):", style="bold"))
        for s in report.suppressed:
            reason = f" -- {s.reason}" if s.reason else ""
            console.print(DottedText(f"  {short_finding(s.finding)}  [{s.by.value}: {s.where}{reason}]", style="dim", overflow="fold"))
    console.print()
    for line in policy_lines(report, unreachable_listed=options.show_unreachable):
        console.print(DottedText(line, overflow="fold"))
    console.print(Text(summary_line(report, unresolved_listed=options.show_unresolved, suppressed_listed=options.show_suppressed,
                                    unreachable_listed=options.show_unreachable)))  # fmt: skip
    # rich pads every line to the full width; trailing blanks only bloat logs and diffs.
    return "".join(line.rstrip() + "\n" for line in out.getvalue().splitlines())
