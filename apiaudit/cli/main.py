"""The command line: a thin, lazy layer over the stages.

`apiaudit` imports only click at start (`apiaudit.cli.group`); each command's module is
imported when that command runs. A bare `apiaudit --version` imports not even click: `main`
answers it first, with the text click's version option prints; so does a plain `scan` whose
inputs are unchanged since it last ran (`apiaudit.cache.replay`: it writes what it wrote). Each command is a module of
this package, named as the command (`apiaudit.cli.commands` lists them).
"""

from __future__ import annotations

import os
import sys

from apiaudit import __version__
from apiaudit.cli.commands import AUDIT_COMMANDS


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        # What `click.version_option` prints, without importing click (it costs more than Python's own start).
        sys.stdout.write(f"apiaudit, version {__version__}\n")
        return
    recorder = None
    if sys.argv[1:2] == ["scan"]:
        # A plain scan with nothing changed replays what it wrote last time, before click is imported.
        from apiaudit.cache import replay

        invocation = replay.Invocation.of(sys.argv[1:])
        if invocation is not None:
            code = invocation.answer()
            if code is not None:
                raise SystemExit(code)
            recorder = invocation.record()
    from apiaudit.cli.group import cli
    from apiaudit.cli.options import install_signal_handlers
    from apiaudit.infra.gcpause import for_one_command

    # An audit is one short-lived process building large acyclic structures (ast trees, cache
    # values): at the default thresholds the collector's passes over them cost more than the
    # cycles they free. `run` (training) and library callers keep Python's settings.
    if _command() in AUDIT_COMMANDS:
        for_one_command()
    install_signal_handlers()
    ended: object = KeyboardInterrupt  # what ended the command, if not an exit code
    try:
        cli(prog_name="apiaudit")
    except SystemExit as exc:
        ended = exc.code
        raise
    finally:
        if recorder is not None:
            recorder.finish(ended)


def _command() -> str | None:
    """The command the command line names (its first word that is not an option)."""
    return next((arg for arg in sys.argv[1:] if not arg.startswith("-")), None)


def run() -> None:
    """The `apiaudit` command (its console script and `python -m apiaudit`): `main`, and after an
    audit, leave at once. Everything is written and flushed by then; what is left is freeing
    the index and consumer values one by one, which costs a large scan about half a second."""
    from apiaudit.cli.streams import end_on_broken_pipe, flush_standard_streams, is_broken_pipe

    try:
        try:
            main()
            code: object = 0
        except SystemExit as exc:
            code = exc.code
        # A reader that went away (`| head -1`) ends the command quietly, exit 141, as `cat` does.
        flush_standard_streams()
    except OSError as exc:
        if not is_broken_pipe(exc):
            raise
        end_on_broken_pipe()
    if _command() not in AUDIT_COMMANDS:
        raise SystemExit(code)
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)  # what SystemExit("message") prints
        code = 1
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(code or 0)


if __name__ == "__main__":
    run()
