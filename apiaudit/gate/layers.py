"""The preflight gate: one or more scans before an expensive run, merged into one verdict.

A job's code sits on two layers that drift apart independently: the user's job scripts
call speculators, and speculators calls vLLM's internals. Preflight audits both in one
pass: scripts given as consumers are checked against the installed speculators (the
"script provider"), and the installed stack is checked as `scan` does by default.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Sequence

from apiaudit.audit import (
    default_launch_provider,
    default_script_provider,
    is_job_script_spec,
    is_launch_only_spec,
    merge_reports,
)
from apiaudit.errors import InputError, NotInstalledError
from apiaudit.findings import Finding, Report, Severity, parse_fail_on
from apiaudit.infra.frozen import record
from apiaudit.infra.words import counted

# Job scripts are written against the library the rules name as the provider's default
# consumer (rules/vllm.toml: speculators); `None` here means "ask the rules".
DEFAULT_SCRIPT_PROVIDER = None


@record
class Layer:
    """One scan of the gate: these consumers against this provider (None: scan's default).

    `provider_option` is the command-line option that sets `provider` (None: not one of
    `apiaudit preflight`'s, as for the runner's layers)."""

    consumers: tuple[str, ...] | None
    provider: str | None
    label: str
    provider_option: str | None = None
    # The release the consumers' provider command lines start, when not `provider` (job scripts).
    launch_provider: str | None = None


class PreflightFailed(Exception):
    """Raised by `preflight()` when a finding blocks the run; the message lists every one."""

    def __init__(self, report: Report, fail_on: Severity | None) -> None:
        self.report = report
        self.fail_on = fail_on
        self.blocking: tuple[Finding, ...] = report.blocking(fail_on)
        lines = [f"preflight failed: {counted(len(self.blocking), 'blocking finding')} "
                 f"(fail on {fail_on.value if fail_on else 'never'} and above)"]
        lines.extend(f"  {format_finding(f, report)}" for f in self.blocking)
        super().__init__("\n".join(lines))


def parse_severity(value: str | Severity | None) -> Severity | None:
    """A --fail-on value: a severity, or None for 'never'."""
    try:
        return parse_fail_on(value)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def plan_layers(
    consumers: Sequence[str] | None,
    provider: str | None,
    *,
    script_provider: str | None = DEFAULT_SCRIPT_PROVIDER,
    stack_provider: str | None = None,
    rules_dirs: Sequence[Path] = (),
) -> list[Layer]:
    """Which scans the gate runs.

    With an explicit provider, one scan: every consumer against it. Otherwise job
    scripts go against `script_provider`, and the installed stack (other consumers, or
    scan's default consumers) against `stack_provider` (None: scan's default provider,
    the installed vLLM), so both layers are checked in one pass. The provider command lines in
    the job scripts (`vllm serve ...`) start the stack's server: they are checked against the
    stack's provider.
    """
    given = [c for c in (consumers or ()) if c.strip()]
    if provider is not None or not given:
        option = "--stack-provider" if provider is None and stack_provider is not None else "--provider"
        return [Layer(tuple(given) or None, provider or stack_provider, "scan", option)]
    scripts = [c for c in given if is_job_script_spec(c)]
    others = [c for c in given if c not in scripts]
    layers: list[Layer] = []
    launch = stack_provider or default_launch_provider(rules_dirs)
    # As `scan` does: job files with no Python reach the provider only through the command lines
    # they run, checked against the release those lines start (the stack's), with no library.
    launch_only = [c for c in scripts if launch is not None and is_launch_only_spec(c)]
    scripts = [c for c in scripts if c not in launch_only]
    if scripts:
        script_provider = script_provider or default_script_provider(rules_dirs)
        layers.append(Layer(tuple(scripts), script_provider, f"job scripts -> {script_provider}", "--script-provider", launch))
    if launch_only:
        layers.append(Layer(tuple(launch_only), launch, f"job files -> {launch}", "--stack-provider"))
    layers.append(Layer(tuple(others) or None, stack_provider, "stack", "--stack-provider"))
    return layers


def run_layers(
    layers: Sequence[Layer],
    *,
    cache_dir: Path | None = None,
    rules_dirs: Sequence[Path] = (),
    progress=None,
    model=None,
) -> Report:
    """Scan every layer and merge the reports (one layer: its report as is)."""
    from apiaudit.audit import check_inputs, scan
    from apiaudit.policy import load_settings

    started = time.monotonic()
    try:
        settings = load_settings()  # what each layer's scan reads its defaults from
        for layer in layers:  # every layer's inputs before the first layer fetches anything
            consumers = list(layer.consumers) if layer.consumers is not None else None
            check_inputs(consumers, layer.provider, None, rules_dirs, settings)
        reports = [
            scan(
                list(layer.consumers) if layer.consumers is not None else None,
                layer.provider,
                cache_dir=cache_dir,
                rules_dirs=list(rules_dirs),
                progress=progress,
                model=model,
                launch_provider=layer.launch_provider,
            )
            for layer in layers
        ]
    except NotInstalledError as missing:
        raise _not_installed(missing, layers, rules_dirs) from None
    if len(reports) == 1:
        return reports[0]
    return merge_reports(reports, duration_s=time.monotonic() - started)


def _not_installed(error: NotInstalledError, layers: Sequence[Layer], rules_dirs: Sequence[Path]) -> InputError:
    """One line naming every distribution the gate would read from this Python and cannot, each with
    the option that names a release (or path) in its place, so that one retry runs."""
    import sys

    from apiaudit.recipes.loader import default_target

    if any(layer.provider_option is None for layer in layers):
        return error  # not preflight's own layers: its options are not the way to say it
    try:
        target = default_target(list(map(Path, rules_dirs)))
    except InputError:
        target = None
    default_provider, default_consumers = target if target is not None else (None, ())
    needed: dict[tuple[str, str], None] = {}
    for layer in layers:
        provider = layer.provider or default_provider
        if provider is not None and _not_installed_here(provider):
            needed[(layer.provider_option or "--provider", provider)] = None
        for consumer in layer.consumers if layer.consumers is not None else default_consumers:
            if _not_installed_here(consumer):
                needed[("--consumer", consumer)] = None
    if not needed:
        needed[("--consumer/--provider", error.name)] = None
    names = ", ".join(dict.fromkeys(name for _, name in needed))
    options = " ".join(f"{option} {name}==VERSION" for option, name in needed)
    return NotInstalledError(
        f"not installed in this Python ({sys.executable}): {names}; preflight reads "
        f"{'it' if len(needed) == 1 else 'them'} from here unless told otherwise: pass {options} "
        "(a release to fetch; a path reads a checkout)",
        next(iter(needed))[1],
    )


def _not_installed_here(spec: str) -> bool:
    """A bare distribution NAME (read from this Python) that is not installed here."""
    from importlib import metadata

    from apiaudit.sources.local import looks_like_path

    spec = spec.strip()
    if not spec or "==" in spec or looks_like_path(spec):
        return False
    try:
        metadata.distribution(spec)
    except (metadata.PackageNotFoundError, ValueError):
        return True
    return False


def write_report(report: Report, path: Path, fmt: str | None = None) -> None:
    """Write the report to `path` in `fmt` (default: from the suffix, JSON for a name without one; an
    unknown suffix is an InputError), whole or not at all."""
    from apiaudit.report import format_for_output, render, write_output

    chosen = format_for_output(fmt, path, unnamed="json")  # a gate's report file is for programs
    write_output(render(report, chosen), path, chosen, quiet=True)


def format_finding(finding: Finding, report: Report | None = None) -> str:
    """`path:line:col: severity rule: message` — one line a person or an editor can follow, the
    path from the project root as every report prints it (`report` gives the consumer's origin)."""
    origin = next((o for o in report.consumers if o.key == finding.consumer), None) if report is not None else None
    where = f"{origin.shown(finding.path) if origin else finding.path}:{finding.line}:{finding.column + 1}"
    target = f" [{finding.callee}]" if finding.callee else ""
    return f"{where}: {finding.severity.value} {finding.rule}: {finding.message}{target}"


def summary_line(report: Report, fail_on: Severity | None) -> str:
    """The one line preflight prints when clean (and after the findings when not)."""
    blocking = len(report.blocking(fail_on))
    if blocking:
        verdict = f"FAILED ({blocking} blocking)"
    elif fail_on is None and report.at_or_above(Severity.INFO):
        # Not "ok": there are findings, and they passed only because nothing may block.
        verdict = "not blocking (fail-on never)"
    else:
        verdict = "ok"
    counts = (
        f"{counted(report.count(Severity.ERROR), 'error')}, "
        f"{counted(report.count(Severity.WARNING), 'warning')}, "
        f"{report.cannot_judge} cannot-judge"
    )
    if report.suppressed:
        counts += f", {len(report.suppressed)} suppressed"
    consumers = ", ".join(c.name_version for c in report.consumers) or "default consumers"
    scope = dict(report.extras).get("layers") or f"{consumers} -> {report.provider.name_version}"
    return (
        f"preflight {verdict}: {counts}; {counted(report.calls_checked, 'call')} in {counted(report.files_scanned, 'file')} "
        f"({scope}) in {report.duration_s:.1f}s"
    )

