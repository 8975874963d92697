"""The runner: preflight, then prepare -> extract -> vocab -> train, each skipped when current.

Every stage writes into its own folder of the run directory: its outputs, `stage.log`,
and `manifest.json` (config, input fingerprints, library versions, outputs). A stage
whose manifest still matches is skipped; a stage whose upstream changed runs again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal, Sequence

from apiaudit.errors import InputError
from apiaudit.findings import Report
from apiaudit.infra.frozen import record
from apiaudit.runner import manifest as manifests
from apiaudit.runner.config import STAGES, RunConfig
from apiaudit.runner.context import (
    LOG_NAME,
    StageContext,
    StageResult,
    stage_dir,
    stage_logging,
)
from apiaudit.runner.imports import speculators_package_dir
from apiaudit.runner.progress import QuietReporter, RunReporter

if TYPE_CHECKING:
    from apiaudit.runner.server import LaunchAuditor


@record
class Stage:
    name: str
    needs: tuple[str, ...]
    config_of: Callable[[RunConfig], dict]
    inputs_of: Callable[[RunConfig], dict[str, str]]
    run: Callable[[StageContext], StageResult]
    # Called before an unfinished earlier run's work is cleared (stage folder, the earlier
    # attempt, the new one): raises InputError where clearing it would be a surprise.
    before_restart: Callable[[Path, dict | None, dict], None] | None = None


def _stages() -> dict[str, Stage]:
    from apiaudit.runner.extract import extract_config, model_inputs, run_extract
    from apiaudit.runner.prepare import prepare_config, prepare_inputs, run_prepare
    from apiaudit.runner.train import refuse_changed_world_size, run_train, train_config
    from apiaudit.runner.vocab import run_vocab, vocab_config

    return {
        "prepare": Stage("prepare", (), prepare_config, prepare_inputs, run_prepare),
        "extract": Stage("extract", ("prepare",), extract_config, model_inputs, run_extract),
        "vocab": Stage("vocab", ("prepare",), vocab_config, lambda _c: {}, run_vocab),
        "train": Stage("train", ("extract", "vocab"), train_config, model_inputs, run_train,
                       before_restart=refuse_changed_world_size),
    }


@dataclass
class StageOutcome:
    stage: str
    status: Literal["ran", "skipped"]
    duration_s: float
    summary: str
    reason: str = ""


@dataclass
class RunSummary:
    preflight: Report | None
    stages: list[StageOutcome] = field(default_factory=list)

    def outcome(self, stage: str) -> StageOutcome | None:
        return next((s for s in self.stages if s.stage == stage), None)


class PreflightRefused(Exception):
    """The runner will not start: preflight found blocking findings (override with force)."""

    def __init__(self, failure) -> None:
        self.failure = failure
        super().__init__(str(failure))


def runner_preflight_layers(config: RunConfig, overlay_package: Path | None):
    """What the runner audits before it starts.

    The runner's own calls and the user's scripts (config `[preflight] consumers`) against
    the speculators that will run (the overlay when given); with the vllm backend, also
    that speculators against the installed vLLM, whose internals its generator drives; on
    the server line, the trainer script against the trainer's own speculators. (The
    server's command line is audited by the launch audit, when the extract stage starts it.)
    """
    from apiaudit.gate import Layer

    runner_code = str(Path(__file__).resolve().parent)
    speculators = str(overlay_package) if overlay_package is not None else "speculators"
    layers = [Layer((runner_code, *config.preflight.consumers), speculators, "runner and job scripts -> speculators")]
    if config.extract.backend == "vllm":
        layers.append(Layer((speculators,), "vllm", "speculators -> vllm"))
    if config.server_line:
        layers.extend(_trainer_layers(config))
    return layers


def _trainer_layers(config: RunConfig):
    """The server line's trainer script against the speculators of `[train] python` (0.7+)."""
    from apiaudit.gate import Layer
    from apiaudit.runner.server_train import TRAINER_SINCE, release_of, trainer_environment, trainer_scripts

    environment = trainer_environment(config)
    if environment.get("package") is None or release_of(environment["speculators"]) < TRAINER_SINCE:
        return []  # the train stage says so in one line when it starts
    return [Layer(trainer_scripts(environment["speculators"]), environment["package"],
                  "trainer -> speculators (train.python)")]


def run_pipeline(
    config: RunConfig,
    *,
    only: Sequence[str] | None = None,
    force: bool = False,
    overlay: Path | None = None,
    reporter: RunReporter | None = None,
    preflight: bool = True,
    cache_dir: Path | None = None,
    launch_auditor: LaunchAuditor | None = None,
) -> RunSummary:
    """Run the pipeline (or the stages in `only`), gated by preflight.

    Raises PreflightRefused when preflight blocks and `force` is false, InputError for
    bad input, StageFailed when a stage cannot finish. On the server line,
    `launch_auditor` audits the server's command line before it starts
    (apiaudit.runner.server.audit_launch_line); `force` overrides its blocking findings too.
    """
    from apiaudit.runner.imports import activate_overlay, require_runner_extra

    reporter = reporter or QuietReporter()
    selected = _select(only)
    overlay_package = activate_overlay(overlay) if overlay is not None else None
    require_runner_extra()

    report = _gate(config, overlay_package, force=force, reporter=reporter, cache_dir=cache_dir) if preflight else None
    summary = RunSummary(preflight=report)
    stages = _stages()
    versions = manifests.library_versions(overlay)
    config.run_dir.mkdir(parents=True, exist_ok=True)
    for name in STAGES:
        if name not in selected:
            continue
        summary.stages.append(_run_stage(stages[name], config, versions, reporter,
                                         launch_auditor=launch_auditor, force=force))
    return summary


