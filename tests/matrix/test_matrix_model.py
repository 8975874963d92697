"""`matrix --model`: from which release the model's architecture is registered (cache entries, no network)."""

from __future__ import annotations

import shutil
from pathlib import Path

from matrix_toy import seal_entry

from apiaudit.matrix.sweep import run_matrix
from apiaudit.model import ModelFacts
from apiaudit.sources import cache

REPO = Path(__file__).resolve().parents[2]
PROVIDERS = REPO / "fixtures" / "providers"
JOB = str(REPO / "fixtures" / "consumers" / "loaders")


def _publish(cache_dir: Path) -> None:
    """The fixture provider's two versions as release cache entries modelhub 0.1.0 and 0.2.0."""
    for version, fixture in (("0.1.0", "modelhub_v1"), ("0.2.0", "modelhub_v2")):
        entry = cache.entry_dir(cache_dir, "modelhub", version)
        shutil.copytree(PROVIDERS / fixture / "modelhub", entry / "modelhub")
        seal_entry(entry, "modelhub", version)


def test_a_release_that_does_not_register_the_architecture_is_a_failed_row(tmp_path):
    cache_dir = tmp_path / "cache"
    _publish(cache_dir)
    result = run_matrix([JOB], "modelhub", cache_dir=cache_dir, rules_dirs=[PROVIDERS], available=("0.1.0", "0.2.0"),
                        scan_jobs=1, model=ModelFacts(("LateForCausalLM",)))  # fmt: skip
    first, second = result.rows
    assert not first.scanned
    assert first.failure == (
        "modelhub 0.1.0 does not register the architecture LateForCausalLM in its model registry "
        "(modelhub 0.2.0 is the first release in the cache that registers LateForCausalLM)"
    )
    assert second.scanned and second.compatible
    assert result.compatible_versions == ("0.2.0",)
