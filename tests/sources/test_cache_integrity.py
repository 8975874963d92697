"""Release cache integrity: each file's sha256 is in the marker, a same-length edit of a cached
file is caught where the file is read, and the warm path still only stats.

A scan answered from its whole-scan results reads no provider file: its answer was computed
from files checked against the marker, so it stands for the release; the edit is caught by the
next scan that reads the file."""

from __future__ import annotations

import hashlib
import json

import pytest

from apiaudit.audit import scan
from apiaudit.consumer import collect
from apiaudit.consumer.records import ConsumerOptions
from apiaudit.errors import CacheError
from apiaudit.sources import cache as release_cache
from apiaudit.sources import resolve
from apiaudit.sources.cache import MARKER_NAME


@pytest.fixture
def consumer(tmp_path):
    job = tmp_path / "job.py"
    job.write_text("from toypkg.mod import f\nf(1, b=2)\nf(1, c=3)\n")
    return job


def _findings(report):
    return sorted((f.rule, f.param, f.line) for f in report.findings)


def test_the_marker_holds_every_files_sha256(tmp_path, local_index):
    tree = resolve("toypkg==1.0", cache_dir=tmp_path / "cache")
    marker = json.loads((tree.root / MARKER_NAME).read_text())
    files = release_cache.tree_files(tree.root)
    assert sorted(marker["sha256"]) == files
    for rel in files:
        assert marker["sha256"][rel] == hashlib.sha256((tree.root / rel).read_bytes()).hexdigest()


@pytest.mark.parametrize("index_cache", [True, False], ids=["index-cache", "no-index-cache"])
def test_a_same_length_edit_of_a_cached_provider_file_is_detected(tmp_path, local_index, consumer, index_cache):
    cache_dir = tmp_path / "cache"
    cold = scan([str(consumer)], "toypkg==1.0", cache_dir=cache_dir, use_index_cache=index_cache)
    assert ("unexpected-keyword", "c", 3) in _findings(cold)
    entry = release_cache.entry_dir(cache_dir, "toypkg", "1.0")
    for name in ("mod.py", "mod.pyi"):  # the provider's API as Griffe reads it
        path = entry / "toypkg" / name
        edited = path.read_bytes().replace(b"b", b"c", 1)
        assert len(edited) == path.stat().st_size
        path.write_bytes(edited)
    if index_cache:
        assert _findings(scan([str(consumer)], "toypkg==1.0", cache_dir=cache_dir)) == _findings(cold)
        consumer.write_text(consumer.read_text() + "f(2, b=1)\n")  # the next scan reads the provider again

    with pytest.raises(CacheError) as caught:
        scan([str(consumer)], "toypkg==1.0", cache_dir=cache_dir, use_index_cache=index_cache)
    message = str(caught.value)
    assert message.startswith("the cached release toypkg==1.0 was changed after it was extracted (toypkg/mod.py")
    assert "run again to fetch it afresh" in message
    assert not entry.exists(), "the broken entry is removed"

    again = scan([str(consumer)], "toypkg==1.0", cache_dir=cache_dir, use_index_cache=index_cache)
    assert _findings(again) == _findings(cold)


@pytest.mark.parametrize("with_cache", [False, True], ids=["no-consumer-cache", "consumer-cache"])
def test_a_same_length_edit_of_a_cached_consumer_file_is_detected(tmp_path, local_index, with_cache):
    cache_dir = tmp_path / "cache"
    tree = resolve("toypkg==1.0", cache_dir=cache_dir)
    options = ConsumerOptions(provider_packages=("other",))
    collect(tree, options, cache_dir=cache_dir if with_cache else None)
    init = tree.root / "toypkg" / "__init__.py"
    init.write_bytes(init.read_bytes().replace(b"f", b"g", 1))
    with pytest.raises(CacheError, match="toypkg/__init__.py no longer matches its sha256"):
        collect(tree, options, cache_dir=cache_dir if with_cache else None)
    assert not tree.root.exists(), "the broken entry is removed"


def test_the_warm_path_stats_but_never_hashes(tmp_path, local_index, monkeypatch):
    tree = resolve("toypkg==1.0", cache_dir=tmp_path / "cache")

    def no_hashing(path):
        raise AssertionError(f"the warm path hashed {path}")

    monkeypatch.setattr(release_cache, "file_sha256", no_hashing)
    assert resolve("toypkg==1.0", cache_dir=tmp_path / "cache") == tree


