"""The click group behind `apiaudit`: each command's module is imported when that command runs.

A warm `scan` never pays for libcst, the runner or the matrix machinery; `apiaudit.cli.main`
imports this module only once it knows click is needed (a bare `--version` does not).
"""

from __future__ import annotations

import importlib
import warnings
from typing import NoReturn

import click

from apiaudit import __version__
from apiaudit.cli.commands import COMMANDS


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module, attribute, _ = entry
        command = getattr(importlib.import_module(module), attribute)
        return command if isinstance(command, click.Command) else None

    # click answers a closed pipe with exit 1; apiaudit ends as `cat` does (apiaudit.cli.streams).
    def make_context(self, *args, **kwargs) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)  # `apiaudit --help | head -1`
        except OSError as exc:
            _reader_gone(exc)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)  # every command, its --help included
        except OSError as exc:
            _reader_gone(exc)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, short) for name, (_, _, short) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _reader_gone(exc: OSError) -> NoReturn:
    from apiaudit.cli.streams import end_on_broken_pipe, is_broken_pipe

    if is_broken_pipe(exc):
        end_on_broken_pipe()
    raise exc


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="apiaudit")
def cli() -> None:
    """Find every call-site mismatch between a consumer and a provider's internal API, statically."""
    warnings.simplefilter("default")
