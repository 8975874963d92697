"""remote-code-required: Auto classes on a model with custom code, without trust_remote_code=True."""

from __future__ import annotations

from pathlib import Path

import pytest

from apiaudit.audit import scan
from apiaudit.checks.remote_code import (
    AutoCallSite,
    TrustArgument,
    auto_call_sites,
    check_call,
)
from apiaudit.errors import InputError
from apiaudit.model import load_model
from apiaudit.recipes.loader import load_remote_code_rules

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "fixtures" / "models"
PROVIDERS = REPO / "fixtures" / "providers"
JOB = REPO / "fixtures" / "consumers" / "loaders"
RULE = load_remote_code_rules()[0]


def _site(**changes) -> AutoCallSite:
    base = dict(path="job.py", line=3, column=4, end_line=3, end_column=40, auto_class="AutoTokenizer",
                trust=TrustArgument.ABSENT, model_literal=None, has_model_argument=True, source="AutoTokenizer.from_pretrained(p)")
    base.update(changes)
    return AutoCallSite(**base)


def test_the_check_is_a_function_of_site_model_and_rule():
    kimi = load_model(MODELS / "kimi-k2.5")
    finding = check_call(_site(), kimi, RULE, "job")
    assert (finding.rule, finding.severity.value, finding.line, finding.param) == ("remote-code-required", "error", 3, "trust_remote_code")
    assert finding.facts.auto_map_file == "tokenizer_config.json"
    assert "tokenization_kimi.TikTokenTokenizer" in finding.message
    assert finding.advice.startswith("pass trust_remote_code=True")
    assert check_call(_site(trust=TrustArgument.TRUE), kimi, RULE, "job") is None
    assert check_call(_site(trust=TrustArgument.UNKNOWN), kimi, RULE, "job") is None
    assert check_call(_site(trust=TrustArgument.FALSE), kimi, RULE, "job") is not None
    assert check_call(_site(auto_class="AutoProcessor"), kimi, RULE, "job") is None  # not in Kimi's auto_map
    assert check_call(_site(model_literal="org/other"), kimi, RULE, "job") is None
    assert check_call(_site(model_literal="moonshotai/kimi-k2.5"), kimi, RULE, "job") is not None  # names this model
    assert check_call(_site(has_model_argument=False), kimi, RULE, "job") is None


def test_models_without_custom_code_for_that_class():
    assert check_call(_site(), load_model(MODELS / "llama-3.1-8b"), RULE, "job") is None
    deepseek = load_model(MODELS / "deepseek-v3")
    assert check_call(_site(), deepseek, RULE, "job") is None  # its tokenizer is stock
    assert check_call(_site(auto_class="AutoModelForCausalLM"), deepseek, RULE, "job") is not None
    assert check_call(_site(), load_model(architecture="KimiK25ForConditionalGeneration"), RULE, "job") is None


def test_call_sites_follow_imports_and_aliases():
    source = (JOB / "load_job.py").read_text()
    sites = auto_call_sites(source, "load_job.py", RULE)
    assert [(s.line, s.auto_class, s.trust.value, s.model_literal) for s in sites] == [
        (15, "AutoTokenizer", "absent", None),
        (16, "AutoConfig", "true", None),
        (17, "AutoModelForCausalLM", "false", None),
        (18, "AutoTokenizer", "absent", None),
        (19, "AutoProcessor", "absent", None),
        (20, "AutoTokenizer", "absent", "org/some-other-model"),
        (21, "AutoTokenizer", "unknown", None),
    ]
    assert auto_call_sites("from elsewhere import AutoTokenizer\nAutoTokenizer.from_pretrained(p)\n", "x.py", RULE) == []


def _scan(model):
    return scan([str(JOB)], str(PROVIDERS / "modelhub_v1" / "modelhub"), cache_dir=None, rules_dirs=[PROVIDERS],
                use_index_cache=False, model=model)


def test_scan_reports_remote_code_only_with_a_model(tmp_path):
    wrapper = load_model(MODELS / "hub-wrapper")
    report = _scan(wrapper)
    got = [(f.rule, f.path, f.line, f.facts.auto_class) for f in report.findings if f.rule == "remote-code-required"]
    assert got == [
        ("remote-code-required", "load_job.py", 15, "AutoTokenizer"),
        ("remote-code-required", "load_job.py", 17, "AutoModelForCausalLM"),
        ("remote-code-required", "load_job.py", 18, "AutoTokenizer"),
    ]
    assert dict(report.extras)["model"] == "hub-wrapper"
    # Without a model nothing of this job is checked (it uses transformers only): bad input, not green.
    with pytest.raises(InputError, match="never uses"):
        _scan(None)
    assert not [f for f in _scan(load_model(MODELS / "hub-dense")).findings if f.rule == "remote-code-required"]
