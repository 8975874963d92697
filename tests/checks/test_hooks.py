"""Hooks the provider stopped calling (issue 37, cause 5): `hook-not-called`.

Fixture provider `poolkit` 1.0 declares and calls its eviction policy's `mark_pinned` hook;
2.0 neither declares nor calls it (fixtures/providers/poolkit_v{1,2}). The consumer `poolplug`
(fixtures/consumers/poolplug) overrides it; each line's comment says what is expected. The
releases are published as release cache entries, so each is the other's evidence.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from apiaudit.audit import scan
from apiaudit.policy.config import Settings
from apiaudit.sources import cache
from tests.matrix.matrix_toy import seal_entry

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CONSUMER = FIXTURES / "consumers" / "poolplug" / "poolplug"


def publish_poolkit(cache_dir: Path, version: str) -> None:
    """poolkit `version` ("1.0" or "2.0") as a complete entry of the release cache `cache_dir`."""
    entry = cache.entry_dir(cache_dir, "poolkit", version)
    shutil.copytree(FIXTURES / "providers" / f"poolkit_v{version[0]}", entry)
    seal_entry(entry, "poolkit", version)


@pytest.fixture()
def pool_cache(tmp_path: Path) -> Path:
    """poolkit 1.0 and 2.0 as complete entries of a release cache."""
    cache_dir = tmp_path / "cache"
    publish_poolkit(cache_dir, "1.0")
    publish_poolkit(cache_dir, "2.0")
    return cache_dir


def _findings(provider: str, cache_dir: Path | None, use_index_cache: bool = False):
    report = scan([str(CONSUMER)], provider, cache_dir=cache_dir, use_index_cache=use_index_cache, settings=Settings())
    return [(f.path, f.line, f.rule, f.severity.value, f.callee, f.message) for f in report.findings if f.rule != "cannot-judge"]


def test_an_override_the_release_neither_declares_nor_calls_is_a_warning_naming_where_it_is_declared(pool_cache):
    assert _findings("poolkit==2.0", pool_cache) == [
        (
            "poolplug/policy.py", 18, "hook-not-called", "warning", "poolkit.policy.EvictionPolicy.mark_pinned",
            "PinningPolicy.mark_pinned overrides nothing on poolkit 2.0 and nothing there calls it; poolkit 1.0 declares "
            "it on EvictionPolicy: the provider never runs it here, so what it does is silently lost",
        ),
    ]  # fmt: skip


def test_nothing_on_the_release_that_declares_and_calls_the_hook(pool_cache):
    assert _findings("poolkit==1.0", pool_cache) == []


def test_without_another_release_at_hand_nothing_says_it_is_a_hook():
    assert _findings(str(FIXTURES / "providers" / "poolkit_v2" / "poolkit"), None) == []


def test_a_release_fetched_later_rejudges_a_cached_scan(tmp_path):
    """The other releases in the cache are an input of the scan: its cached result is not reused
    once one arrives."""
    cache_dir = tmp_path / "cache"
    publish_poolkit(cache_dir, "2.0")
    assert _findings("poolkit==2.0", cache_dir, use_index_cache=True) == []
    publish_poolkit(cache_dir, "1.0")
    assert [f[2] for f in _findings("poolkit==2.0", cache_dir, use_index_cache=True)] == ["hook-not-called"]
