"""What the GitHub Action does, in Python: scan (or matrix), then SARIF, annotations, a job summary, a badge.

Inputs arrive as environment variables (`INPUT_*`, set by action.yml); results go where
GitHub reads them: annotations on stdout, Markdown appended to $GITHUB_STEP_SUMMARY,
`key=value` lines appended to $GITHUB_OUTPUT. Everything runs in this process and needs
nothing from GitHub, so it is tested locally by setting those variables.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Mapping

from apiaudit.errors import InputError
from apiaudit.infra.frozen import record

EXIT_USAGE = 2
# A provider written as a range (not one release, not a name or path) means "run the matrix".
_RANGE_RE = re.compile(r"[<>!~,]")


@record
class ActionInputs:
    consumers: tuple[str, ...]
    provider: str | None
    against: str | None
    rules: tuple[Path, ...]
    baseline: Path | None
    fail_on: str | None  # None: the config's, else error
    sarif: Path | None
    badge: Path | None
    summary: bool
    annotations: bool
    offline: bool
    cache_dir: Path | None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ActionInputs:
        def get(name: str) -> str:
            return env.get(f"INPUT_{name.upper().replace('-', '_')}", "").strip()

        def words(name: str) -> tuple[str, ...]:
            return tuple(w for w in re.split(r"[\s,]+", get(name)) if w)

        def flag(name: str, default: bool) -> bool:
            value = get(name).lower()
            if not value:
                return default
            if value not in ("true", "false"):
                raise InputError(f"input {name}: '{value}' is not true or false")
            return value == "true"

        def path(name: str) -> Path | None:
            return Path(get(name)) if get(name) else None

        fail_on = get("fail-on") or None
        if fail_on not in (None, "error", "warning", "info", "never"):
            raise InputError(f"input fail-on: '{fail_on}' is not one of error, warning, info, never")
        return cls(
            consumers=words("consumers"), provider=get("provider") or None, against=get("against") or None,
            rules=tuple(Path(w) for w in words("rules")), baseline=path("baseline"), fail_on=fail_on,
            sarif=path("sarif"), badge=path("badge"), summary=flag("summary", True),
            annotations=flag("annotations", True), offline=flag("offline", False), cache_dir=path("cache-dir"),
        )  # fmt: skip

    @property
    def is_matrix(self) -> bool:
        return bool(self.provider and _RANGE_RE.search(self.provider))


def badge_for_report(report) -> dict[str, Any]:
    """shields.io endpoint JSON for one scan: `vllm | 0.17.0 ok` or `vllm | 0.17.0: 2 errors`."""
    from apiaudit.findings import Severity

    errors = report.count(Severity.ERROR)
    version = report.provider.version or "local"
    message = f"{version} ok" if errors == 0 else f"{version}: {errors} error{'s' if errors != 1 else ''}"
    return {"schemaVersion": 1, "label": report.provider.name, "message": message,
            "color": "brightgreen" if errors == 0 else "red"}  # fmt: skip


def badge_for_matrix(result) -> dict[str, Any]:
    """shields.io endpoint JSON for a matrix: the compatible range (`vllm | >=0.12,<=0.16`)."""
    text, contiguous = result.compatible_range
    name = result.provider.name
    if not text:
        return {"schemaVersion": 1, "label": name, "message": "no compatible release", "color": "red"}
    spec = text[len(name):] if text.startswith(name) else text
    color = "brightgreen" if contiguous and not result.disagreements else "yellow"
    return {"schemaVersion": 1, "label": name, "message": spec.strip() or "any", "color": color}


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)


def run(inputs: ActionInputs, env: Mapping[str, str], stdout=None) -> int:
    """The action: exit code as `apiaudit scan` (matrix: as `apiaudit matrix`)."""
    from apiaudit.findings import parse_fail_on
    from apiaudit.infra.atomic import atomic_write
    from apiaudit.policy.config import load_settings
    from apiaudit.report import render

    stdout = stdout or sys.stdout
    settings = load_settings().with_cli(
        consumers=inputs.consumers, provider=None if inputs.is_matrix else inputs.provider, rules=inputs.rules,
        baseline=inputs.baseline, fail_on=inputs.fail_on, offline=inputs.offline or None, cache_dir=inputs.cache_dir,
    )  # fmt: skip
    outputs: dict[str, str] = {}
    badge: dict[str, Any] | None = None
    if inputs.is_matrix and inputs.provider:
        from apiaudit.matrix.render import render_matrix
        from apiaudit.matrix.sweep import run_matrix

        result = run_matrix(list(settings.consumers), inputs.provider, cache_dir=settings.cache_dir,
                            rules_dirs=list(settings.rules))  # fmt: skip
        scanned = [row for row in result.rows if row.report is not None]
        report = scanned[-1].report if scanned else None
        summary = "## apiaudit matrix\n\n```\n" + render_matrix(result, "table") + "```\n"
        badge = badge_for_matrix(result)
        exit_code = result.exit_code()
        outputs["compatible-range"] = result.compatible_range[0]
    else:
        from apiaudit.audit import scan

        report = scan(None, None, settings=settings, against=inputs.against)
        summary = render(report, "markdown")
        badge = badge_for_report(report)
        exit_code = report.exit_code(parse_fail_on(settings.fail_on))
    if report is not None:
        if inputs.annotations:
            stdout.write(render(report, "github"))
        if inputs.sarif:
            atomic_write(inputs.sarif, render(report, "sarif", show_suppressed=True))
            outputs["sarif"] = str(inputs.sarif)
        from apiaudit.findings import Severity

        outputs["errors"] = str(report.count(Severity.ERROR))
        outputs["warnings"] = str(report.count(Severity.WARNING))
        outputs["suppressed"] = str(len(report.suppressed))
    if inputs.summary:
        _append(env.get("GITHUB_STEP_SUMMARY"), summary + "\n")
    if inputs.badge and badge is not None:
        atomic_write(inputs.badge, json.dumps(badge) + "\n")
        outputs["badge"] = str(inputs.badge)
    outputs["exit-code"] = str(exit_code)
    _append(env.get("GITHUB_OUTPUT"), "".join(f"{k}={v}\n" for k, v in outputs.items()))
    return exit_code


def main(env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    try:
        return run(ActionInputs.from_env(env), env)
    except InputError as exc:
        print(f"::error title=apiaudit::{exc}")
        print(f"apiaudit: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
