"""The preflight gate (issue 4, done-means 2): real scans, real speculators and vLLM sources.

A job script written against an older speculators passes `ttt_steps` to
`Eagle3DraftModel`; speculators 0.3/0.4 do not accept it. Nothing here imports
speculators or vllm: the installed distribution or the released wheels are read.
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import pytest
from click.testing import CliRunner

from apiaudit.cli.preflight import preflight_command
from apiaudit.errors import InputError
from apiaudit.findings import Severity
from apiaudit.gate import PreflightFailed, preflight
from apiaudit.gate.layers import plan_layers

JOBS = Path(__file__).resolve().parents[2] / "fixtures" / "runner" / "jobs"
STALE_JOB = JOBS / "stale_job.py"
CURRENT_JOB = JOBS / "current_job.py"


def _installed(name: str) -> bool:
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        return False
    return True


needs_installed_speculators = pytest.mark.skipif(
    not _installed("speculators"), reason="speculators is not installed here (the runner extra installs it)"
)


def _stale_keyword_finding(findings):
    return [
        f
        for f in findings
        if f.rule == "unexpected-keyword" and f.param == "ttt_steps" and f.path.endswith("stale_job.py")
    ]


# --- which scans run (no scan needed) ------------------------------------------------------


def test_job_scripts_and_stack_are_two_layers():
    layers = plan_layers([str(STALE_JOB), "speculators"], None, script_provider="speculators==0.4.0")
    assert [(l.consumers, l.provider) for l in layers] == [
        ((str(STALE_JOB),), "speculators==0.4.0"),
        (("speculators",), None),
    ]


def test_folder_of_scripts_counts_as_job_scripts():
    layers = plan_layers([str(JOBS)], None)
    assert layers[0].consumers == (str(JOBS),) and layers[0].provider == "speculators"
    assert layers[1].consumers is None  # the stack: scan's default consumers


def test_explicit_provider_means_one_scan():
    layers = plan_layers([str(STALE_JOB), "speculators"], "vllm==0.16.0")
    assert [(l.consumers, l.provider) for l in layers] == [((str(STALE_JOB), "speculators"), "vllm==0.16.0")]


def test_missing_script_is_bad_input():
    with pytest.raises(InputError, match="no such file"):
        plan_layers(["/nonexistent/job.py"], None)


# --- against the installed speculators -----------------------------------------------------


@needs_installed_speculators
def test_stale_job_fails_preflight_against_installed_speculators(tmp_path):
    with pytest.raises(PreflightFailed) as failed:
        preflight([str(STALE_JOB)], provider="speculators", cache_dir=tmp_path / "cache")
    found = _stale_keyword_finding(failed.value.blocking)
    assert found, failed.value.blocking
    assert found[0].callee.endswith("Eagle3DraftModel")
    # The message lists every blocking finding, each with its place.
    message = str(failed.value)
    assert f"stale_job.py:{found[0].line}:" in message and "ttt_steps" in message
    assert len(failed.value.blocking) == message.count("\n")


@needs_installed_speculators
def test_current_job_passes_and_returns_the_report(tmp_path):
    report = preflight([str(CURRENT_JOB)], provider="speculators", cache_dir=tmp_path / "cache",
                       report_path=tmp_path / "out" / "preflight.json")
    assert not report.blocking(Severity.ERROR)
    assert report.provider.name == "speculators" and report.provider.kind == "installed"
    written = json.loads((tmp_path / "out" / "preflight.json").read_text())
    assert written["provider"]["name"] == "speculators"


@needs_installed_speculators
def test_cli_prints_the_finding_and_exits_1(tmp_path):
    result = CliRunner().invoke(
        preflight_command,
        ["--consumer", str(STALE_JOB), "--provider", "speculators", "--cache-dir", str(tmp_path), "--no-progress"],
    )
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert any("stale_job.py:" in line and "ttt_steps" in line and "unexpected-keyword" in line for line in lines)
    assert lines[-1].startswith("preflight FAILED")


@needs_installed_speculators
def test_cli_is_one_line_when_clean(tmp_path):
    report_file = tmp_path / "report.json"
    result = CliRunner().invoke(
        preflight_command,
        ["--consumer", str(CURRENT_JOB), "--provider", "speculators", "--cache-dir", str(tmp_path),
         "--report", str(report_file), "--no-progress"],
    )
    assert result.exit_code == 0, result.output
    assert result.output.count("\n") == 1 and result.output.startswith("preflight ok: 0 errors")
    assert json.loads(report_file.read_text())["findings"] is not None


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path):
    provider = tmp_path / "provider_pkg"
    provider.mkdir()
    (provider / "__init__.py").write_text("def f(a):\n    return a\n")
    result = CliRunner().invoke(
        preflight_command,
        ["--consumer", str(tmp_path / "missing.py"), "--provider", str(provider), "--cache-dir", str(tmp_path),
         "--no-progress"],
    )
    assert result.exit_code == 2
    assert "Traceback" not in result.output and "missing.py" in result.output


# --- both layers in one pass, on released wheels --------------------------------------------


@pytest.mark.network
def test_both_layers_drift_in_one_pass(release_cache):
    """Job script -> speculators 0.4.0 and speculators 0.3.0 -> vLLM 0.16.0, one gate."""
    with pytest.raises(PreflightFailed) as failed:
        preflight(
            [str(STALE_JOB), "speculators==0.3.0"],
            script_provider="speculators==0.4.0",
            stack_provider="vllm==0.16.0",
            cache_dir=release_cache,
        )
    blocking = failed.value.blocking
    assert _stale_keyword_finding(blocking)
    stack = [f for f in blocking if f.path.startswith("speculators/") and f.callee and f.callee.startswith("vllm.")]
    assert stack, "the speculators -> vLLM layer found nothing"
    report = failed.value.report
    assert {c.name for c in report.consumers} >= {"stale_job", "speculators"}
    assert "speculators 0.4.0" in dict(report.extras)["layers"] and "vllm 0.16.0" in dict(report.extras)["layers"]


def test_the_one_line_summary_counts_suppressed_findings():
    from apiaudit.findings import (
        CodeOrigin,
        Finding,
        Report,
        Severity,
        Suppressed,
        SuppressedBy,
    )
    from apiaudit.gate.layers import summary_line

    origin = CodeOrigin("jobs", None, "/srv/jobs", "path")
    f = Finding("unexpected-keyword", Severity.ERROR, "jobs", "a.py", 1, 0, "p.f", "x", "m")
    report = Report(consumers=(origin,), provider=origin, findings=(), suppressed=(Suppressed(f, SuppressedBy.INLINE, "r", "a.py:1"),))
    assert "0 errors, 0 warnings, 0 cannot-judge, 1 suppressed;" in summary_line(report, Severity.ERROR)


def test_the_one_line_summary_says_1_file_and_1_call():
    from dataclasses import replace

    from apiaudit.findings import CodeOrigin, Finding, Report, Severity
    from apiaudit.gate.layers import summary_line

    origin = CodeOrigin("jobs", None, "/srv/jobs", "path")
    f = Finding("unexpected-keyword", Severity.ERROR, "jobs", "a.py", 1, 0, "p.f", "x", "m")
    report = Report(consumers=(origin,), provider=origin, findings=(f,), files_scanned=1, calls_checked=1)
    assert "1 error, 0 warnings, 0 cannot-judge; 1 call in 1 file (" in summary_line(report, Severity.ERROR)
    assert "; 2 calls in 2 files (" in summary_line(replace(report, files_scanned=2, calls_checked=2), Severity.ERROR)


# --- the command line's options, on a tiny provider (no network, nothing installed) ----------


@pytest.fixture
def tiny(tmp_path):
    """fix_helpers' tiny provider, and a job with its two errors (`c=` unknown, `b` missing)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixes"))
    from fix_helpers import make_provider

    job = tmp_path / "job.py"
    job.write_text("from tinyprov import make\nmake(1, c=2)\n")
    return ["--consumer", str(job), "--provider", str(make_provider(tmp_path)), "--cache-dir", str(tmp_path / "cache"), "--no-progress"]


