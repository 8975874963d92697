"""Options every audit command shares (scan, fix, preflight, run, matrix), and error handling."""

from __future__ import annotations

import functools
import os
import signal
import sys
from pathlib import Path

import click

from apiaudit.cli.streams import end_on_broken_pipe, is_broken_pipe
from apiaudit.errors import InputError
from apiaudit.infra.atomic import is_disk_full
from apiaudit.infra.callers import on_command_line

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_TERMINATED = 128 + signal.SIGTERM


class OneLineUsageError(click.ClickException):
    """A bad option value found while the command line is read: one line, exit 2, before any work."""

    exit_code = EXIT_USAGE

    def show(self, file=None) -> None:
        click.echo(f"apiaudit: error: {self.format_message()}", err=True)


class OutputFile(click.ParamType):
    """A file a command writes (`-o/--output`, `--report`): `~` expanded, and checked up front.

    A folder, a path under a file, or a folder apiaudit cannot write into is refused when the
    command line is read, so a long scan never ends in "cannot write the report". Missing
    folders are created when the file is written.
    """

    name = "file"

    def convert(self, value, param, ctx) -> Path:
        flag = max(param.opts, key=len) if param is not None and param.opts else "the output"
        if not os.fspath(value):
            raise OneLineUsageError(f"{flag} needs a file name")
        path = Path(os.path.expanduser(os.fspath(value)))
        if path.is_dir():
            raise OneLineUsageError(f"{flag} {path} is a folder; give a file name in it")
        folder = path.absolute().parent
        existing = folder
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        if not existing.is_dir():
            raise OneLineUsageError(f"{flag} {path}: {existing} is a file, not a folder")
        if not os.access(existing, os.W_OK | os.X_OK):
            raise OneLineUsageError(f"{flag} {path}: cannot write into {existing}")
        if path.exists() and not path.is_file():
            return path  # a device or a pipe (/dev/stdout, >(...)): written into, never replaced
        if existing == folder:
            why = _cannot_create_in(folder)
            if why is not None:
                # /proc/version exists, but a report is a new file renamed over its target.
                raise OneLineUsageError(f"{flag} {path}: {why}; a report is written as a new file beside it, then renamed over it")
        return path


def _cannot_create_in(folder: Path) -> str | None:
    """Why no new file can be created in `folder` (a kernel file system, a read-only mount); None when one can."""
    import tempfile

    try:
        fd, probe = tempfile.mkstemp(prefix=".apiaudit-probe-", dir=folder)
    except OSError as exc:
        return f"cannot create a file in {folder} ({exc.strerror or exc})"
    os.close(fd)
    os.unlink(probe)
    return None


def prepare_output(path: Path) -> None:
    """Create the folders of an output file checked by `OutputFile`."""
    path.parent.mkdir(parents=True, exist_ok=True)


class CacheDirectory(click.ParamType):
    """`--cache-dir` / `APIAUDIT_CACHE_DIR`: `~` expanded even when quoted (never a literal `./~`)."""

    name = "directory"

    def convert(self, value, param, ctx) -> Path:
        path = Path(os.path.expanduser(os.fspath(value)))
        if path.exists() and not path.is_dir():
            raise OneLineUsageError(f"--cache-dir {path} is a file, not a folder")
        return path


def expand_user(path: Path | str | None) -> Path | None:
    """`~` expanded in a path given through the Python API or an environment variable."""
    return None if path is None else Path(os.path.expanduser(os.fspath(path)))


def _terminated(signum, frame) -> None:
    # SystemExit unwinds the stack, so every `finally` runs: partial cache folders and
    # temporary files are removed.
    try:
        os.write(2, b"apiaudit: terminated\n")
    except OSError:
        pass
    release = sys.modules.get("apiaudit.sources.release")
    if release is not None:
        release.stop_running_pips()  # pips in fetch threads too, not only the one this thread waits on
    raise SystemExit(EXIT_TERMINATED)


def install_signal_handlers() -> None:
    """SIGTERM (a CI timeout, `kill`) ends the command like Ctrl-C does: cleaned up, one line."""
    try:
        signal.signal(signal.SIGTERM, _terminated)
    except (ValueError, OSError):
        pass  # not the main thread: leave the default

# Spelled once for every command that has them (scan, fix, preflight, matrix, explain).
FAIL_ON_HELP = ("Lowest severity that makes the exit code 1: error, warning, info, or never (default: the config's "
                "fail-on, else error). cannot-judge never fails.")


