"""Output formats for a `Report`: one module per format behind `render`.

JSON is the complete, versioned record (docs/report-format.md) and reads back
with `report_from_dict`; table, SARIF and GitHub annotations are views of it.
Only the chosen format's module is imported.
"""

from __future__ import annotations

import errno
import importlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from apiaudit.errors import InputError
from apiaudit.report.base import RenderOptions, shown_paths

if TYPE_CHECKING:
    from apiaudit.findings import Report

FORMATS = ("table", "json", "sarif", "github", "markdown", "junit", "gitlab")
_MODULES = {
    "table": "table", "json": "json_format", "sarif": "sarif", "github": "github",
    "markdown": "markdown", "junit": "junit", "gitlab": "gitlab",
}  # fmt: skip
# What `-o FILE` writes when --format is not given (GitLab's JSON needs --format gitlab).
# A suffix names formats in order of preference: a command without the first takes the next.
SUFFIX_FORMATS: dict[str, tuple[str, ...]] = {
    ".json": ("json",), ".sarif": ("sarif",), ".txt": ("table",), ".md": ("markdown", "table"),
    ".log": ("table",), ".xml": ("junit",),
}  # fmt: skip


def render(
    report: Report,
    fmt: str,
    *,
    show_unresolved: bool = False,
    width: int | None = None,
    color: bool = False,
    show_suppressed: bool = False,
    show_unreachable: bool = False,
    verbose: bool = False,
) -> str:
    """The report as text in `fmt` (one of FORMATS).

    `show_unresolved` lists cannot-judge findings in table, SARIF and GitHub output
    (JSON always has them); `width` and `color` apply to the table only;
    `show_suppressed` lists suppressed findings (every format counts them);
    `show_unreachable` lists the findings of modules nothing imports (else summed up in one line);
    `verbose` shows provider signatures whole in the table (else the parameters that matter).
    """
    module = _MODULES.get(fmt)
    if module is None:
        raise InputError(f"unknown output format '{fmt}' (choose from {', '.join(FORMATS)})")
    renderer = importlib.import_module(f"apiaudit.report.{module}").render
    return renderer(
        shown_paths(report),  # every format names files from the project root

        RenderOptions(
            show_unresolved=show_unresolved, width=width, color=color, show_suppressed=show_suppressed,
            show_unreachable=show_unreachable, verbose=verbose,
        ),  # fmt: skip
    )


def format_for_output(fmt: str | None, output: Path | None, *, formats: tuple[str, ...] = FORMATS, unnamed: str = "table") -> str:
    """--format if given; else what -o's suffix says; else `unnamed` (the table, as ruff and mypy
    print: on a terminal, in a pipe and in a file alike; JSON only when asked for).

    A name without a suffix (`-o /dev/stdout`, `-o >(gzip > r.gz)`) is `unnamed` too. A suffix no
    format has (`r.sarf`) is an InputError listing the known ones, never a file of a format the
    person did not choose; so is one that names only formats the command does not write
    (`matrix -o m.sarif`)."""
    if fmt:
        return fmt
    if output is None:
        return unnamed
    suffix = Path(output).suffix.lower()
    if not suffix:
        return unnamed
    named = SUFFIX_FORMATS.get(suffix)
    if named is None:
        raise InputError(
            f"-o {output}: {suffix} is no report format's suffix (known: {', '.join(_known_suffixes(formats))}); "
            "name the file with one, or pass --format"
        )
    for by_suffix in named:
        if by_suffix in formats:
            return by_suffix
    raise InputError(
        f"-o {output}: a {suffix} file is {' or '.join(named)}, which this command does not write "
        f"(it writes {', '.join(formats)}); name a {_suffix_for(formats)} file or pass --format"
    )


def _known_suffixes(formats: tuple[str, ...]) -> list[str]:
    """The suffixes that name a format the command writes, with that format (`.json json`)."""
    return [f"{suffix} ({next(f for f in named if f in formats)})" for suffix, named in SUFFIX_FORMATS.items()
            if any(f in formats for f in named)]  # fmt: skip


def _suffix_for(formats: tuple[str, ...]) -> str:
    """The suffixes that name `formats`, as a person would list them (`.json or .txt`)."""
    suffixes = [suffix for suffix, named in SUFFIX_FORMATS.items() if named[0] in formats] or [".json"]
    return suffixes[0] if len(suffixes) == 1 else f"{', '.join(suffixes[:-1])} or {suffixes[-1]}"


def write_output(text: str, output: Path | None, fmt: str, *, quiet: bool = False) -> None:
    """Print `text`, or write it to `output` whole (never a partial file) and say so on stderr
    (unless `quiet`: the preflight gate's clean run is one line)."""
    if not text.endswith("\n"):
        text += "\n"
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from apiaudit.infra.atomic import atomic_write

    path = Path(output).expanduser()
    if path.is_dir():
        raise InputError(f"cannot write {fmt} output to {output}: it is a directory")
    try:
        if path.exists() and not path.is_file():
            # A device or a pipe (/dev/stdout, /dev/null, `>(...)`): written into; renaming a
            # file over it would replace the device itself.
            with open(path, "w", encoding="utf-8") as stream:
                stream.write(text)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, text)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise InputError(f"no space left on device writing {output}") from None
        raise InputError(f"cannot write {output}: {exc.strerror or exc}") from None
    if not quiet:
        print(f"apiaudit: wrote {fmt} output to {output}", file=sys.stderr)


def __getattr__(name: str) -> Any:
    # The JSON helpers are public here but load only when asked for.
    if name in ("report_from_dict", "report_to_dict"):
        from apiaudit.report import json_format

        return getattr(json_format, name)
    raise AttributeError(f"module 'apiaudit.report' has no attribute {name!r}")


__all__ = ["FORMATS", "RenderOptions", "format_for_output", "render", "report_from_dict", "report_to_dict", "write_output"]
