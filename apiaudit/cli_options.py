"""Options every audit command shares (scan, fix, preflight, run, matrix), and error handling."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import click

from apiaudit.errors import InputError

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

# Spelled once for every command that has them (scan, fix, preflight, matrix, explain).
FAIL_ON_HELP = ("Lowest severity that makes the exit code 1: error, warning, info, or never (default: the config's "
                "fail-on, else error). cannot-judge never fails.")


def audit_options(func):
    """--consumer/--provider/--rules/--cache-dir, as `scan` defines them."""

    @click.option(
        "--consumer",
        "consumers",
        multiple=True,
        metavar="X",
        help="What to audit: an installed distribution NAME, NAME==VERSION (a released wheel), or a path "
        "(package dir, job script, folder of scripts). Repeatable. Default: the rules' default consumers.",
    )
    @click.option(
        "--provider",
        metavar="X",
        help="What to audit against: an installed NAME, NAME==VERSION, or a package directory. Default: the rules' provider.",
    )
    @click.option(
        "--rules",
        "rules_dirs",
        multiple=True,
        type=click.Path(path_type=Path),
        metavar="DIR",
        help="An extra directory of rule files (*.toml). Repeatable.",
    )
    @click.option(
        "--cache-dir",
        type=click.Path(path_type=Path),
        envvar="APIAUDIT_CACHE_DIR",
        help="Where fetched releases and provider indexes are cached (default: the XDG cache dir).",
    )
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


def fail_on_option(func):
    """--fail-on error|warning|info|never (default error)."""
    from apiaudit.findings import FAIL_ON_CHOICES

    return click.option(
        "--fail-on", type=click.Choice(FAIL_ON_CHOICES), default="error", help=FAIL_ON_HELP
    )(func)


def output_option(what: str = "the report", *, aliases: tuple[str, ...] = ()):
    """-o/--output FILE; the format follows the file's suffix unless --format says otherwise."""

    def decorate(func):
        names = ["--output", "-o", *aliases]
        return click.option(
            *names,
            "output",
            type=click.Path(path_type=Path),
            metavar="FILE",
            help=f"Write {what} to FILE instead of stdout (.json, .sarif, .md, .xml, .txt: the format follows the suffix "
            "unless --format is given).",
        )(func)

    return decorate


def guarded(func):
    """Bad input -> one line and exit 2; a bug -> one line and exit 3 (APIAUDIT_DEBUG=1 for the traceback)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except InputError as exc:
            click.echo(f"apiaudit: error: {exc}", err=True)
            sys.exit(EXIT_USAGE)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except KeyboardInterrupt:
            click.echo("apiaudit: interrupted", err=True)
            sys.exit(130)
        except Exception as exc:  # noqa: BLE001
            if os.environ.get("APIAUDIT_DEBUG"):
                raise
            click.echo(f"apiaudit: internal error: {type(exc).__name__}: {exc} (set APIAUDIT_DEBUG=1 for details)", err=True)
            sys.exit(EXIT_INTERNAL)

    return wrapper


def policy_options(func):
    """--baseline/--write-baseline/--show-suppressed/--offline: how the project's policy is applied."""
    func = click.option("--offline", is_flag=True, default=None,
                        help="Fetch nothing: use only cached releases and installed code (config: offline).")(func)
    func = click.option("--show-suppressed", is_flag=True, help="List suppressed and baselined findings too (always counted).")(func)
    func = click.option("--write-baseline", type=click.Path(path_type=Path), metavar="FILE",
                        help="Record every current finding in FILE and exit 0; later runs with --baseline FILE report only new ones.")(func)
    func = click.option("--baseline", type=click.Path(path_type=Path), metavar="FILE",
                        help="Report only findings not recorded in FILE (config: baseline).")(func)
    return func


def project_settings(**cli_values):
    """The config file's settings (found from the working directory up) with the command line on top.

    A `fail_on` left at its default does not count as given, so the config's `fail-on` applies."""
    from apiaudit.policy.config import load_settings

    ctx = click.get_current_context(silent=True)
    if ctx is not None and "fail_on" in cli_values:
        source = ctx.get_parameter_source("fail_on")
        if source is not None and source.name == "DEFAULT":
            cli_values["fail_on"] = None
    settings = load_settings().with_cli(**cli_values)
    if ctx is not None and cli_values.get("cache_dir") is not None:
        source = ctx.get_parameter_source("cache_dir")
        if source is not None and source.name == "ENVIRONMENT":
            settings = settings.with_origin("cache-dir", "$APIAUDIT_CACHE_DIR")
    return settings
