"""`apiaudit scan`: the audit, rendered. Exit 0 clean, 1 findings at or above --fail-on, 2 bad input, 3 a bug."""

from __future__ import annotations

import sys
from pathlib import Path
from dataclasses import replace

import click

from apiaudit.cli.options import (
    audit_options,
    fail_on_option,
    guard_options,
    guarded,
    jobs_option,
    output_option,
    NO_PROGRESS_HELP,
    policy_options,
    project_settings,
    quiet_option,
)
from apiaudit.cache import replay
from apiaudit.cli.streams import use_color
from apiaudit.errors import InputError
from apiaudit.report import FORMATS

SCAN_FORMATS = FORMATS


@click.command("scan")
@audit_options
@jobs_option
@guard_options
@click.option("--format", "fmt", type=click.Choice(SCAN_FORMATS), help="Output format (default: from -o's suffix; else table, in a pipe or file too).")
@output_option()
@fail_on_option
@click.option("--against", metavar="NAME==VERSION", help="The provider release in use today: report only what moving to --provider "
              "introduces (and what it fixes). Exit 1 only for introduced findings at or above --fail-on.")  # fmt: skip
@policy_options
@click.option("--show-unresolved", is_flag=True, help="List cannot-judge findings too (always counted).")
@click.option("--with-deps/--no-deps", "with_deps", default=None, help="Also audit the consumer's declared dependencies that "
              "import the provider (default: only when the consumer, a release or installed, imports none of it itself).")  # fmt: skip
@click.option("--show-unreachable", is_flag=True, help="List the findings of modules nothing in the consumer imports (else one line "
              "sums them up; they are conditional).")  # fmt: skip
@click.option("--verbose", is_flag=True, help="Show provider signatures whole in the table (else the parameter in question "
              "and its neighbours; JSON always has them whole).")  # fmt: skip
