"""The scan engine on the real released wheels (issue 2, done-means 1 and 2).

The wheels are fetched once into the shared test cache with `pip download --no-deps`;
only their .py files are read. Nothing here imports vllm or speculators.
"""

from __future__ import annotations

import ast

import pytest

from apiaudit.audit import scan
from apiaudit.findings import ENGINE_RULES, Severity

pytestmark = pytest.mark.network

GENERATOR = "speculators/data_generation/vllm_hidden_states_generator.py"


def _errors(report, prefix):
    return [f for f in report.findings if f.severity is Severity.ERROR and f.path.startswith(prefix)]


def _call_line(tree_root, path, callee_name, keyword=None):
    """The first line of the call to `callee_name` in the consumer's source (found independently with ast)."""
    source = (tree_root / path).read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name == callee_name and (keyword is None or any(k.arg == keyword for k in node.keywords)):
                return node.lineno
    raise AssertionError(f"no call to {callee_name} in {path}")


def test_speculators_030_on_vllm_016_names_the_three_generator_breaks(released, release_cache):
    consumer = released("speculators==0.3.0")
    report = scan(["speculators==0.3.0"], "vllm==0.16.0", cache_dir=release_cache)
    got = {(f.rule, f.callee, f.param, f.line) for f in _errors(report, GENERATOR) if f.rule in ENGINE_RULES}
    # Beside them, the rules' three errors signatures cannot show (all failed on a GPU,
    # bench/gpu/results/); execute_model's is an error because the generator builds the executor.
    patterns = {(f.rule, f.line) for f in _errors(report, GENERATOR) if f.rule not in ENGINE_RULES}
    assert patterns == {
        ("vllm-cache-config-prefix-caching-default", _call_line(consumer.root, GENERATOR, "CacheConfig")),
        ("vllm-collective-rpc-unique-reply-rank-single-value", _call_line(consumer.root, GENERATOR, "collective_rpc", "unique_reply_rank")),
        ("vllm-execute-model-needs-sample-tokens", _call_line(consumer.root, GENERATOR, "execute_model")),
    }
    expected = {
        (
            "missing-required",
            "vllm.config.scheduler.SchedulerConfig",
            "is_encoder_decoder",
            _call_line(consumer.root, GENERATOR, "SchedulerConfig"),
        ),
        (
            "unexpected-keyword",
            "vllm.v1.core.kv_cache_utils.get_kv_cache_config_from_groups",
            "kv_cache_specs",
            _call_line(consumer.root, GENERATOR, "get_kv_cache_config_from_groups"),
        ),
        (
            "missing-required",
            "vllm.v1.core.sched.scheduler.Scheduler",
            "block_size",
            _call_line(consumer.root, GENERATOR, "Scheduler"),
        ),
    }
    assert got == expected
    for finding in (f for f in _errors(report, GENERATOR) if f.rule in ENGINE_RULES):
        assert finding.provider_location and finding.provider_location.startswith("vllm/")
        assert finding.signature and finding.advice and finding.source
    assert report.exit_code() == 1


@pytest.mark.parametrize(
    "consumer, provider",
    [("speculators==0.4.0", "vllm==0.16.0"), ("speculators==0.3.0", "vllm==0.11.0")],
)
def test_pairs_shipped_together_have_no_error_in_data_generation(consumer, provider, release_cache):
    report = scan([consumer], provider, cache_dir=release_cache)
    assert _errors(report, "speculators/data_generation/") == []
    # The engine did look: calls into vLLM were bound, and cannot-judge is counted, not hidden.
    assert report.calls_checked > 20


def test_warm_scan_gives_the_same_report_from_the_index_cache(release_cache, tmp_path):
    cold = scan(["speculators==0.3.0"], "vllm==0.16.0", cache_dir=release_cache, use_index_cache=False)
    first = scan(["speculators==0.3.0"], "vllm==0.16.0", cache_dir=release_cache)
    warm = scan(["speculators==0.3.0"], "vllm==0.16.0", cache_dir=release_cache)
    assert cold.findings == first.findings == warm.findings


PATTERN_RULES = {"vllm-execute-model-needs-sample-tokens", "vllm-collective-rpc-unique-reply-rank-single-value"}


def test_protocol_and_return_shape_rules_fire_on_030_not_040(release_cache):
    old = scan(["speculators==0.3.0"], "vllm==0.16.0", cache_dir=release_cache)
    new = scan(["speculators==0.4.0"], "vllm==0.16.0", cache_dir=release_cache)
    assert {f.rule for f in old.findings if f.path == GENERATOR} >= PATTERN_RULES
    assert {f.rule for f in new.findings} & PATTERN_RULES == set()
    for f in old.findings:
        if f.rule in PATTERN_RULES:
            # both fail at run time; execute_model's receiver is proven (`self.executor =
            # MultiprocExecutor(...)`), so its pattern is an error too (receiver_class)
            assert f.severity is Severity.ERROR and f.advice and f.reason is None


def test_a_scan_shared_among_processes_finds_what_one_process_finds(released, release_cache, tmp_path, fresh_interpreter):
    """speculators 0.3.0 x vLLM 0.16.0 read and checked by three processes (shares of a few
    files each), cold and with caches written by those copies, against one process alone. In a
    fresh interpreter: copies are made only where no other thread runs."""
    released("speculators==0.3.0")
    released("vllm==0.16.0")
    private = tmp_path / "cache"
    private.mkdir()
    (private / "releases").symlink_to(release_cache / "releases", target_is_directory=True)
    got = fresh_interpreter(
        f"""
        import json, shutil
        from pathlib import Path
        from apiaudit.infra import workers
        from apiaudit.audit import scan

        forks = []
        real_fork = workers._fork
        workers._fork = lambda *a: forks.append(1) or real_fork(*a)
        release_cache, private = Path({str(release_cache)!r}), Path({str(private)!r})

        def comparable(report):
            return [repr(f) for f in report.findings], report.files_scanned, report.calls_checked

        def run(jobs, cache_dir, **options):
            workers.set_jobs(jobs)
            return comparable(scan(["speculators==0.3.0"], "vllm==0.16.0", cache_dir=cache_dir, **options))

        alone = run(1, release_cache, use_index_cache=False)
        workers.MIN_SHARE = 5
        shared_cold = run(3, release_cache, use_index_cache=False)
        shared_cached = run(3, private)
        shutil.rmtree(private / "results")  # not the whole-scan answer: the copies' index and consumer caches
        warm = run(1, private)
        print(json.dumps({{"forks": len(forks), "same": [shared_cold == alone, shared_cached == alone, warm == alone],
                          "findings": len(alone[0])}}))
        """
    )
    assert got["findings"] > 0 and got["same"] == [True, True, True]
    assert got["forks"] >= 4  # reading and checks were shared in both shared runs


def test_the_cache_config_pattern_names_the_class_where_it_is(release_cache):
    """speculators 0.3.0 x vLLM 0.16.0: CacheConfig exists (vllm/config/cache.py:38-39); the pattern
    finding about its enable_prefix_caching default says so, never "(not found)"."""
    from apiaudit.report import render

    report = scan(["speculators==0.3.0"], "vllm==0.16.0", cache_dir=release_cache)
    [finding] = [f for f in report.findings if f.rule == "vllm-cache-config-prefix-caching-default"]
    assert finding.provider_location == "vllm/config/cache.py:38"  # its @config line, as every class is located
    assert finding.signature and "enable_prefix_caching: bool = True" in finding.signature
    table = render(report, "table", width=120)
    assert "vllm.config.cache.CacheConfig (not found)" not in table
    assert "(vllm/config/cache.py:38)" in table
