"""`apiaudit preflight`: the gate as the first line of a shell job script.

Quiet when clean (one line: counts and time taken), the blocking findings otherwise.
Exit codes as `scan`: 0 clean, 1 blocking findings, 2 bad input.
"""

from __future__ import annotations

import sys

import click

from apiaudit.cli.options import (
    EXIT_FINDINGS,
    audit_options,
    fail_on_option,
    guarded,
    jobs_option,
    NO_PROGRESS_HELP,
    output_option,
    project_settings,
    quiet_option,
)
from apiaudit.gate import PreflightFailed, preflight
from apiaudit.gate.layers import (
    DEFAULT_SCRIPT_PROVIDER,
    format_finding,
    parse_severity,
    summary_line,
)
from apiaudit.report import FORMATS


@click.command(
    "preflight",
    help=(
        "Audit before a run: one line when clean, the blocking findings and exit 1 otherwise. "
        "Put `apiaudit preflight ... || exit 1` at the top of a job script. Job scripts given with "
        "--consumer are checked against the installed speculators and the installed stack as `scan` "
        "checks it, in one pass."
    ),
)
@audit_options
@jobs_option
@click.option("--script-provider", metavar="X", default=DEFAULT_SCRIPT_PROVIDER,
              help="What job scripts are checked against when --provider is not given "
                   "(default: the library the rules name, speculators for vLLM).")
@click.option("--stack-provider", metavar="X", default=None,
              help="What the rest of the stack is checked against when --provider is not given "
                   "(default: scan's default provider, the installed vLLM).")
@fail_on_option
@click.option("--format", "fmt", type=click.Choice(FORMATS),
              help="Format of the full report: of -o's file (default: from its suffix), or, without -o, printed on "
                   "stdout as scan prints it, the gate's lines then going to stderr.")
@output_option("the full report, pass or fail,", aliases=("--report",))
@click.option("--no-progress", is_flag=True, help=NO_PROGRESS_HELP)
@quiet_option
@guarded
def preflight_command(consumers, provider, rules_dirs, cache_dir, model, script_provider, stack_provider, fail_on, fmt,
                      output, no_progress, quiet) -> None:
    from apiaudit.infra.progress import for_terminal

    fail_on = project_settings(fail_on=fail_on).fail_on  # the config's fail-on unless given here
    if output is not None:
        from apiaudit.report import format_for_output

        format_for_output(fmt, output, unnamed="json")  # a mistyped suffix is refused before the scan
    # --format without -o: the report is stdout's one document, and the gate speaks on stderr.
    report_on_stdout = fmt is not None and output is None
    progress = for_terminal(False if no_progress else None, quiet=quiet)
    try:
        report = preflight(
            list(consumers) or None,
            provider,
            fail_on=fail_on,
            cache_dir=cache_dir,
            rules_dirs=tuple(rules_dirs),
            report_path=output,
            script_provider=script_provider,
            stack_provider=stack_provider,
            progress=progress,
            model=model,
            report_format=fmt,
        )
    except PreflightFailed as failed:
        progress.close()
        if report_on_stdout:
            _print_report(failed.report, fmt)
        for finding in failed.blocking:
            click.echo(format_finding(finding, failed.report), err=report_on_stdout)
            if finding.advice:
                click.echo(f"    fix: {finding.advice}", err=report_on_stdout)
        click.echo(summary_line(failed.report, failed.fail_on), err=report_on_stdout)
        sys.exit(EXIT_FINDINGS)
    progress.close()
    if report_on_stdout:
        _print_report(report, fmt)
    click.echo(summary_line(report, parse_severity(fail_on)), err=report_on_stdout)


def _print_report(report, fmt: str) -> None:
    from apiaudit.cli.streams import use_color
    from apiaudit.report import render, write_output

    write_output(render(report, fmt, color=fmt == "table" and use_color(sys.stdout)), None, fmt)
