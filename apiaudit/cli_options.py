"""Options every audit command shares (scan, fix, preflight, run, matrix), and error handling."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import click

from apiaudit.errors import InputError

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


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


def guard_options(func):
    """--provider-version / --python-version / --strict: how guards on versions are judged."""

    @click.option(
        "--provider-version",
        metavar="VERSION",
        help="The provider's version, when its source does not say (a bare checkout). Version guards fold with it.",
    )
    @click.option(
        "--python-version",
        metavar="X.Y",
        callback=_python_version,
        help="The Python the audited code runs on, for `sys.version_info` guards (default: this interpreter's).",
    )
    @click.option("--strict", is_flag=True, help="Count conditional findings (behind a guard that cannot be decided) toward --fail-on.")
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


def _python_version(ctx, param, value):
    if value is None:
        return None
    try:
        parts = tuple(int(p) for p in value.split("."))
    except ValueError:
        raise click.BadParameter(f"{value!r} is not X.Y or X.Y.Z") from None
    if not 2 <= len(parts) <= 3:
        raise click.BadParameter(f"{value!r} is not X.Y or X.Y.Z")
    return parts
