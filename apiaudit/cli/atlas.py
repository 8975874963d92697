"""`apiaudit atlas --provider RANGE`: every known downstream against every provider release of a
range, as JSON or one static HTML page. Exit 0 (the grid is the answer), 2 bad input, 3 a bug."""

from __future__ import annotations

from pathlib import Path

import click

from apiaudit.cli.impact import executor_options
from apiaudit.cli.options import NO_PROGRESS_HELP, CacheDirectory, guarded, output_option, project_settings, quiet_option
from apiaudit.impact.atlas_page import ATLAS_FORMATS


@click.command("atlas")
@click.option("--provider", required=True, metavar="RANGE", help="The provider releases, as a range: 'vllm>=0.16,<=0.20'.")
@click.option("--downstream", "downstream_files", multiple=True, type=click.Path(path_type=Path), metavar="FILE",
              help="A downstream list, as `impact` reads it (added to the bundled list, or replacing it). Repeatable.")  # fmt: skip
@click.option("--format", "fmt", type=click.Choice(ATLAS_FORMATS), help="Output format (default: from -o's suffix; else json).")
@output_option("the atlas", suffixes=".html, .json")
@click.option("--rules", "rules_dirs", multiple=True, type=click.Path(path_type=Path), metavar="DIR",
              help="An extra directory of rule files and downstream lists. Repeatable.")
@click.option("--cache-dir", type=CacheDirectory(), envvar="APIAUDIT_CACHE_DIR",
              help="Where fetched releases, provider indexes and whole scans are cached (default: the XDG cache dir).")  # fmt: skip
@executor_options
@click.option("--no-progress", is_flag=True, help=NO_PROGRESS_HELP)
@quiet_option
@guarded
def atlas_command(provider, downstream_files, fmt, output, rules_dirs, cache_dir, executor, workers, no_progress, quiet):
    """Every known downstream against every provider release of RANGE: clean, breaks N,
    conditional only, does not use the provider, or cannot read, as JSON or one static HTML page
    (sortable; each cell opens its findings; each downstream's first broken release marked)."""
    from apiaudit.errors import InputError
    from apiaudit.impact.atlas import run_atlas
    from apiaudit.impact.atlas_page import render_atlas
    from apiaudit.impact.executors import open_executor
    from apiaudit.infra.progress import for_terminal
    from apiaudit.report import write_output

    chosen = fmt or _format_of(output)
    if chosen not in ATLAS_FORMATS:
        raise InputError(f"-o {output}: the atlas is written as .html or .json (or give --format)")
    settings = project_settings(rules=rules_dirs, cache_dir=cache_dir)
    progress = for_terminal(False if no_progress else None, quiet=quiet)
    try:
        with open_executor(executor, workers=workers) as running:
            atlas = run_atlas(provider, downstream_files=[Path(f) for f in downstream_files], settings=settings,
                              progress=progress, executor=running)  # fmt: skip
    finally:
        progress.close()
    write_output(render_atlas(atlas, chosen), output, chosen, quiet=quiet)


def _format_of(output: Path | None) -> str:
    if output is None:
        return "json"
    suffix = Path(output).suffix.lower()
    return {".html": "html", ".htm": "html", ".json": "json"}.get(suffix, suffix or "json")
