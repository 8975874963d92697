"""`impact` over a real provider change: vLLM 0.11.0 -> 0.12.0 against speculators 0.3.0 (network:
real wheels, fetched once into the shared test cache)."""

from __future__ import annotations

import pytest

from apiaudit.impact.run import run_impact


@pytest.mark.network
def test_vllm_0_12_breaks_speculators_0_3_through_edits_the_diff_shows(release_cache, tmp_path):
    listed = tmp_path / "downstream.toml"
    listed.write_text('replace-bundled = true\ndownstream = ["speculators==0.3.0"]\n')
    result = run_impact("vllm==0.11.0", "vllm==0.12.0", downstream_files=[listed], cache_dir=release_cache)
    [down] = result.downstreams
    assert down.label == "speculators 0.3.0" and down.outcome == "breaks" and result.exit_code() == 1
    said = {c.change.summary: c.change.location for c in result.by_change}
    # Edits read in vLLM 0.12.0's diff: a parameter dropped, two constructors given a required one
    assert said["`get_kv_cache_config_from_groups` lost `kv_cache_specs`"] == "vllm/v1/core/kv_cache_utils.py:1050"
    assert said["`Scheduler` requires a new parameter `block_size`"] == "vllm/v1/core/sched/scheduler.py:58"
    assert said["`SchedulerConfig` requires a new parameter `is_encoder_decoder`"] == "vllm/config/scheduler.py:26"
    assert "`LlamaModel` renamed attribute `get_input_embeddings` to `embed_input_ids`" in said
