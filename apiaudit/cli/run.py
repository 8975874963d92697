"""`apiaudit run CONFIG.toml`: the EAGLE-3 pipeline behind the preflight gate.

Exit codes: 0 done, 1 preflight refused to start or a stage failed, 2 bad input
(config, missing runner extra, unknown stage).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from apiaudit.cli.options import EXIT_FINDINGS, CacheDirectory, guarded
from apiaudit.runner.config import STAGES


@click.command(
    "run",
    help=(
        "Run the EAGLE-3 pipeline of CONFIG.toml (prepare, extract, vocab, train). Preflight runs first and "
        "refuses to start on a blocking finding. Stages whose manifest still matches are skipped."
    ),
)
@click.argument("config_path", metavar="CONFIG.toml", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--stage", "stages", multiple=True, type=click.Choice(STAGES),
              help="Run only this stage (repeatable); the stages it needs must have run.")
@click.option("--force", is_flag=True, help="Start even when preflight finds blocking findings.")
@click.option("--overlay", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              help="Run against the patched speculators in DIR (from `apiaudit fix --into DIR`).")
@click.option("--cache-dir", type=CacheDirectory(), default=None,
              envvar="APIAUDIT_CACHE_DIR", help="Cache for preflight's fetched releases and provider indexes.")
@guarded
def run_command(config_path: Path, stages: tuple[str, ...], force: bool, overlay: Path | None,
                cache_dir: Path | None) -> None:
    from apiaudit.runner.config import load_config
    from apiaudit.runner.context import StageFailed
    from apiaudit.runner.pipeline import PreflightRefused, run_pipeline
    from apiaudit.runner.progress import ConsoleReporter
    from apiaudit.runner.server import installed_release_auditor

    reporter = ConsoleReporter()
    try:
        config = load_config(config_path)
        summary = run_pipeline(config, only=stages or None, force=force, overlay=overlay,
                               reporter=reporter, cache_dir=cache_dir,
                               launch_auditor=installed_release_auditor(cache_dir))  # fmt: skip
    except PreflightRefused as refused:
        click.echo(str(refused.failure))
        click.echo("apiaudit run: not starting: preflight found blocking findings (--force to start anyway)", err=True)
        sys.exit(EXIT_FINDINGS)
    except StageFailed as exc:
        click.echo(f"apiaudit run: stage failed: {exc}", err=True)
        sys.exit(EXIT_FINDINGS)
    ran = [s for s in summary.stages if s.status == "ran"]
    total = sum(s.duration_s for s in ran)
    click.echo(f"run {config.run_dir}: {len(ran)} stage(s) ran in {total:.1f}s, "
               f"{len(summary.stages) - len(ran)} up to date")
