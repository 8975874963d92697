"""Who is calling: the command line or a Python program. Bad input is said in the caller's own
terms: `--consumer X` to the command line, `consumers=["X"]` to a caller of the Python API.

Messages are written once, in the command line's words; the public API (`apiaudit.scan`,
`preflight`, `audit_launch`) rewrites the options they name into its parameters as an
`InputError` leaves it, unless the command line is the caller (`on_command_line`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import re
from typing import Callable, Iterator, Literal, TypeVar

from apiaudit.errors import InputError

ValueForm = Literal["list", "text", "flag"]
_ON_COMMAND_LINE = contextvars.ContextVar("apiaudit_on_command_line", default=False)

# An option of the command line -> the public API's parameter that means the same, and how a
# value is written: "list" (`consumers=["X"]`), "text" (`provider="X"`) or "flag" (`offline=True`).
PYTHON_PARAMETERS: dict[str, tuple[str, ValueForm]] = {
    "--consumer": ("consumers", "list"),
    "--provider": ("provider", "text"),
    "--script-provider": ("script_provider", "text"),
    "--stack-provider": ("stack_provider", "text"),
    "--rules": ("rules_dirs", "list"),
    "--cache-dir": ("cache_dir", "text"),
    "--fail-on": ("fail_on", "text"),
    "--output": ("report_path", "text"),
    "--report": ("report_path", "text"),
    "--format": ("report_format", "text"),
    "--provider-version": ("provider_version", "text"),
    "--python-version": ("python_version", "text"),
    "--against": ("against", "text"),
    "--baseline": ("baseline", "text"),
    "--offline": ("offline", "flag"),
}
# An option (or options joined by "/"), and the value after it where one follows: a quoted
# text, or a word that reads as a value (holds = < > . / or is a placeholder such as VERSION).
_OPTION = re.compile(
    r"(?<![\w-])(?P<options>--[a-z][a-z-]*(?:/--[a-z][a-z-]*)*)"
    r"(?: (?P<value>'[^']*'|\"[^\"]*\"|[^\s,;:()']*[=<>./][^\s,;:()']*|[A-Z][A-Z_]*(?:==[A-Z_]+)?)(?![\w]))?"
)

# A command line quoted in a message (`apiaudit matrix --provider ...`) is one to type: kept as it is.
_QUOTED_COMMAND = re.compile(r"`[^`]*`")

F = TypeVar("F", bound=Callable)


@contextlib.contextmanager
def on_command_line() -> Iterator[None]:
    """Within the block the command line is the caller: messages keep its options."""
    token = _ON_COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _ON_COMMAND_LINE.reset(token)


def in_python_terms(message: str) -> str:
    """`message` with each command-line option the Python API has a parameter for written as that
    parameter (`--consumer X` -> `consumers=["X"]`, `--provider` -> `provider=`)."""

    def python(match: re.Match[str]) -> str:
        options = match["options"].split("/")
        if not all(o in PYTHON_PARAMETERS for o in options):
            return match[0]
        value = match["value"]
        if value is not None and value[:1] in "'\"":
            value = value[1:-1]
        said = []
        for option in options:
            name, form = PYTHON_PARAMETERS[option]
            if form == "flag":
                said.append(f"{name}=True")
            elif value is None:
                said.append(f"{name}=")
            else:
                said.append(f'{name}=["{value}"]' if form == "list" else f'{name}="{value}"')
        return "/".join(said)

    kept = _QUOTED_COMMAND.split(message)
    commands = _QUOTED_COMMAND.findall(message)
    out = [_OPTION.sub(python, kept[0])]
    for command, text in zip(commands, kept[1:]):
        out += [command, _OPTION.sub(python, text)]
    return "".join(out)


def python_api(func: F) -> F:
    """A function of the public API: bad input it raises names its parameters, not the options
    of the command line, when a Python program called it."""

    @functools.wraps(func)
    def called(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except InputError as exc:
            if not _ON_COMMAND_LINE.get() and exc.args and isinstance(exc.args[0], str):
                exc.args = (in_python_terms(exc.args[0]), *exc.args[1:])
            raise

    return called  # type: ignore[return-value]
