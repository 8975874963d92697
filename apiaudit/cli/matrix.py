"""`apiaudit matrix` and `apiaudit explain` (registered by apiaudit/cli/main.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from apiaudit.cli.options import (
    audit_options,
    fail_on_option,
    guarded,
    NO_PROGRESS_HELP,
    output_option,
    project_settings,
    quiet_option,
)
from apiaudit.errors import InputError
from apiaudit.findings import Severity
from apiaudit.infra.progress import for_terminal
from apiaudit.matrix.render import MATRIX_FORMATS, render_explain, render_matrix


def _emit(text: str, output: Path | None, fmt: str, quiet: bool) -> None:
    from apiaudit.report import write_output

    write_output(text, output, fmt, quiet=quiet)


def _format(fmt: str | None, output: Path | None) -> str:
    from apiaudit.report import format_for_output

    return format_for_output(fmt, output, formats=MATRIX_FORMATS)


@click.command("matrix")
@audit_options
@click.option("--format", "fmt", type=click.Choice(MATRIX_FORMATS), help="Output format (default: from -o's suffix; else table, in a pipe or file too).")
@output_option("the matrix", suffixes=".json, .txt")
@click.option("--pre", "include_prereleases", is_flag=True, help="Include pre-releases in the range.")
@click.option("--jobs", "fetch_jobs", type=click.IntRange(1, 32), default=4, show_default=True, help="Releases fetched at once.")
@click.option("--scan-jobs", type=click.IntRange(1, 32), help="Scans run at once (default: the CPU cores, at most 4).")
@click.option("--no-progress", is_flag=True, help=NO_PROGRESS_HELP)
@quiet_option
@click.option("--offline", is_flag=True, default=None,
              help="Fetch nothing: the releases in the range that are in the cache (config: offline).")
@click.option("--refresh", is_flag=True, help="List the package index's releases afresh (default: reuse a listing up to 10 minutes old).")
@guarded
def matrix_command(consumers, provider, rules_dirs, cache_dir, model, fmt, output, include_prereleases, fetch_jobs, scan_jobs, no_progress,
                   quiet, offline, refresh):
    """Scan the consumer against every provider release in a range.

    --provider takes a range here, e.g. 'vllm>=0.11,<=0.17' (a bare name: every release).
    Prints one row per release, the compatible range (no error findings) in requirement
    syntax, and where it disagrees with the consumer's own declared requirement.
    Exit 0: some release is compatible and the declared range agrees; 1: otherwise; 2: bad input.
    """
    from apiaudit.matrix.sweep import run_matrix

    # The config's consumers, rules and cache feed the matrix too (the range is the command line's).
    settings = project_settings(consumers=consumers, rules=rules_dirs, cache_dir=cache_dir, offline=offline)
    consumers, rules_dirs, cache_dir = settings.consumers, settings.rules, settings.cache_dir
    if not provider:
        raise InputError("give the provider range, e.g. --provider 'vllm>=0.11,<=0.17'")
    fmt = _format(fmt, output)  # before the sweep: a name the matrix cannot write is refused at once
    available = None
    if settings.offline:
        from apiaudit import sources
        from apiaudit.matrix.ranges import parse_provider_range
        from apiaudit.policy.offline import cached_versions

        name = parse_provider_range(provider).name
        available = cached_versions(Path(cache_dir) if cache_dir else sources.default_cache_dir(), name)
        if not available:
            raise InputError(f"no release of {name} is in the cache and --offline fetches nothing")
    progress = for_terminal(False if no_progress else None, quiet=quiet)
    try:
        result = run_matrix(
            list(consumers), provider, cache_dir=cache_dir, rules_dirs=list(rules_dirs),
            include_prereleases=include_prereleases, fetch_jobs=fetch_jobs, scan_jobs=scan_jobs, progress=progress,
            available=available,
            model=model,
            refresh=refresh,
        )  # fmt: skip
    finally:
        progress.close()
    _emit(render_matrix(result, fmt), output, fmt, quiet)
    sys.exit(result.exit_code())


@click.command("explain")
@audit_options
@click.option("--since", metavar="VERSION", help="A provider release where the consumer worked: the bisection starts there "
              "(default: the oldest release the consumer's own requirement allows).")  # fmt: skip
@click.option("--format", "fmt", type=click.Choice(MATRIX_FORMATS), help="Output format (default: from -o's suffix; else table, in a pipe or file too).")
@output_option("the explanation", suffixes=".json, .txt")
@click.option("--emit-rules", type=click.Path(path_type=Path, file_okay=False), metavar="DIR",
              help="Write unambiguous renames and moves as a rules file in DIR, for `apiaudit fix --rules DIR`.")  # fmt: skip
@click.option("--errors-only", is_flag=True, help="Explain error findings only (default: errors and warnings).")
@click.option("--pre", "include_prereleases", is_flag=True, help="Bisect over pre-releases too.")
@fail_on_option
@click.option("--no-progress", is_flag=True, help=NO_PROGRESS_HELP)
@quiet_option
@guarded
def explain_command(consumers, provider, rules_dirs, cache_dir, model, since, fmt, output, emit_rules, errors_only, include_prereleases, fail_on, no_progress,
                    quiet):
    """Date each finding: the first provider release with it, and what changed there.

    --provider is the release the consumer is scanned against (NAME==VERSION). Each
    finding is bisected over the releases between --since and that one; the old and
    new signature are shown with the kind of change. Exit codes as `scan`: 1 when the
    scanned release has findings at or above --fail-on, 0 otherwise, 2 on bad input.
    """
    from apiaudit.findings import parse_fail_on
    from apiaudit.matrix.emit import fix_candidates, write_rules
    from apiaudit.matrix.explain import explain
    from apiaudit.recipes import load_rulebook

    settings = project_settings(fail_on=fail_on, consumers=consumers, rules=rules_dirs, cache_dir=cache_dir)
    fail_on, consumers, rules_dirs, cache_dir = settings.fail_on, settings.consumers, settings.rules, settings.cache_dir
    provider = provider or settings.provider
    if len(consumers) != 1:
        raise InputError("explain takes exactly one --consumer")
    if not provider:
        raise InputError("give the provider release to explain against, e.g. --provider vllm==0.16.0")
    fmt = _format(fmt, output)
    progress = for_terminal(False if no_progress else None, quiet=quiet)
    try:
        result = explain(
            consumers[0], provider, since=since, cache_dir=cache_dir, rules_dirs=list(rules_dirs),
            include_prereleases=include_prereleases,
            min_severity=Severity.ERROR if errors_only else Severity.WARNING, progress=progress,
            model=model,
        )  # fmt: skip
    finally:
        progress.close()
    if emit_rules is not None:
        path, emitted = write_rules(result, emit_rules, rules_dirs=list(rules_dirs))
        rules_file = str(path) if path else None
        if path is None and not quiet:
            click.echo("apiaudit: no unambiguous rename or move found; no rules file written", err=True)
    else:
        emitted, rules_file = fix_candidates(result, load_rulebook(list(rules_dirs), result.provider)), None
    _emit(render_explain(result, fmt, emitted, rules_file), output, fmt, quiet)
    sys.exit(result.report.exit_code(parse_fail_on(fail_on)))