def quiet_option(func):
    """--quiet/-q: no progress, no notes ("wrote ..."); what the command reports is still printed."""
    return click.option(
        "--quiet", "-q", is_flag=True,
        help="Print no progress and no notes such as 'wrote ...' (warnings and errors still print; so do the findings "
        "and the report).",
    )(func)


NO_PROGRESS_HELP = "Draw no progress bars (notices stay one line each on stderr)."


def jobs_option(func):
    """--jobs N: how many processes a large consumer's cold scan is shared among (`apiaudit.infra.workers`)."""

    @click.option(
        "--jobs",
        type=click.IntRange(min=1),
        envvar="APIAUDIT_JOBS",
        metavar="N",
        help="Processes a large consumer's cold scan is shared among (default: the CPUs, at most 4; 1: this process only).",
    )
    @functools.wraps(func)
    def wrapper(*args, jobs=None, **kwargs):
        if jobs is not None:
            from apiaudit.infra.workers import set_jobs

            set_jobs(jobs)
        return func(*args, **kwargs)

    return wrapper


def audit_options(func):
    """--consumer/--provider/--rules/--cache-dir/--model/--architecture/--verify-wheels, as `scan` defines them.

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
        type=CacheDirectory(),
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
    @click.option(
        "--verify-wheels",
        is_flag=True,
        help="Download each release's whole wheel and check its sha256 against the index's, instead of reading "
        "only its .py files by HTTP range requests (docs/scan.md: what each verifies).",
    )
    @functools.wraps(func)
    def wrapper(*args, model_path=None, architecture=None, verify_wheels=False, **kwargs):
        if verify_wheels:
            # Imported only when asked: a warm scan never loads the release machinery.
            from apiaudit.sources.release import set_verify_wheels

            set_verify_wheels(True)
        return guarded(_with_model(func, model_path, architecture))(*args, **kwargs)

    return wrapper


def fail_on_option(func):
    """--fail-on error|warning|info|never (default error)."""
    from apiaudit.findings import FAIL_ON_CHOICES

    return click.option(
        "--fail-on", type=click.Choice(FAIL_ON_CHOICES), default="error", help=FAIL_ON_HELP
    )(func)


def output_option(what: str = "the report", *, aliases: tuple[str, ...] = (), suffixes: str = ".json, .sarif, .md, .xml, .txt"):
    """-o/--output FILE; the format follows the file's suffix unless --format says otherwise."""

    def decorate(func):
        names = ["--output", "-o", *aliases]
        return click.option(
            *names,
            "output",
            type=OutputFile(),
            metavar="FILE",
            help=f"Write {what} to FILE instead of stdout ({suffixes}: the format follows the suffix "
            "unless --format is given).",
        )(func)

    return decorate


def _with_model(func, model_path, architecture):
    def call(*args, **kwargs):
        if "model" in kwargs:  # invoked from another command that already read it
            return func(*args, **kwargs)
        if model_path is None and architecture is None:
            return func(*args, model=None, **kwargs)  # no model named: the model stage is not imported
        from apiaudit.model import load_model

        return func(*args, model=load_model(model_path, architecture), **kwargs)

    return call


def guarded(func):
    """Bad input or a full disk -> one line and exit 2; a bug -> one line and exit 3 (APIAUDIT_DEBUG=1 for the
    traceback); a closed reader (`| head`) -> nothing, exit 141."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            with on_command_line():  # messages name this command's options
                return func(*args, **kwargs)
        except InputError as exc:
            click.echo(f"apiaudit: error: {exc}", err=True)
            sys.exit(EXIT_USAGE)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except KeyboardInterrupt:
            click.echo("apiaudit: interrupted", err=True)
            sys.exit(130)
        except OSError as exc:
            if is_broken_pipe(exc):
                end_on_broken_pipe()  # the reader went away (`| head`): not a bug, exit 141
            if is_disk_full(exc):
                where = exc.filename or "a file"
                click.echo(f"apiaudit: error: no space left on device writing {where}", err=True)
                sys.exit(EXIT_USAGE)
            if os.environ.get("APIAUDIT_DEBUG"):
                raise
            click.echo(f"apiaudit: internal error: {type(exc).__name__}: {exc} (set APIAUDIT_DEBUG=1 for details)", err=True)
            sys.exit(EXIT_INTERNAL)
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
