"""Output formats for a `Report`: one module per format behind `render`.

JSON is the complete, versioned record (docs/report-format.md) and reads back
with `report_from_dict`; table, SARIF and GitHub annotations are views of it.
"""

from __future__ import annotations

from typing import Callable

from apiaudit.errors import InputError
from apiaudit.findings import Report
from apiaudit.report import github, json_format, sarif, table
from apiaudit.report.base import RenderOptions
from apiaudit.report.json_format import report_from_dict, report_to_dict

FORMATS = ("table", "json", "sarif", "github")

_RENDERERS: dict[str, Callable[[Report, RenderOptions], str]] = {
    "table": table.render,
    "json": json_format.render,
    "sarif": sarif.render,
    "github": github.render,
}


def render(
    report: Report,
    fmt: str,
    *,
    show_unresolved: bool = False,
    width: int | None = None,
    color: bool = False,
) -> str:
    """The report as text in `fmt` (one of FORMATS).

    `show_unresolved` lists cannot-judge findings in table, SARIF and GitHub output
    (JSON always has them); `width` and `color` apply to the table only.
    """
    renderer = _RENDERERS.get(fmt)
    if renderer is None:
        raise InputError(f"unknown output format '{fmt}' (choose from {', '.join(FORMATS)})")
    return renderer(report, RenderOptions(show_unresolved=show_unresolved, width=width, color=color))


__all__ = ["FORMATS", "RenderOptions", "render", "report_from_dict", "report_to_dict"]
