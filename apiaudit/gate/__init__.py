"""The preflight gate: audit before an expensive run starts, and refuse to start on drift.

`preflight(...)` returns the report when nothing blocks and raises `PreflightFailed`
(whose message lists every blocking finding) otherwise; `apiaudit preflight` is the
same gate for a shell job script (docs/preflight.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from apiaudit.findings import Report, Severity
from apiaudit.gate.layers import (
    DEFAULT_SCRIPT_PROVIDER,
    Layer,
    PreflightFailed,
    format_finding,
    parse_severity,
    plan_layers,
    run_layers,
    summary_line,
    write_report,
)
from apiaudit.infra.callers import python_api

__all__ = ["Layer", "PreflightFailed", "format_finding", "preflight", "run_gate", "summary_line"]


@python_api
def preflight(
    consumers: Sequence[str] | None = None,
    provider: str | None = None,
    *,
    fail_on: str | Severity = "error",
    cache_dir: Path | None = None,
    rules_dirs: Sequence[Path] = (),
    report_path: Path | str | None = None,
    script_provider: str | None = DEFAULT_SCRIPT_PROVIDER,
    stack_provider: str | None = None,
    progress=None,
    model=None,
    report_format: str | None = None,
) -> Report:
    """Audit before a run: the report when clean, `PreflightFailed` when a finding blocks.

    Consumers and provider are given as to `apiaudit.audit.scan`. Without a provider,
    job scripts among the consumers are checked against `script_provider` (the installed
    speculators) and the rest of the stack (the other consumers, or scan's defaults)
    against `stack_provider` (default: scan's, the installed vLLM), in one pass. `model`
(`apiaudit.model.load_model(...)`) is the model the job loads, as for `scan`. Bad
    input raises `apiaudit.errors.InputError`. With `report_path`, the full report is
    written there either way, in `report_format` (one of `apiaudit.report.FORMATS`; default: from
    the suffix as for `scan -o`: .sarif, .md, .xml, .txt table, else JSON).
    """
    threshold = parse_severity(fail_on)
    layers = plan_layers(consumers, provider, script_provider=script_provider, stack_provider=stack_provider,
                         rules_dirs=rules_dirs)
    return run_gate(layers, fail_on=threshold, cache_dir=cache_dir, rules_dirs=rules_dirs,
                    report_path=report_path, progress=progress, model=model, report_format=report_format)


def run_gate(
    layers: Sequence[Layer],
    *,
    fail_on: Severity | None = Severity.ERROR,
    cache_dir: Path | None = None,
    rules_dirs: Sequence[Path] = (),
    report_path: Path | str | None = None,
    progress=None,
    model=None,
    report_format: str | None = None,
) -> Report:
    """Run the given scans as one gate (the runner builds its own layers)."""
    report = run_layers(layers, cache_dir=cache_dir, rules_dirs=rules_dirs, progress=progress, model=model)
    if report_path is not None:
        write_report(report, Path(report_path), report_format)
    if report.blocking(fail_on):
        raise PreflightFailed(report, fail_on)
    return report
