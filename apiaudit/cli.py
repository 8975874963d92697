"""The command line: a thin, lazy layer over the stages.

`apiaudit` imports only click at start (`apiaudit.cli_group`); each command's module is
imported when that command runs. A bare `apiaudit --version` imports not even click: `main`
answers it first, with the text click's version option prints. Each command lives beside its stage.
"""

from __future__ import annotations

import os
import sys

from apiaudit import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from apiaudit.cli_group import LazyGroup, cli

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

# The names click's group defines, served from `apiaudit.cli_group` on first use.
_FROM_GROUP = ("cli", "LazyGroup")


def __getattr__(name: str) -> object:
    if name in _FROM_GROUP:
        from apiaudit import cli_group

        return getattr(cli_group, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# (young, middle, old) generation thresholds for an audit; Python's defaults are (700, 10, 10).
_GC_THRESHOLDS = (100_000, 50, 100)
_AUDIT_COMMANDS = frozenset({"scan", "fix", "preflight", "matrix", "explain"})


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        # What `click.version_option` prints, without importing click (it costs more than Python's own start).
        sys.stdout.write(f"apiaudit, version {__version__}\n")
        return
    import gc

    from apiaudit.cli_group import cli
    from apiaudit.cli_options import install_signal_handlers

    # An audit is one short-lived process building large acyclic structures (ast trees, cache
    # values): at the default thresholds the collector's passes over them cost more than the
    # cycles they free (a third of a cold 1,000-file scan). `run` (training) and library callers
    # keep Python's settings.
    if _command() in _AUDIT_COMMANDS:
        gc.set_threshold(*_GC_THRESHOLDS)
    install_signal_handlers()
    cli(prog_name="apiaudit")


def _command() -> str | None:
    """The command the command line names (its first word that is not an option)."""
    return next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)


def run() -> None:
    """The `apiaudit` command (its console script and `python -m apiaudit`): `main`, and after an
    audit, leave at once. Everything is written and flushed by then; what is left is freeing
    the index and consumer values one by one, which costs a large scan about half a second."""
    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    if _command() not in _AUDIT_COMMANDS:
        raise SystemExit(code)
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)  # what SystemExit("message") prints
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        code = code or 1  # the output could not be written (a closed pipe): not a success
    os._exit(code or 0)


if __name__ == "__main__":
    run()
