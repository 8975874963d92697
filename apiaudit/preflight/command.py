"""`apiaudit preflight`: the gate as the first line of a shell job script.

Quiet when clean (one line: counts and time taken), the blocking findings otherwise.
Exit codes as `scan`: 0 clean, 1 blocking findings, 2 bad input.
"""

from __future__ import annotations

from pathlib import Path

import click

from apiaudit.errors import InputError
from apiaudit.preflight import PreflightFailed, preflight
from apiaudit.preflight.gate import DEFAULT_SCRIPT_PROVIDER, format_finding, parse_severity, summary_line


@click.command(
    "preflight",
    help=(
        "Audit before a run; exit 1 on blocking findings. Use as `apiaudit preflight ... || exit 1` "
        "at the top of a job script. Job scripts given with --consumer are checked against the installed "
        "speculators, and the installed stack as `scan` does, in one pass."
    ),
)
@click.option("--consumer", "-c", "consumers", multiple=True, metavar="SPEC",
              help="Code that makes the calls: distribution NAME, NAME==VERSION, or a path (package, job script, "
                   "folder of scripts). Repeatable. Default: scan's default consumers.")
@click.option("--provider", "-p", metavar="SPEC", default=None,
              help="Code that is called (as for scan). Given: every consumer is checked against it alone.")
@click.option("--script-provider", metavar="SPEC", default=DEFAULT_SCRIPT_PROVIDER, show_default=True,
              help="What job scripts are checked against when --provider is not given.")
@click.option("--fail-on", type=click.Choice(["error", "warning", "info"]), default="error", show_default=True,
              help="Lowest severity that fails the gate.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where fetched releases and provider indexes are cached.")
@click.option("--rules-dir", "rules_dirs", multiple=True, type=click.Path(path_type=Path),
              help="Extra folder of rules/*.toml recipes. Repeatable.")
@click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the full report here (.sarif, .txt/.md table, else JSON), pass or fail.")
def preflight_command(consumers, provider, script_provider, fail_on, cache_dir, rules_dirs, report_path) -> None:
    try:
        report = preflight(
            list(consumers) or None,
            provider,
            fail_on=fail_on,
            cache_dir=cache_dir,
            rules_dirs=tuple(rules_dirs),
            report_path=report_path,
            script_provider=script_provider,
        )
    except PreflightFailed as failed:
        for finding in failed.blocking:
            click.echo(format_finding(finding))
            if finding.advice:
                click.echo(f"    fix: {finding.advice}")
        click.echo(summary_line(failed.report, failed.fail_on))
        raise SystemExit(1) from None
    except InputError as exc:
        click.echo(f"apiaudit preflight: error: {exc}", err=True)
        raise SystemExit(2) from None
    click.echo(summary_line(report, parse_severity(fail_on)))