@click.option("--no-progress", is_flag=True, help=NO_PROGRESS_HELP)
@quiet_option
@click.option("--no-index-cache", is_flag=True, help="Rebuild the provider index instead of reading the cache.")
@click.option("--explain", is_flag=True, help="Date each finding to the release that introduced it (same as `apiaudit explain`).")
@click.option("--since", metavar="VERSION", help="With --explain: a release without the findings to bisect from.")
@guarded
def scan_command(consumers, provider, rules_dirs, cache_dir, model, provider_version, python_version, strict, fmt, output, fail_on, against, baseline, write_baseline,
                 show_suppressed, offline, show_unresolved, show_unreachable, with_deps, verbose, no_progress, quiet, no_index_cache, explain,
                 since):
    """Report every mismatch between the consumer(s) and the provider.

    \b
    Exit codes:
      0    nothing at or above --fail-on (always, with --fail-on never)
      1    findings at or above --fail-on
      2    bad usage or input: one line on stderr
      3    an internal error: one line (APIAUDIT_DEBUG=1 shows the traceback)
      130  interrupted (Ctrl-C)
      143  terminated (SIGTERM)
      141  the reader of stdout or stderr went away (| head)
    """
    from apiaudit.report import format_for_output

    settings = project_settings(
        consumers=consumers, provider=provider, rules=rules_dirs, cache_dir=cache_dir, fail_on=fail_on,
        baseline=baseline, offline=offline,
    )  # fmt: skip
    fail_on = settings.fail_on
    chosen = format_for_output(fmt, output)
    if explain:
        from apiaudit.cli.matrix import explain_command

        if chosen not in ("table", "json"):
            raise InputError(f"--explain writes a table or JSON, not {chosen}")
        if against or write_baseline:
            raise InputError("--explain does not combine with --against or --write-baseline")
        return click.get_current_context().invoke(
            explain_command, consumers=consumers, provider=provider, rules_dirs=rules_dirs, cache_dir=cache_dir,
            model=model, since=since, fmt=chosen, output=output, emit_rules=None, errors_only=False, include_prereleases=False,
            no_progress=no_progress, quiet=quiet, fail_on=fail_on,
        )  # fmt: skip
    if write_baseline and against:
        raise InputError("--write-baseline records one scan; it does not combine with --against")
    from apiaudit.audit import scan
    from apiaudit.findings import parse_fail_on
    from apiaudit.infra.progress import for_terminal
    from apiaudit.report import render, write_output

    progress = for_terminal(False if no_progress else None, quiet=quiet)
    try:
        report = scan(
            list(consumers) or None,
            provider,
            cache_dir=cache_dir,
            rules_dirs=list(rules_dirs),
            progress=progress,
            use_index_cache=not no_index_cache,
            settings=settings,
            use_baseline=not write_baseline,
            against=against,
            model=model,
            provider_version=provider_version,
            python_version=python_version,
            with_deps=with_deps,
        )
    finally:
        progress.close()
    if write_baseline:
        from apiaudit.policy.baseline import write_baseline as write

        count = write(write_baseline, report.findings)
        if not quiet:
            click.echo(f"apiaudit: wrote {count} finding{'s' if count != 1 else ''} to baseline {write_baseline}", err=True)
        sys.exit(0)
    if chosen in ("json", "sarif"):
        report = _with_exact_fixes(report, list(rules_dirs) or list(settings.rules), cache_dir or settings.cache_dir)
    # Colour on a terminal unless NO_COLOR, in a pipe with FORCE_COLOR; never in a file.
    color = output is None and chosen == "table" and use_color(sys.stdout)

    def rendered(report):
        return render(report, chosen, show_unresolved=show_unresolved, color=color, show_suppressed=show_suppressed,
                      show_unreachable=show_unreachable, verbose=verbose)  # fmt: skip

    text = rendered(report)
    write_output(text, output, chosen, quiet=quiet)
    written = replay.output_digest(text)
    del text  # a large report's text is not kept while the replay renders it twice more
    # The same command line, nothing changed, writes this again before click is imported.
    replay.note_output(written, report.duration_s, output, lambda seconds: rendered(replace(report, duration_s=seconds)))
    sys.exit(report.exit_code(parse_fail_on(fail_on), strict=strict))


def _with_exact_fixes(report, rules_dirs, cache_dir):
    """JSON and SARIF carry each finding's fix as exact edits (what `apiaudit fix` would change),
    with the rules of the release audited against (recipe fixes). Kept in the cache by everything
    they depend on: a warm scan plans none again (and imports no fixer)."""
    from apiaudit.cache import fixes as memo
    from apiaudit.cache.scans import engine_fingerprint
    from apiaudit.findings import may_fix
    from apiaudit.recipes.files import rules_digest
    from apiaudit.sources.cache import default_cache_dir

    roots = {o.key: Path(o.root) for o in report.consumers}
    fixable = [f for f in report.findings if may_fix(f) and f.consumer in roots]
    if not fixable:
        return report
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    name = memo.key(
        engine_fingerprint(cache), rules_digest([Path(d) for d in rules_dirs]), repr(report.provider),
        [(f, roots[f.consumer] / f.path) for f in fixable],
    )  # fmt: skip
    found = memo.lookup(cache, name, len(fixable)) if name else None
    if found is None:
        from apiaudit import sources
        from apiaudit.audit import rulebook_for
        from apiaudit.cli.fix import origin_spec
        from apiaudit.fixes.exact import exact_fix

        tree = sources.resolve(origin_spec(report.provider), cache_dir=cache_dir, check_entry=False)
        book = rulebook_for(rules_dirs, tree)
        parsed: dict = {}  # each file parsed once for all its findings
        found = [exact_fix(f, roots[f.consumer], book, parsed) for f in fixable]
        if name:
            memo.store(cache, name, found)
    fixed = {f: fix for f, fix in zip(fixable, found) if fix is not None}
    if not fixed:
        return report
    return replace(report, findings=tuple(replace(f, exact_fix=fixed[f]) if f in fixed else f for f in report.findings))
