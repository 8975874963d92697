"""The launch audit on the real vLLM 0.17.0 / 0.20.0 / 0.33.0 wheels (issue 24, done-means 1),
against job scripts written from speculators' documented launch commands
(fixtures/consumers/launch_vllm/: the server speculators 0.7-0.9's scripts/launch_vllm.py
starts, and one script per rule's catch).

The expected findings were written from reading the wheels' sources before apiaudit ran on
them: `--renderer-num-workers` is added to EngineArgs.add_cli_args in 0.20.0 (absent in 0.17.0);
`--swap-space` is gone from 0.20.0 on; SpeculativeConfig's method Literal drops "medusa" in
0.33.0; KVConnectorFactory registers ExampleHiddenStatesConnector in all three and
"HiddenStatesConnector" in none; SpeculativeConfig has `num_speculative_tokens`, never
`num_speculative_token`. Nothing here imports vLLM.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from apiaudit import audit_launch
from apiaudit.audit import scan

pytestmark = pytest.mark.network

JOBS = Path(__file__).resolve().parents[2] / "fixtures" / "consumers" / "launch_vllm"
RELEASES = ("0.17.0", "0.20.0", "0.33.0")
# Everything every release reports on the five scripts, besides the per-release findings below.
ALL_RELEASES = {
    # the typo in speculators' launcher, on the dict display's line
    ("launch-config-key-unknown", "launch_vllm.py", 26, "num_speculative_token"),
    # its kv_transfer_config is built by a call: not judged, and said so
    ("cannot-judge", "launch_vllm.py", 39, "--kv-transfer-config"),
    # a connector name vLLM never registered (the FP8 one beside it names its module: not judged)
    ("launch-config-value-unknown", "serve_connector.toml", 4, "kv_connector"),
}
EXPECTED = {
    "0.17.0": ALL_RELEASES | {("launch-flag-unknown", "serve_hidden_states.sh", 10, "--renderer-num-workers")},
    "0.20.0": ALL_RELEASES | {("launch-flag-unknown", "serve_swap_space.sh", 3, "--swap-space")},
    "0.33.0": ALL_RELEASES
    | {
        ("launch-flag-unknown", "serve_swap_space.sh", 3, "--swap-space"),
        ("launch-config-value-unknown", "serve_medusa.yaml", 3, "method"),
    },
}


@pytest.mark.parametrize("version", RELEASES)
def test_speculators_launch_lines_on_each_release(version, release_cache):
    report = scan([str(JOBS)], f"vllm=={version}", cache_dir=release_cache, use_index_cache=False)
    got = {(f.rule, f.path, f.line, f.param) for f in report.findings}
    assert got == EXPECTED[version]
    assert report.files_scanned == 5


def test_the_documented_hidden_states_server_is_clean_where_vllm_has_its_flags(release_cache):
    for version in ("0.20.0", "0.33.0"):
        report = scan([str(JOBS / "serve_hidden_states.sh")], f"vllm=={version}", cache_dir=release_cache)
        assert report.findings == ()


def test_findings_name_the_release_definitions(release_cache):
    report = scan([str(JOBS)], "vllm==0.33.0", cache_dir=release_cache)
    by_file = {f.path: f for f in report.findings if f.rule != "cannot-judge"}
    medusa = by_file["serve_medusa.yaml"]
    assert medusa.callee == "vllm.config.speculative.SpeculativeConfig"
    assert medusa.provider_location is not None and medusa.provider_location.startswith("vllm/config/speculative.py:")
    assert medusa.facts is not None and medusa.facts.value == "medusa"
    connector = by_file["serve_connector.toml"]
    assert connector.callee == "vllm.distributed.kv_transfer.kv_connector.factory.register_connector"
    assert "ExampleHiddenStatesConnector" in connector.facts.known
    swap = by_file["serve_swap_space.sh"]
    assert swap.callee == "vllm.entrypoints.common.cli_args.make_arg_parser"


def test_audit_launch_checks_the_argv_the_runner_will_run(release_cache):
    argv = [
        "vllm", "serve", "Qwen/Qwen3-8B", "--port", "8000",
        "--speculative-config", '{"method": "extract_hidden_states", "num_speculative_tokens": 1}',
        "--kv-transfer-config", '{"kv_connector": "ExampleHiddenStatesConnector", "kv_role": "kv_producer"}',
    ]  # fmt: skip
    assert audit_launch(argv, "vllm==0.20.0", cache_dir=release_cache) == ()
    found = audit_launch([*argv, "--swap-space", "4"], "vllm==0.20.0", cache_dir=release_cache)
    assert [(f.rule, f.param, f.line) for f in found] == [("launch-flag-unknown", "--swap-space", 1)]
