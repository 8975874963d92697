"""Reports built by hand from Finding values: these tests exercise the formats, not the engine."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from apiaudit.evidence import BindingFacts, ImportFacts, RecipeFacts
from apiaudit.findings import CodeOrigin, Finding, Report, Severity

CONSUMER = CodeOrigin(name="speculators", version="0.3.0", root="/srv/audit/speculators-0.3.0", kind="release")
SCRIPTS = CodeOrigin(name="jobs", version=None, root="/srv/audit/my jobs", kind="path")
PROVIDER = CodeOrigin(name="vllm", version="0.10.1", root="/srv/audit/vllm-0.10.1", kind="release")

def _finding(**overrides: Any) -> Finding:
    base = dict(
        rule="unexpected-keyword",
        severity=Severity.ERROR,
        consumer="speculators",
        path="speculators/data_generation/generator.py",
        line=10,
        column=4,
        callee="vllm.engine.arg_utils.EngineArgs.__init__",
        param="disable_log_requests",
        message="EngineArgs() got an unexpected keyword argument 'disable_log_requests'",
    )
    base.update(overrides)
    return Finding(**base)


def _findings() -> tuple[Finding, ...]:
    """A mix of rules, severities, files and consumers, deliberately out of order."""
    return (
        _finding(
            line=42,
            column=8,
            end_line=44,
            end_column=9,
            provider_location="vllm/engine/arg_utils.py:301",
            signature="EngineArgs(model: str = 'facebook/opt-125m', *, tokenizer: str | None = None, seed: int = 0)",
            source="args = EngineArgs(model=path, disable_log_requests=True)",
            advice="Drop disable_log_requests=...; request logging is now off unless enabled.",
            facts=BindingFacts(arg_line=43, annotation="bool"),
            recipe=RecipeFacts("vllm-drop-disable-log-requests"),
        ),
        _finding(
            rule="import-missing",
            path="speculators/convert/eagle.py",
            line=3,
            column=0,
            callee="vllm.model_executor.models.llama_eagle3.Eagle3LlamaForCausalLM",
            param=None,
            message="vllm.model_executor.models.llama_eagle3 has no name Eagle3LlamaForCausalLM",
            source="from vllm.model_executor.models.llama_eagle3 import Eagle3LlamaForCausalLM",
            advice="Import it from vllm.model_executor.models.llama_eagle3_v2 instead.",
            facts=ImportFacts(
                "vllm.model_executor.models.llama_eagle3",
                "Eagle3LlamaForCausalLM",
                candidates=("vllm.model_executor.models.llama_eagle3_v2.Eagle3LlamaForCausalLM",),
                moved_to="vllm.model_executor.models.llama_eagle3_v2",
            ),
        ),
        _finding(
            rule="cannot-judge",
            severity=Severity.INFO,
            path="speculators/convert/eagle.py",
            line=17,
            column=12,
            callee=None,
            param=None,
            message="the receiver of .generate() could not be resolved to a provider class",
            source="outputs = self.engine.generate(prompts)",
        ),
        _finding(
            rule="missing-required",
            severity=Severity.WARNING,
            path="speculators/data_generation/generator.py",
            line=7,
            column=0,
            param="vllm_config",
            message="Worker() is missing the required parameter 'vllm_config'",
            provider_location="vllm/v1/worker/gpu_worker.py:40",
            signature="Worker(vllm_config: VllmConfig, local_rank: int, rank: int)",
        ),
        _finding(
            rule="eagle3-aux-hidden-states",  # a recipe rule id, unknown to ENGINE_RULES
            severity=Severity.WARNING,
            consumer="jobs",
            path="run, eagle:3.py",
            line=5,
            column=2,
            callee="vllm.config.SpeculativeConfig",
            param="method",
            message="SpeculativeConfig(method='eagle3') needs eagle_aux_hidden_state_layer_ids since 0.10",
            advice="Pass eagle_aux_hidden_state_layer_ids or let apiaudit fix it.",
        ),
        _finding(rule="cannot-judge", severity=Severity.INFO, line=99, column=0, callee=None, param=None,
                     message="call through a getattr() string cannot be bound"),
    )


def _report(**overrides: Any) -> Report:
    base: dict[str, Any] = dict(
        consumers=(CONSUMER, SCRIPTS),
        provider=PROVIDER,
        findings=_findings(),
        files_scanned=41,
        calls_checked=230,
        duration_s=0.4213,
        rules_version="2025.07",
        extras=(("python", "3.11"), ("fail_on", "error")),
    )
    base.update(overrides)
    return Report(**base)


@pytest.fixture
def report() -> Report:
    return _report()


@pytest.fixture
def make_finding() -> Callable[..., Finding]:
    """A Finding with plausible defaults; keyword arguments override any field."""
    return _finding


@pytest.fixture
def make_report() -> Callable[..., Report]:
    """The sample report (two consumers, engine, recipe and cannot-judge findings) with overrides."""
    return _report
