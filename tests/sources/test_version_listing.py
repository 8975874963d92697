"""The index's version list is reused for a few minutes (data only), `refresh` asks again; a
release entry is walked once inside `validate_once()`."""

from __future__ import annotations

import json
import time

from apiaudit.sources import cache as release_cache
from apiaudit.sources import release as release_module
from apiaudit.sources import release_versions, resolve


def _count_pip(monkeypatch) -> list:
    calls = []
    real = release_module._run_pip
    monkeypatch.setattr(release_module, "_run_pip", lambda args, *a, **k: calls.append(args) or real(args, *a, **k))
    return calls


def test_a_listing_is_reused_until_its_ttl_and_refresh_asks_again(tmp_path, local_index, monkeypatch):
    calls = _count_pip(monkeypatch)
    cache = tmp_path / "cache"
    assert release_versions("toypkg", cache_dir=cache) == ["0.9", "1.0"]
    assert release_versions("toypkg", cache_dir=cache) == ["0.9", "1.0"]
    assert len(calls) == 1, "the second listing comes from the cache"
    assert release_versions("toypkg", cache_dir=cache, refresh=True) == ["0.9", "1.0"]
    assert len(calls) == 2
    listing = next((cache / "index-versions").glob("*.json"))
    data = json.loads(listing.read_text())
    data["listed_at"] = time.time() - release_module.VERSIONS_TTL_SECONDS - 1
    listing.write_text(json.dumps(data))
    assert release_versions("toypkg", cache_dir=cache) == ["0.9", "1.0"]
    assert len(calls) == 3, "an expired listing is not trusted"


def test_a_garbled_listing_is_listed_again(tmp_path, local_index, monkeypatch):
    cache = tmp_path / "cache"
    release_versions("toypkg", cache_dir=cache)
    listing = next((cache / "index-versions").glob("*.json"))
    listing.write_text(json.dumps({"kind": "index-versions", "listed_at": time.time(), "versions": ["not a version!"]}))
    calls = _count_pip(monkeypatch)
    assert release_versions("toypkg", cache_dir=cache) == ["0.9", "1.0"]
    assert len(calls) == 1


def test_inside_validate_once_an_entry_is_walked_once(tmp_path, local_index, monkeypatch):
    cache = tmp_path / "cache"
    tree = resolve("toypkg==1.0", cache_dir=cache)
    walks = []
    real = release_cache.read_valid_marker
    monkeypatch.setattr(release_cache, "read_valid_marker", lambda *a: walks.append(a) or real(*a))
    with release_module.validate_once():
        for _ in range(3):
            assert resolve("toypkg==1.0", cache_dir=cache) == tree
    assert len(walks) == 1
    assert resolve("toypkg==1.0", cache_dir=cache) == tree
    assert len(walks) == 2, "outside the block every resolve validates"
