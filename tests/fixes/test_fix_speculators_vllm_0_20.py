"""The seed's own release on the GPU's vLLM: `apiaudit fix --into DIR` for speculators 0.3.0 x
vLLM 0.20.0 (real wheels) makes every edit bench/gpu/hand_fixes.py made by hand on the GPU run
(bench/gpu/results/), through rules alone: the CacheConfig default (a call-without-keyword
pattern), sample_tokens after execute_model (insert-call-after) and the single collective_rpc
reply (drop-subscript)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest
from click.testing import CliRunner

from apiaudit.audit import scan
from apiaudit.cli.group import cli
from apiaudit.fixes import plan_fixes, write_overlay
from apiaudit.recipes import load_rulebook

pytestmark = pytest.mark.network

REPO = Path(__file__).resolve().parents[2]
GENERATOR = "speculators/data_generation/vllm_hidden_states_generator.py"
# The findings whose fixes hand_fixes.py stood in for, by rule.
HAND_FIXED = {
    "vllm-cache-config-prefix-caching-default": "cache-config",
    "vllm-execute-model-needs-sample-tokens": "sample-tokens",
    "vllm-collective-rpc-unique-reply-rank-single-value": "reply",
}


def _hand_fixes():
    spec = importlib.util.spec_from_file_location("hand_fixes", REPO / "bench" / "gpu" / "hand_fixes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # the project's own script, not audited code
    return module


def _normalized(source: str) -> str:
    """The code's AST with every call's keywords in name order: where an added keyword sits is layout."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            node.keywords.sort(key=lambda k: k.arg or "")
    return ast.dump(tree)


@pytest.fixture(scope="module")
def fixed(release_cache: Path, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("vllm020")
    result = CliRunner().invoke(cli, ["fix", "--consumer", "speculators==0.3.0", "--provider", "vllm==0.20.0",
                                      "--cache-dir", str(release_cache), "--into", str(tmp / "overlay")])  # fmt: skip
    report = scan(["speculators==0.3.0"], "vllm==0.20.0", cache_dir=release_cache)
    return result, report, tmp


def test_fix_into_fixes_everything_scan_reports(fixed) -> None:
    result, report, tmp = fixed
    # Every finding has its fix but the model-dependent warnings, which need `--model` (what the
    # job loads decides whether they break): those are reported, not edited, so fix exits 1.
    not_fixed = [line for line in result.stderr.splitlines() if ": not fixed: " in line]
    assert all(": model-attribute-missing: " in line for line in not_fixed), result.stderr
    assert result.exit_code == (1 if not_fixed else 0), result.stderr
    assert {f.rule for f in report.findings} >= set(HAND_FIXED)
    patched = (tmp / "overlay" / GENERATOR).read_text()
    assert "enable_prefix_caching=False" in patched
    assert "self.executor.execute_model(scheduler_output)\n            self.executor.sample_tokens(None)\n" in patched
    assert "aux_hidden_states = captured_states_list\n" in patched


def test_the_overlay_is_what_hand_fixes_made(fixed, release_cache: Path) -> None:
    _, report, tmp = fixed
    # What `fix` wrote before these recipes existed: the same scan, without the hand-fixed findings.
    root = Path(report.consumers[0].root)
    book = load_rulebook([], "vllm").applicable("0.20.0")
    before = [f for f in report.findings if f.rule not in HAND_FIXED]
    base = write_overlay(plan_fixes(before, root, book), root, ["speculators"], tmp / "base")
    hand = tmp / "hand"
    assert _hand_fixes().main(base.directory, hand) == 0
    overlay = tmp / "overlay"
    files = sorted(p.relative_to(hand).as_posix() for p in hand.rglob("*.py"))
    assert files == sorted(p.relative_to(overlay).as_posix() for p in overlay.rglob("*.py"))
    for path in files:
        assert _normalized((overlay / path).read_text()) == _normalized((hand / path).read_text()), path
    assert (hand / GENERATOR).read_text() != (base.directory / GENERATOR).read_text()


def test_fixing_the_overlay_again_changes_nothing(fixed, release_cache: Path) -> None:
    _, _, tmp = fixed
    again = scan([str(tmp / "overlay" / "speculators")], "vllm==0.20.0", cache_dir=release_cache)
    assert again.findings  # the overlay was read (cannot-judge notes remain)
    # Only what needs --model is left: the warnings about some registered classes' members.
    blocking = [f for f in again.findings if f.severity.value != "info" and f.rule != "model-attribute-missing"]
    assert blocking == [], blocking
    assert not [f for f in again.findings if f.severity.value == "error"]