def _select(only: Sequence[str] | None) -> tuple[str, ...]:
    if not only:
        return STAGES
    unknown = [s for s in only if s not in STAGES]
    if unknown:
        raise InputError(f"unknown stage {unknown[0]!r} (stages: {', '.join(STAGES)})")
    return tuple(only)


def _gate(config: RunConfig, overlay_package: Path | None, *, force: bool, reporter: RunReporter,
          cache_dir: Path | None) -> Report:
    from apiaudit.gate import PreflightFailed, run_gate, summary_line
    from apiaudit.gate.layers import parse_severity

    threshold = parse_severity(config.preflight.fail_on)
    rules_dirs = [Path(d) if Path(d).is_absolute() else config.source.parent / d for d in config.preflight.rules_dirs]
    report_path = config.run_dir / "preflight.json"
    from apiaudit.model import load_model

    # The configured model is the one the pipeline loads: its class and custom code are checked too.
    model = load_model(config.model.path, require_architectures=False)
    try:
        report = run_gate(runner_preflight_layers(config, overlay_package), fail_on=threshold,
                          rules_dirs=rules_dirs, report_path=report_path, cache_dir=cache_dir, model=model)
    except PreflightFailed as failure:
        if not force:
            raise PreflightRefused(failure) from None
        reporter.note(str(failure))
        reporter.note("--force: starting despite the blocking findings above")
        return failure.report
    reporter.note(summary_line(report, threshold))
    return report


def _expectation(stage: Stage, config: RunConfig, versions: dict[str, str]) -> manifests.Expectation:
    inputs = dict(stage.inputs_of(config))
    for upstream in stage.needs:
        recorded = manifests.read_manifest(stage_dir(config, upstream))
        if recorded is None:
            raise InputError(
                f"stage {stage.name} needs the output of {upstream}, which has not run: "
                f"run `apiaudit run {config.source.name} --stage {upstream}` first (or the whole pipeline)"
            )
        inputs.update({f"{upstream}:{k}": v for k, v in recorded.output_fingerprints.items()})
    return manifests.Expectation(stage.name, stage.config_of(config), inputs, versions)


def _run_stage(stage: Stage, config: RunConfig, versions: dict[str, str], reporter: RunReporter, *,
               launch_auditor: LaunchAuditor | None = None, force: bool = False) -> StageOutcome:
    directory = stage_dir(config, stage.name)
    expected = _expectation(stage, config, versions)
    for upstream in stage.needs:
        recorded = manifests.read_manifest(stage_dir(config, upstream))
        # Upstream ran (its manifest exists, checked above); are its outputs still as written?
        reason = manifests.stale_reason(recorded, recorded.expectation, config.run_dir) if recorded else "missing"
        if reason is not None:
            raise InputError(f"stage {stage.name}: the output of {upstream} is out of date ({reason}); run {upstream} again")
    reason = manifests.stale_reason(manifests.read_manifest(directory), expected, config.run_dir)
    if reason is None:
        reporter.stage_finished(stage.name, "up to date, skipped")
        return StageOutcome(stage.name, "skipped", 0.0, "up to date")

    resume = manifests.attempt_matches(directory, expected)
    if not resume and stage.before_restart is not None and manifests.read_manifest(directory) is None:
        stage.before_restart(directory, manifests.read_attempt(directory), manifests.as_json(expected))
    if not resume and directory.exists():
        _clear(directory)
    directory.mkdir(parents=True, exist_ok=True)
    manifests.remove_manifest(directory)
    manifests.write_attempt(directory, expected)

    started_wall, started = manifests.now(), time.monotonic()
    with stage_logging(directory / LOG_NAME, stage.name) as log:
        log.info("stage %s: running (%s)%s", stage.name, reason, "; resuming an interrupted run" if resume else "")
        log.info("speculators from %s; versions %s", speculators_package_dir(), versions)
        context = StageContext(config=config, stage=stage.name, reporter=reporter, resume=resume, log=log,
                               launch_auditor=launch_auditor, force=force)
        result = stage.run(context)
        duration = time.monotonic() - started
        log.info("stage %s: done in %.1fs: %s", stage.name, duration, result.summary)
    manifests.write_manifest(
        directory,
        manifests.Manifest(
            expectation=expected,
            outputs=manifests.record_outputs(result.outputs, config.run_dir),
            counts=result.counts,
            started_at=started_wall,
            duration_s=duration,
        ),
    )
    reporter.stage_finished(stage.name, f"done in {duration:.1f}s: {result.summary}")
    return StageOutcome(stage.name, "ran", duration, result.summary, reason)


def _clear(directory: Path) -> None:
    import shutil

    for entry in directory.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


__all__ = ["PreflightRefused", "RunSummary", "StageOutcome", "run_pipeline", "runner_preflight_layers"]
