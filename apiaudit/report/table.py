"""The human-readable report: findings grouped by file, rendered with rich to a string."""

from __future__ import annotations

from io import StringIO
from itertools import groupby

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from apiaudit.findings import Finding, Report
from apiaudit.report.base import RenderOptions, headline, summary_line, visible_findings

DEFAULT_WIDTH = 120
# Below this width severity and rule move into the finding cell, leaving it room to read.
NARROW_WIDTH = 90
_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
_LABEL_STYLE = "dim"


def _position(f: Finding) -> str:
    # Columns are 0-based in findings; editors and people count from 1.
    return f"{f.line}:{f.column + 1}" if f.line > 0 else "-"


def _detail_cell(f: Finding) -> RenderableType:
    """Message, then the call as written, the provider's signature where it lives, the fix.

    A label/value grid gives wrapped values a hanging indent under their label.
    """
    rows: list[tuple[str, str, str]] = []
    if f.source:
        rows.append(("call", f.source.strip(), ""))
    if f.signature and f.provider_location:
        rows.append(("provider", f"{f.signature}  ({f.provider_location})", ""))
    elif f.signature or f.provider_location:
        rows.append(("provider", f.signature or f.provider_location or "", ""))
    elif f.callee:
        rows.append(("provider", f"{f.callee} (not found)", ""))
    if f.conditional:
        rows.append(("only if", f"{f.guard or 'an undecided guard'} (conditional: not counted by --fail-on without --strict)", "yellow"))
    if f.advice:
        rows.append(("fix", f.advice, "green"))
    message = Text(f.message, style="bold", overflow="fold")
    if not rows:
        return message
    grid = Table.grid(padding=(0, 1), expand=True)
    grid.add_column(style=_LABEL_STYLE, no_wrap=True)
    grid.add_column(overflow="fold", ratio=1)
    for label, value, style in rows:
        grid.add_row(label, Text(value, style=style, overflow="fold"))
    return Group(message, grid)


def _severity_text(f: Finding) -> Text:
    return Text(f.severity.value, style=_SEVERITY_STYLE.get(f.severity.value, ""))


def _file_table(findings: list[Finding], width: int) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, expand=True, width=width)
    table.add_column("line:col", no_wrap=True, justify="right")
    if width >= NARROW_WIDTH:
        table.add_column("severity", no_wrap=True)
        table.add_column("rule", overflow="fold", max_width=28)
    # fold, not ellipsis: a long identifier must wrap inside the cell, never vanish.
    table.add_column("finding", overflow="fold", ratio=1)
    for f in findings:
        if width >= NARROW_WIDTH:
            table.add_row(_position(f), _severity_text(f), Text(f.rule), _detail_cell(f))
        else:
            # Too narrow for four columns: severity and rule head the finding cell instead.
            head = _severity_text(f).append(f" {f.rule}", style="")
            table.add_row(_position(f), Group(head, _detail_cell(f)))
    return table


def render(report: Report, options: RenderOptions) -> str:
    width = options.width or DEFAULT_WIDTH
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
    console.print(Text(f"apiaudit: {headline(report)}", style="bold"))
    shown = visible_findings(report, options.show_unresolved)
    several_consumers = len({c.name for c in report.consumers}) > 1
    if not shown:
        console.print()
        console.print(Text("No findings." if not report.findings else "No findings to list.", style="green"))
    for (consumer, path), group in groupby(shown, key=lambda f: (f.consumer, f.path)):
        console.print()
        title = f"{consumer}: {path}" if several_consumers else path
        console.print(Text(title, style="bold underline"))
        console.print(_file_table(list(group), width))
    console.print()
    console.print(Text(summary_line(report, unresolved_listed=options.show_unresolved)))
    # rich pads every line to the full width; trailing blanks only bloat logs and diffs.
    return "".join(line.rstrip() + "\n" for line in out.getvalue().splitlines())
