"""`apiaudit impact OLD NEW`: which known downstreams a provider change breaks. Exit 0 none, 1 one
breaks, 2 bad input (OLD, NEW, a downstream list), 3 a bug."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from apiaudit.cli.options import NO_PROGRESS_HELP, CacheDirectory, guarded, output_option, project_settings, quiet_option
from apiaudit.impact.render import IMPACT_FORMATS


def executor_options(func):
    """Where the sweep's scans run (`impact`, `atlas`): `--executor` and `--workers`."""
    func = click.option("--workers", type=click.IntRange(min=1), metavar="N",
                        help="Scans at once with --executor local (default: the CPU cores, at most 4; 1: in this process).")(func)  # fmt: skip
    return click.option("--executor", "executor", default="local", show_default=True, metavar="ADDRESS",
                        help="Where the scans run: local (this machine's process pool), or a Dask distributed scheduler "
                        "as dask://HOST:PORT or tcp://HOST:PORT (pip install 'apiaudit[distributed]').")(func)  # fmt: skip


@click.command("impact")
@click.argument("old", metavar="OLD")
@click.argument("new", metavar="NEW")
@click.option("--downstream", "downstream_files", multiple=True, type=click.Path(path_type=Path), metavar="FILE",
              help="A downstream list (TOML: downstream = [specs or {spec, with-deps}], replace-bundled): added to the "
              "bundled list and [tool.apiaudit.impact], or replacing the bundled one. Repeatable.")  # fmt: skip
@click.option("--format", "fmt", type=click.Choice(IMPACT_FORMATS), help="Output format (default: from -o's suffix; else table).")
@output_option("the impact report", suffixes=".json, .sarif, .md, .txt")
@click.option("--rules", "rules_dirs", multiple=True, type=click.Path(path_type=Path), metavar="DIR",
              help="An extra directory of rule files (*.toml), and of downstream lists (PROVIDER.downstream.toml). Repeatable.")  # fmt: skip
@click.option("--cache-dir", type=CacheDirectory(), envvar="APIAUDIT_CACHE_DIR",
              help="Where fetched releases, provider indexes and whole scans are cached (default: the XDG cache dir).")  # fmt: skip
@click.option("--offline", is_flag=True, default=None, help="Fetch nothing: use only cached releases and installed code.")
@executor_options
@click.option("--no-progress", is_flag=True, help=NO_PROGRESS_HELP)
@quiet_option
@guarded
def impact_command(old, new, downstream_files, fmt, output, rules_dirs, cache_dir, offline, executor, workers, no_progress, quiet):
    """Which known downstreams moving the provider from OLD to NEW breaks, and through which change.

    OLD and NEW are provider specs as `scan --provider` takes them: NAME==VERSION, a source
    checkout (a pull request's base and head), an installed distribution. For each downstream
    (the bundled list, [tool.apiaudit.impact], --downstream FILE) the findings NEW has and OLD
    has not, each tied to the provider definition that changed; shown by downstream and by change.

    \b
    Exit codes:
      0    no downstream breaks
      1    a downstream breaks (a proven error NEW introduces)
      2    bad usage or input: one line on stderr
      3    an internal error: one line (APIAUDIT_DEBUG=1 shows the traceback)
    """
    from apiaudit.impact.executors import open_executor
    from apiaudit.impact.render import render_impact
    from apiaudit.impact.run import run_impact
    from apiaudit.infra.progress import for_terminal
    from apiaudit.report import format_for_output, write_output

    settings = project_settings(rules=rules_dirs, cache_dir=cache_dir, offline=offline)
    chosen = format_for_output(fmt, output, formats=IMPACT_FORMATS)
    progress = for_terminal(False if no_progress else None, quiet=quiet)
    try:
        with open_executor(executor, workers=workers) as running:
            result = run_impact(old, new, downstream_files=[Path(f) for f in downstream_files], settings=settings,
                                progress=progress, executor=running)  # fmt: skip
    finally:
        progress.close()
    write_output(render_impact(result, chosen), output, chosen, quiet=quiet)
    sys.exit(result.exit_code())
