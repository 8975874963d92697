"""--model and --architecture on every audit command: one-line errors, exit 2, and the model reaching scan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from apiaudit.cli.group import cli

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "fixtures" / "models"
PROVIDERS = REPO / "fixtures" / "providers"
PROVIDER = str(PROVIDERS / "modelhub_v1" / "modelhub")
JOB = str(REPO / "fixtures" / "consumers" / "loaders")


def run(*args):
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def _scan(tmp_path, *extra):
    return run("scan", "--consumer", JOB, "--provider", PROVIDER, "--rules", str(PROVIDERS),
               "--cache-dir", str(tmp_path / "cache"), "--format", "json", *extra)


def test_scan_with_a_model_reports_remote_code(tmp_path):
    code, out = _scan(tmp_path, "--model", str(MODELS / "hub-wrapper"))
    assert code == 1
    report = json.loads(out)
    assert [f["line"] for f in report["findings"] if f["rule"] == "remote-code-required"] == [15, 17, 18]
    assert report["extras"]["model_architectures"] == "WrapperForConditionalGeneration"


def test_scan_with_an_architecture_only(tmp_path):
    code, out = _scan(tmp_path, "--architecture", "DenseForCausalLM")
    assert json.loads(out)["extras"]["model"] == "DenseForCausalLM"


@pytest.mark.parametrize(
    "args, message",
    [
        (("--model", "no/such/dir"), "apiaudit: error: --model no/such/dir: no such model directory or config.json"),
        (("--architecture", "LateForCausalLM"), "apiaudit: error: modelhub does not register the architecture LateForCausalLM"),
    ],
)
def test_bad_model_input_is_one_line_and_exit_2(tmp_path, args, message):
    code, out = _scan(tmp_path, *args)
    assert code == 2
    assert out.startswith(message) and out.count("\n") == 1, out


def test_a_bad_config_is_one_line(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{")
    code, out = _scan(tmp_path, "--model", str(tmp_path / "m"))
    assert code == 2 and "config.json: not valid JSON" in out and out.count("\n") == 1


@pytest.mark.parametrize("command", ["preflight", "fix", "matrix", "explain"])
def test_every_audit_command_takes_the_model_options(command):
    code, out = run(command, "--help")
    assert code == 0 and "--model PATH" in out and "--architecture NAME" in out


def test_preflight_blocks_on_remote_code(tmp_path):
    code, out = run("preflight", "--consumer", JOB, "--provider", PROVIDER, "--rules", str(PROVIDERS),
                    "--cache-dir", str(tmp_path / "cache"), "--model", str(MODELS / "hub-wrapper"))
    assert code == 1 and out.count("remote-code-required") == 3


def test_fix_with_a_model_reads_it(tmp_path):
    code, out = run("fix", "--consumer", JOB, "--provider", PROVIDER, "--rules", str(PROVIDERS),
                    "--cache-dir", str(tmp_path / "cache"), "--model", str(tmp_path / "missing"))
    assert code == 2 and "no such model directory" in out


def test_scan_explain_passes_the_model_on(tmp_path):
    # The explain path gets the model scan read; a bad provider is still its one line (not a crash).
    code, out = run("scan", "--explain", "--consumer", JOB, "--provider", "vllm>=0.11", "--cache-dir", str(tmp_path),
                    "--model", str(MODELS / "llama-3.1-8b"))
    assert code == 2 and "explain needs one provider release" in out
