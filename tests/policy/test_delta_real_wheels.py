"""The upgrade delta on real wheels: speculators 0.4.0 moving from vLLM 0.16.0 to 0.17.0 (and back).

Wheels come from the shared test cache (fetched once with `pip download --no-deps`); nothing
here imports vllm or speculators.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from policy_helpers import validate_report

from apiaudit.audit import scan
from apiaudit.cli.group import cli
from apiaudit.findings import Severity
from apiaudit.policy.config import Settings

pytestmark = pytest.mark.network

GENERATOR = "speculators/data_generation/vllm_hidden_states_generator.py"


def test_the_bump_introduces_the_request_eos_token_id_break(released, release_cache):
    for spec in ("speculators==0.4.0", "vllm==0.16.0", "vllm==0.17.0"):
        released(spec)
    report = scan(["speculators==0.4.0"], "vllm==0.17.0", against="vllm==0.16.0", cache_dir=release_cache,
                  settings=Settings())  # fmt: skip
    introduced = {(f.rule, f.param, f.path) for f in report.findings if f.severity is Severity.ERROR}
    assert ("unexpected-keyword", "eos_token_id", GENERATOR) in introduced
    assert report.delta is not None and report.delta.against.version == "0.16.0"
    # What 0.16.0 already had is not introduced: the delta is smaller than the full scan.
    full = scan(["speculators==0.4.0"], "vllm==0.17.0", cache_dir=release_cache, settings=Settings())
    assert len(report.findings) + report.delta.unchanged == len(full.findings)
    assert report.delta.unchanged > 0


def test_cli_exit_codes_follow_introduced_errors_only(released, release_cache, monkeypatch, tmp_path):
    monkeypatch.setenv("APIAUDIT_CONFIG", "none")
    base = ["scan", "--consumer", "speculators==0.4.0", "--cache-dir", str(release_cache), "--format", "json", "--no-progress"]
    up = CliRunner().invoke(cli, [*base, "--provider", "vllm==0.17.0", "--against", "vllm==0.16.0"])
    assert up.exit_code == 1, up.output
    doc = validate_report(json.loads(up.stdout))
    assert doc["delta"]["against"]["version"] == "0.16.0"
    assert any(f["param"] == "eos_token_id" for f in doc["findings"])

    # Going back down fixes it and introduces no error: exit 0, the fix listed.
    down = CliRunner().invoke(cli, [*base, "--provider", "vllm==0.16.0", "--against", "vllm==0.17.0"])
    assert down.exit_code == 0, down.output
    doc = validate_report(json.loads(down.stdout))
    assert any(f["param"] == "eos_token_id" for f in doc["delta"]["fixed"])
    assert doc["summary"]["error"] == 0

    # --offline with both releases cached works the same, fetching nothing.
    offline = CliRunner().invoke(cli, [*base, "--provider", "vllm==0.17.0", "--against", "vllm==0.16.0", "--offline"])
    assert offline.exit_code == 1 and json.loads(offline.stdout)["delta"] is not None
    missing = CliRunner().invoke(cli, [*base, "--provider", "vllm==0.17.0", "--offline",
                                       "--cache-dir", str(tmp_path / "empty")])  # fmt: skip
    assert missing.exit_code == 2 and "is not in the cache" in missing.output