def _drop_digests(entry):
    marker = json.loads((entry / MARKER_NAME).read_text())
    del marker["sha256"]
    (entry / MARKER_NAME).write_text(json.dumps(marker))


def test_a_marker_from_before_hashes_is_upgraded_once(tmp_path, local_index):
    tree = resolve("toypkg==1.0", cache_dir=tmp_path / "cache")
    before = json.loads((tree.root / MARKER_NAME).read_text())
    _drop_digests(tree.root)
    assert resolve("toypkg==1.0", cache_dir=tmp_path / "cache") == tree
    assert json.loads((tree.root / MARKER_NAME).read_text()) == before


def test_a_marker_from_before_hashes_over_a_file_that_differs_from_record_is_rebuilt(tmp_path, local_index):
    cache_dir = tmp_path / "cache"
    tree = resolve("toypkg==1.0", cache_dir=cache_dir)
    _drop_digests(tree.root)
    mod = tree.root / "toypkg" / "mod.py"
    original = mod.read_bytes()
    mod.write_bytes(original.replace(b"b", b"c", 1))
    with pytest.warns(UserWarning, match="toypkg/mod.py differs from its RECORD hash"):
        rebuilt = resolve("toypkg==1.0", cache_dir=cache_dir)
    assert (rebuilt.root / "toypkg" / "mod.py").read_bytes() == original


def test_a_warm_release_scan_reads_no_provider_file_and_rewrites_no_index(tmp_path, local_index, consumer, monkeypatch):
    """The index entry's hashes are checked against the marker's, each file only stat'ed."""
    from pathlib import Path

    cache_dir = tmp_path / "cache"
    cold = scan([str(consumer)], "toypkg==1.0", cache_dir=cache_dir)
    entry = release_cache.entry_dir(cache_dir, "toypkg", "1.0")
    index_file = next((cache_dir / "index").glob("*.json"))
    written = (index_file.read_bytes(), index_file.stat().st_mtime_ns)
    read = []
    for method in ("read_bytes", "read_text"):
        real = getattr(Path, method)

        def spy(self, *args, _real=real, **kwargs):
            if entry in self.parents and self.suffix in (".py", ".pyi"):
                read.append(self.relative_to(entry).as_posix())
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(Path, method, spy)

    warm = scan([str(consumer)], "toypkg==1.0", cache_dir=cache_dir)

    assert _findings(warm) == _findings(cold)
    assert read == [], "a warm scan reads (hashes) no provider file"
    assert (index_file.read_bytes(), index_file.stat().st_mtime_ns) == written, "a warm scan rewrites no index entry"


def test_a_provider_file_with_a_new_stat_but_the_same_content_is_hashed_once(tmp_path, local_index, consumer):
    import os

    cache_dir = tmp_path / "cache"
    cold = scan([str(consumer)], "toypkg==1.0", cache_dir=cache_dir)
    mod = release_cache.entry_dir(cache_dir, "toypkg", "1.0") / "toypkg" / "mod.pyi"
    os.utime(mod, ns=(mod.stat().st_atime_ns, mod.stat().st_mtime_ns + 10**9))  # a copied cache, say
    assert _findings(scan([str(consumer)], "toypkg==1.0", cache_dir=cache_dir)) == _findings(cold)


def test_a_scan_answered_from_its_results_does_not_list_the_release(tmp_path, local_index, consumer, monkeypatch):
    cache_dir = tmp_path / "cache"
    cold = scan([str(consumer)], "toypkg==1.0", cache_dir=cache_dir)

    def no_listing(directory):
        raise AssertionError(f"a scan answered from its results listed {directory}")

    with monkeypatch.context() as patched:
        patched.setattr(release_cache, "_listing", no_listing)
        release_cache._VALID.clear()
        assert _findings(scan([str(consumer)], "toypkg==1.0", cache_dir=cache_dir)) == _findings(cold)
    # A scan that reads the release lists it whole first: a file gone from it is a broken entry, fetched again.
    entry = release_cache.entry_dir(cache_dir, "toypkg", "1.0")
    (entry / "toypkg" / "mod.pyi").unlink()
    consumer.write_text(consumer.read_text() + "f(2, b=1)\n")
    release_cache._VALID.clear()
    again = scan([str(consumer)], "toypkg==1.0", cache_dir=cache_dir)
    assert _findings(again) == _findings(cold)
    assert (entry / "toypkg" / "mod.pyi").is_file()
