"""Issue 9 on the real released wheels: the model object's classes from vLLM's registry.

speculators' custom_worker binds `_patched_forward` onto `self.model_runner.model.model`; the
runner's `model` is the registry class for the model's architecture ([[slot]] in
rules/vllm.toml), every registered class without --model. Nothing here imports either package;
fixtures/models/README.md has the truth these assertions come from.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from apiaudit.audit import scan
from apiaudit.evidence import RecipeFacts, attribute_of
from apiaudit.findings import Severity
from apiaudit.model import load_model
from tests.test_audit_real_wheels import GENERATOR, _call_line

pytestmark = pytest.mark.network

WORKER = "speculators/data_generation/custom_worker.py"
MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "models"
SIGNATURES = {
    ("missing-required", GENERATOR, "vllm.config.scheduler.SchedulerConfig"),
    ("unexpected-keyword", GENERATOR, "vllm.v1.core.kv_cache_utils.get_kv_cache_config_from_groups"),
    ("missing-required", GENERATOR, "vllm.v1.core.sched.scheduler.Scheduler"),
}


def _scan(consumer, provider, cache, model=None):
    return scan([consumer], provider, cache_dir=cache, model=load_model(MODELS / model) if model else None)


def _errors(report):
    return [f for f in report.findings if f.severity is Severity.ERROR]


def test_030_on_016_without_model_get_input_embeddings_is_missing_on_every_eagle3_base_model(release_cache):
    report = _scan("speculators==0.3.0", "vllm==0.16.0", release_cache)
    hits = [f for f in _errors(report) if f.path == WORKER and attribute_of(f.facts) == "get_input_embeddings"]
    assert [(f.rule, f.line) for f in hits] == [("attribute-missing", 30)]
    # the recipe explains (and makes fixable) what the pattern rule used to guess
    assert hits[0].recipe == RecipeFacts("vllm-embed-input-ids", renamed_to="embed_input_ids")
    assert "vllm.model_executor.models.llama.LlamaModel" in hits[0].facts.classes
    assert not [f for f in report.findings if f.rule == "vllm-get-input-embeddings-renamed"]
    # 11 multimodal SupportsEagle3 classes have no `model`: one warning naming them
    (warning,) = [f for f in report.findings if f.rule == "model-attribute-missing" and attribute_of(f.facts) == "model"]
    assert warning.line == 107 and "11 of 43 classes" in warning.message


def test_without_model_draft_models_are_not_candidates_for_the_target_model(release_cache):
    """The registry's speculative-decoding models (rules: a `target = false` registry) are never
    the model a job extracts hidden states from: no warning names an EAGLE draft or an MTP head."""
    for consumer in ("speculators==0.3.0", "speculators==0.4.0"):
        report = _scan(consumer, "vllm==0.16.0", release_cache)
        named = [f for f in report.findings if f.rule in ("model-attribute-missing", "attribute-missing")
                 and any(word in f.message for word in ("Eagle", "_eagle", "MTP", "MultiTokenPredictor", "Medusa"))]  # fmt: skip
        assert not named, [(f.line, f.message[:120]) for f in named]
    report = _scan("speculators==0.3.0", "vllm==0.16.0", release_cache)
    assert [f.line for f in report.findings if f.rule == "model-attribute-missing"] == [107]
    # A draft model named with --architecture is still the model in force.
    eagle = scan(["speculators==0.3.0"], "vllm==0.16.0", cache_dir=release_cache, model=load_model(None, "Eagle3LlamaForCausalLM"))
    assert "vllm.model_executor.models.llama_eagle3" in " ".join(f.callee or "" for f in eagle.findings)


def test_040_on_011_without_model_embed_input_ids_is_missing_on_every_base_model(release_cache):
    report = _scan("speculators==0.4.0", "vllm==0.11.0", release_cache)
    hits = [f for f in _errors(report) if f.path == WORKER and attribute_of(f.facts) == "embed_input_ids"]
    assert [(f.rule, f.line) for f in hits] == [("attribute-missing", 38)]


def test_kimi_on_016_names_the_six_breaks(released, release_cache):
    consumer = released("speculators==0.3.0")
    report = _scan("speculators==0.3.0", "vllm==0.16.0", release_cache, "kimi-k2.5")
    errors = _errors(report)
    # The three signature breaks, and the three run-time breaks the GPU run found on 0.20.0 that
    # hold since 0.12.0 (the prefix-caching default, the single-reply collective_rpc) and 0.11.1
    # (execute_model without sample_tokens, on an executor the generator builds itself: proven).
    protocol = {
        ("vllm-cache-config-prefix-caching-default", GENERATOR, "vllm.config.cache.CacheConfig"),
        ("vllm-collective-rpc-unique-reply-rank-single-value", GENERATOR, None),
        ("vllm-execute-model-needs-sample-tokens", GENERATOR, None),
    }
    assert {(f.rule, f.path, f.callee) for f in errors if f.path == GENERATOR and f.rule != "remote-code-required"} == SIGNATURES | protocol
    guard = _call_line(consumer.root, WORKER, "supports_eagle3")
    assert {(f.rule, f.line, f.callee, f.behind_guard) for f in errors if f.path == WORKER} == {
        ("guard-fails", guard, "vllm.model_executor.models.interfaces.supports_eagle3", ()),
        ("attribute-missing", 107, "vllm.model_executor.models.kimi_k25.KimiK25ForConditionalGeneration.model", (guard,)),
    }
    remote = {(f.path, f.facts.auto_class) for f in errors if f.rule == "remote-code-required"}
    assert (GENERATOR, "AutoTokenizer") in remote
    # Kimi's config.json also maps AutoConfig and AutoModelForCausalLM to its own code, and
    # speculators 0.3.0 loads both without trust_remote_code: two more true sites.
    assert remote == {(GENERATOR, "AutoTokenizer"), ("speculators/model.py", "AutoModelForCausalLM"),
                      ("speculators/models/eagle3/core.py", "AutoConfig")}
    assert not [f for f in errors if attribute_of(f.facts) == "get_input_embeddings"]


def test_kimi_on_017_adds_request_eos_token_id(release_cache):
    report = _scan("speculators==0.3.0", "vllm==0.17.0", release_cache, "kimi-k2.5")
    got = {(f.rule, f.callee, f.param) for f in _errors(report) if f.path == GENERATOR}
    assert ("unexpected-keyword", "vllm.v1.request.Request", "eos_token_id") in got
    assert {f.rule for f in _errors(report) if f.path == WORKER} == {"guard-fails", "attribute-missing"}


def test_llama_on_016_get_input_embeddings_on_llama_model_and_no_kimi_findings(release_cache):
    report = _scan("speculators==0.3.0", "vllm==0.16.0", release_cache, "llama-3.1-8b")
    worker = [(f.rule, f.line, f.message) for f in _errors(report) if f.path == WORKER]
    assert worker == [("attribute-missing", 30, "'LlamaModel' object has no attribute 'get_input_embeddings'")]
    assert not [f for f in report.findings if f.rule in ("guard-fails", "remote-code-required", "model-attribute-missing")]


def test_kimi_on_018_passes_the_guard(release_cache):
    report = _scan("speculators==0.3.0", "vllm==0.18.0", release_cache, "kimi-k2.5")
    assert not [f for f in report.findings if f.rule == "guard-fails"]
    (missing,) = [f for f in _errors(report) if f.path == WORKER]
    assert attribute_of(missing.facts) == "model" and missing.behind_guard == ()


def test_040_on_kimi_reads_the_language_model_behind_hasattr(release_cache):
    report = _scan("speculators==0.4.0", "vllm==0.16.0", release_cache, "kimi-k2.5")
    assert not [f for f in report.findings if f.path == WORKER and f.severity is not Severity.INFO]
