"""The command line: a thin, lazy layer over the stages.

`apiaudit` imports only click at start; each command's module is imported when that command
runs (a warm `scan` never pays for libcst, the runner or the matrix machinery, and
`apiaudit --version` imports nothing of the engine). Each command lives beside its stage.
"""

from __future__ import annotations

import importlib
import warnings

import click

from apiaudit import __version__
from apiaudit.cli_options import install_signal_handlers

# name -> (module, attribute, one-line help shown by `apiaudit --help` without importing it)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "scan": ("apiaudit.audit_command", "scan_command", "Report every mismatch between the consumer(s) and the provider."),
    "fix": ("apiaudit.fixes.command", "fix_command", "Show the fixes as a diff, or apply them, or write them into an overlay."),
    "preflight": ("apiaudit.gate.command", "preflight_command", "Audit before a run: one line when clean, exit 1 on blocking findings."),
    "run": ("apiaudit.runner.command", "run_command", "Run the EAGLE-3 pipeline of CONFIG.toml behind the preflight gate."),
    "matrix": ("apiaudit.matrix.command", "matrix_command", "Scan the consumer against every provider release in a range."),
    "explain": ("apiaudit.matrix.command", "explain_command", "Date each finding: the first provider release with it, and what changed."),
    "config": ("apiaudit.policy.command", "config_command", "Print the effective settings and where each came from."),
    "rule": ("apiaudit.report.rule_command", "rule_command", "Print a rule's documentation: what, why, an example, the fix."),
}


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

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, short) for name, (_, _, short) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="apiaudit")
def cli() -> None:
    """Find every call-site mismatch between a consumer and a provider's internal API, statically."""
    warnings.simplefilter("default")


def main() -> None:
    install_signal_handlers()
    cli(prog_name="apiaudit")


if __name__ == "__main__":
    main()
