"""The command line: a thin layer over `apiaudit.audit`, `apiaudit.report` and the other stages."""

from __future__ import annotations

import importlib
import sys
import warnings
from pathlib import Path

import click

from apiaudit import __version__
from apiaudit.audit import scan as run_scan
from apiaudit.cli_options import audit_options, guard_options, guarded
from apiaudit.findings import Severity
from apiaudit.progress import for_terminal
from apiaudit.report import FORMATS, render


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="apiaudit")
def cli() -> None:
    """Find every call-site mismatch between a consumer and a provider's internal API, statically."""
    warnings.simplefilter("default")


@cli.command()
@audit_options
@guard_options
@click.option("--format", "fmt", type=click.Choice(FORMATS), help="Output format (default: table on a terminal, else json).")
@click.option("--output", "-o", type=click.Path(path_type=Path), help="Write the report here instead of stdout.")
@click.option("--fail-on", type=click.Choice(["error", "warning"]), default="error", show_default=True)
@click.option("--show-unresolved", is_flag=True, help="List cannot-judge findings too (always counted).")
@click.option("--no-progress", is_flag=True, help="Never show progress bars.")
@click.option("--no-index-cache", is_flag=True, help="Rebuild the provider index instead of reading the cache.")
@click.option("--explain", is_flag=True, help="Date each finding to the release that introduced it (same as `apiaudit explain`).")
@click.option("--since", metavar="VERSION", help="With --explain: a release without the findings to bisect from.")
@guarded
def scan(consumers, provider, rules_dirs, cache_dir, provider_version, python_version, strict, fmt, output, fail_on, show_unresolved, no_progress, no_index_cache, explain, since):
    """Report every mismatch between the consumer(s) and the provider. Exit 0 clean, 1 findings, 2 bad input."""
    if explain:
        from apiaudit.matrix.command import explain_command

        return click.get_current_context().invoke(
            explain_command, consumers=consumers, provider=provider, rules_dirs=rules_dirs, cache_dir=cache_dir,
            since=since, fmt=fmt if fmt in ("table", "json") else None, output=output, emit_rules=None,
            errors_only=False, include_prereleases=False, no_progress=no_progress,
        )  # fmt: skip
    progress = for_terminal(False if no_progress else None)
    try:
        report = run_scan(
            list(consumers) or None,
            provider,
            cache_dir=cache_dir,
            rules_dirs=list(rules_dirs),
            progress=progress,
            use_index_cache=not no_index_cache,
            provider_version=provider_version,
            python_version=python_version,
        )
    finally:
        progress.close()
    to_terminal = output is None and sys.stdout.isatty()
    fmt = fmt or ("table" if to_terminal else "json")
    text = render(report, fmt, show_unresolved=show_unresolved, color=to_terminal and fmt == "table")
    if output is not None:
        output.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        click.echo(f"apiaudit: wrote {fmt} report to {output}", err=True)
    else:
        click.echo(text)
    sys.exit(report.exit_code(Severity(fail_on), strict=strict))


# Commands of later stages live beside their stage; each registers itself here.
for _module, _name in (
    ("apiaudit.fixes.command", "fix_command"),
    ("apiaudit.gate.command", "preflight_command"),
    ("apiaudit.runner.command", "run_command"),
    ("apiaudit.matrix.command", "matrix_command"),
    ("apiaudit.matrix.command", "explain_command"),
):
    try:
        cli.add_command(getattr(importlib.import_module(_module), _name))
    except (ImportError, AttributeError):
        pass


def main() -> None:
    cli(prog_name="apiaudit")


if __name__ == "__main__":
    main()
