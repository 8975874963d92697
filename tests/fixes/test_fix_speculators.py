"""The real speculators 0.3.0 wheel, fixed for vLLM 0.16 with the shipped rules, against what
speculators 0.4.0's maintainers wrote at the same calls.

The scan engine is not used here: the three signature findings and the worker's
attribute-missing are built by hand where a scan reports them (the call's first line and
column), the pattern findings come from the shipped [[pattern]] rules. What is tested is the fix.
"""

from __future__ import annotations

import ast
import difflib
import shutil
from pathlib import Path

import pytest

from apiaudit.evidence import AttributeFacts, RecipeFacts
from apiaudit.findings import Finding, Severity
from apiaudit.fixes import plan_fixes, unified_diff, write_overlay
from apiaudit.checks.pattern_findings import match_patterns
from apiaudit.recipes import load_rulebook

pytestmark = pytest.mark.network

GENERATOR = "speculators/data_generation/vllm_hidden_states_generator.py"
WORKER = "speculators/data_generation/custom_worker.py"


def _call_segment(source: str, callee: str) -> str:
    """The source of the first call of `callee` (by its last name)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name == callee:
                return ast.get_source_segment(source, node)
    raise AssertionError(f"no call of {callee}")


def _signature_findings(source: str) -> list[Finding]:
    def at(callee: str, dotted: str, rule: str, param: str) -> Finding:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == callee:
                return Finding(rule, Severity.ERROR, "speculators", GENERATOR, node.lineno, node.col_offset, dotted, param, "m")
        raise AssertionError(callee)

    return [
        at("get_kv_cache_config_from_groups", "vllm.v1.core.kv_cache_utils.get_kv_cache_config_from_groups",
           "unexpected-keyword", "kv_cache_specs"),
        at("Scheduler", "vllm.v1.core.sched.scheduler.Scheduler.__init__", "missing-required", "block_size"),
        at("SchedulerConfig", "vllm.config.scheduler.SchedulerConfig", "missing-required", "is_encoder_decoder"),
    ]  # fmt: skip


def _worker_findings(source: str) -> list[Finding]:
    """The attribute-missing a scan reports on the bound base model's `get_input_embeddings`
    (tests/test_audit_model_real_wheels.py), explained by the recipe vllm-embed-input-ids."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "get_input_embeddings":
            facts = AttributeFacts("get_input_embeddings", "vllm.model_executor.models.llama.LlamaModel")
            recipe = RecipeFacts("vllm-embed-input-ids", renamed_to="embed_input_ids")
            return [Finding("attribute-missing", Severity.ERROR, "speculators", WORKER, node.lineno, node.col_offset,
                            "vllm.model_executor.models.llama.LlamaModel.get_input_embeddings", None, "m", facts=facts, recipe=recipe)]
    raise AssertionError("no get_input_embeddings call")


@pytest.fixture
def fixed(released, tmp_path: Path):
    tree = released("speculators==0.3.0")
    site = tmp_path / "site"
    shutil.copytree(tree.root / "speculators", site / "speculators")
    book = load_rulebook([], "vllm").applicable("0.16.0")
    findings = _signature_findings((site / GENERATOR).read_text())
    findings += _worker_findings((site / WORKER).read_text())
    for path in (GENERATOR, WORKER):
        findings += match_patterns((site / path).read_text(), path, book.patterns, consumer="speculators", provider_packages=("vllm",))
    plan = plan_fixes(findings, site, book)
    overlay = write_overlay(plan, site, ["speculators"], tmp_path / "overlay")
    return plan, overlay, site, book


def test_the_fixed_calls_read_as_speculators_0_4_0_wrote_them(fixed, released) -> None:
    plan, overlay, site, _ = fixed
    upstream = released("speculators==0.4.0").root
    patched = (overlay.directory / GENERATOR).read_text()
    theirs = (upstream / GENERATOR).read_text()
    for callee in ("get_kv_cache_config_from_groups", "Scheduler", "SchedulerConfig"):
        assert _call_segment(patched, callee) == _call_segment(theirs, callee), callee
    assert "else self.embed_input_ids(input_ids)" in (overlay.directory / WORKER).read_text()
    assert {f.recipe for f in plan.fixed} == {
        "vllm-kv-cache-config-from-groups-kv-cache-specs",
        "vllm-scheduler-block-size",
        "vllm-scheduler-config-is-encoder-decoder",
        "vllm-embed-input-ids",
        "vllm-sample-tokens-after-execute-model",
        "vllm-collective-rpc-single-reply",
    }


def test_the_diff_touches_only_the_affected_calls_and_every_file_compiles(fixed) -> None:
    plan, overlay, site, _ = fixed
    for file_fix in plan.changed_files:
        compile((overlay.directory / file_fix.path).read_bytes(), file_fix.path, "exec")
    changed = [
        line for line in unified_diff(plan).splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]  # fmt: skip
    assert sorted(line[0] + line[1:].strip() for line in changed) == sorted([
        "-kv_cache_specs=kv_cache_spec,",
        "+block_size=VLLM_BLOCK_SIZE,",
        "+is_encoder_decoder=False,",
        "-else self.get_input_embeddings(input_ids)",
        "+else self.embed_input_ids(input_ids)",
        "+self.executor.sample_tokens(None)",
        "-aux_hidden_states = captured_states_list[0]",
        "+aux_hidden_states = captured_states_list",
    ])  # fmt: skip
    for path in (GENERATOR, WORKER):  # the installed copy is untouched
        assert (site / path).read_bytes() != (overlay.directory / path).read_bytes()


def test_every_pattern_finding_is_fixed_and_none_is_left(fixed) -> None:
    plan, overlay, _, book = fixed
    assert plan.unfixable == ()
    for path in (GENERATOR, WORKER):
        left = match_patterns((overlay.directory / path).read_text(), path, book.patterns, consumer="s", provider_packages=("vllm",))
        assert left == [], path


def test_difflib_view_of_the_worker_change(fixed) -> None:
    plan, *_ = fixed
    worker = next(f for f in plan.changed_files if f.path == WORKER)
    diff = list(difflib.unified_diff(worker.original.decode().splitlines(), worker.patched.decode().splitlines(), n=0))
    assert len([line for line in diff if line.startswith("@@")]) == 1
