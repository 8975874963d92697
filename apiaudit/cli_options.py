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
    """--consumer/--provider/--rules/--cache-dir/--model/--architecture, as `scan` defines them.

    The command receives `model`: the ModelFacts `--model`/`--architecture` name, or None.
    """

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
    @click.option(
        "--model",
        "model_path",
        type=click.Path(path_type=Path),
        metavar="PATH",
        help="The model the job loads: a local model directory (config.json, tokenizer_config.json; "
        "weights are never read) or its config.json. Checks code bound to the model against its class.",
    )
    @click.option(
        "--architecture",
        metavar="NAME",
        help="The model's architecture (a class name such as LlamaForCausalLM), instead of or overriding --model's.",
    )
    @functools.wraps(func)
    def wrapper(*args, model_path=None, architecture=None, **kwargs):
        return guarded(_with_model(func, model_path, architecture))(*args, **kwargs)

    return wrapper


def _with_model(func, model_path, architecture):
    def call(*args, **kwargs):
        from apiaudit.model import load_model

        if "model" in kwargs:  # invoked from another command that already read it
            return func(*args, **kwargs)
        return func(*args, model=load_model(model_path, architecture), **kwargs)

    return call


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