@pytest.mark.parametrize("fmt", ["sarif", "json", "markdown", "junit"])
def test_format_names_the_report_files_format_whatever_its_suffix(tiny, tmp_path, fmt):
    out = tmp_path / "report.out"
    result = CliRunner().invoke(preflight_command, [*tiny, "--format", fmt, "-o", str(out)])
    assert result.exit_code == 1, result.output
    text = out.read_text()
    first = {"sarif": '"$schema"', "json": '"schema_version"', "markdown": "#", "junit": "<?xml"}[fmt]
    assert first in text.split("\n", 3)[0] + text.split("\n", 3)[1]
    assert result.output.strip().splitlines()[-1].startswith("preflight FAILED")


def test_format_without_output_prints_the_report_on_stdout_and_the_gate_on_stderr(tiny):
    result = CliRunner().invoke(preflight_command, [*tiny, "--format", "json"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert sorted(f["rule"] for f in doc["findings"]) == ["missing-required", "unexpected-keyword"]
    assert result.stderr.strip().splitlines()[-1].startswith("preflight FAILED")


def test_fail_on_never_says_it_did_not_block_and_why(tiny):
    result = CliRunner().invoke(preflight_command, [*tiny, "--fail-on", "never"])
    assert result.exit_code == 0, result.output
    line = result.output.strip()
    assert line.startswith("preflight not blocking (fail-on never): 2 errors"), line
    assert "ok" not in line.split(":")[0]


def test_not_installed_names_every_option_that_makes_it_run(tmp_path):
    """What the one line says to pass, passed (a path in place of each NAME==VERSION), runs."""
    import re

    lib = tmp_path / "libs" / "tinylib"
    stack = tmp_path / "libs" / "tinystack"
    cons = tmp_path / "libs" / "tinycons"
    for package, body in ((lib, "def go(a):\n    return a\n"), (stack, "def run(a):\n    return a\n"),
                          (cons, "from tinystack import run\nrun(1)\n")):  # fmt: skip
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(body)
    job = tmp_path / "job.py"
    job.write_text("from tinylib import go\ngo(1)\n")
    paths = {"apiaudit-nosuch-lib": lib, "apiaudit-nosuch-stack": stack, "apiaudit-nosuch-cons": cons}
    common = ["--consumer", str(job), "--cache-dir", str(tmp_path / "cache"), "--no-progress"]
    given = ["--script-provider", "apiaudit-nosuch-lib", "--stack-provider", "apiaudit-nosuch-stack", "--consumer", "apiaudit-nosuch-cons"]
    result = CliRunner().invoke(preflight_command, [*common, *given])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "not installed in this Python" in lines[0], lines
    suggested = re.findall(r"(--[a-z-]+) ([\w-]+)==VERSION", lines[0])
    assert sorted(suggested) == sorted(
        [("--script-provider", "apiaudit-nosuch-lib"), ("--stack-provider", "apiaudit-nosuch-stack"), ("--consumer", "apiaudit-nosuch-cons")]
    )
    retry = [part for option, name in suggested for part in (option, str(paths[name]))]
    result = CliRunner().invoke(preflight_command, [*common, *retry])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("preflight ok:")


def test_not_installed_without_a_job_script_names_provider_and_consumer(tmp_path):
    result = CliRunner().invoke(
        preflight_command, ["--consumer", "apiaudit-nosuch-cons", "--provider", "apiaudit-nosuch-prov", "--no-progress",
                            "--cache-dir", str(tmp_path)],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "pass --provider apiaudit-nosuch-prov==VERSION --consumer apiaudit-nosuch-cons==VERSION" in result.output


def test_a_launch_only_job_file_goes_against_the_stack_provider_with_no_library(tmp_path):
    job = tmp_path / "job.sh"
    job.write_text("vllm serve meta-llama/Llama-3.1-8B --max-model-len 4096\n")
    layers = plan_layers([str(job), str(STALE_JOB)], None, script_provider="speculators==0.4.0", stack_provider="vllm==0.17.0")
    assert [(l.consumers, l.provider, l.provider_option) for l in layers] == [
        ((str(STALE_JOB),), "speculators==0.4.0", "--script-provider"),
        ((str(job),), "vllm==0.17.0", "--stack-provider"),
        (None, "vllm==0.17.0", "--stack-provider"),
    ]
