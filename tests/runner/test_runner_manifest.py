"""When a stage's manifest still matches, and when it does not (no torch needed)."""

from __future__ import annotations

import os

from apiaudit.runner import manifest as m


def _finished(tmp_path, **changes):
    out = tmp_path / "stage" / "out.bin"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(b"hidden states")
    expected = m.Expectation("extract", {"layers": [1, 2, 3]}, {"prepare:data": "sha256:aa"}, {"torch": "2.13.0"})
    manifest = m.Manifest(expected, m.record_outputs([out], tmp_path))
    m.write_manifest(out.parent, manifest)
    return out, expected


def test_unchanged_stage_is_current(tmp_path):
    out, expected = _finished(tmp_path)
    assert m.stale_reason(m.read_manifest(out.parent), expected, tmp_path) is None


def test_changed_config_inputs_or_versions_are_stale(tmp_path):
    out, expected = _finished(tmp_path)
    recorded = m.read_manifest(out.parent)
    for changed, label in (
        (m.Expectation("extract", {"layers": [1, 2, 4]}, expected.inputs, expected.versions), "config changed (layers"),
        (m.Expectation("extract", expected.config, {"prepare:data": "sha256:bb"}, expected.versions), "inputs changed"),
        (m.Expectation("extract", expected.config, expected.inputs, {"torch": "2.14.0"}), "versions changed (torch"),
    ):
        assert m.stale_reason(recorded, changed, tmp_path).startswith(label)


def test_missing_or_rewritten_output_is_stale(tmp_path):
    out, expected = _finished(tmp_path)
    recorded = m.read_manifest(out.parent)
    # Same size, new content and time: re-hashed and found different.
    out.write_bytes(b"HIDDEN STATES")
    assert m.stale_reason(recorded, expected, tmp_path) == "output stage/out.bin changed"
    out.unlink()
    assert m.stale_reason(recorded, expected, tmp_path) == "output stage/out.bin is missing"


def test_touched_but_identical_output_stays_current(tmp_path):
    out, expected = _finished(tmp_path)
    stat = out.stat()
    os.utime(out, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    assert m.stale_reason(m.read_manifest(out.parent), expected, tmp_path) is None


def test_unreadable_manifest_means_run_again(tmp_path):
    out, expected = _finished(tmp_path)
    (out.parent / m.MANIFEST_NAME).write_text("{not json")
    assert m.stale_reason(m.read_manifest(out.parent), expected, tmp_path) == "never completed"


def test_attempt_matches_only_the_same_expectation(tmp_path):
    _out, expected = _finished(tmp_path)
    stage = tmp_path / "stage"
    m.write_attempt(stage, expected)
    assert m.attempt_matches(stage, expected)
    assert not m.attempt_matches(stage, m.Expectation("extract", {"layers": [0, 1, 2]}, {}, {}))


def test_large_files_are_fingerprinted_by_sampling(tmp_path, monkeypatch):
    big = tmp_path / "weights.safetensors"
    big.write_bytes(b"a" * 4096 + b"b" * 4096)
    monkeypatch.setattr(m, "FULL_HASH_LIMIT", 1024)
    monkeypatch.setattr(m, "_SAMPLED_BLOCK", 1024)
    first = m.fingerprint(big)
    assert first.startswith("sampled-sha256:")
    # A change at the end is seen; so is a change of size.
    big.write_bytes(b"a" * 4096 + b"b" * 4095 + b"c")
    assert m.fingerprint(big) != first
