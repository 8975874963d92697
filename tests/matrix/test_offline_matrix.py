"""`apiaudit matrix --offline`: the releases in the range that are cached, no package index asked."""

from __future__ import annotations

import json

import matrix_toy as toy
from click.testing import CliRunner

from apiaudit.cli.group import cli


def test_offline_matrix_uses_the_cached_releases(tmp_path, monkeypatch):
    monkeypatch.setenv("APIAUDIT_CONFIG", "none")
    cache_dir = tmp_path / "cache"
    toy.publish(cache_dir)
    consumer = str(toy.write_consumer(tmp_path / "project").parent)
    args = ["matrix", "--consumer", consumer, "--cache-dir", str(cache_dir), "--format", "json", "--offline", "--scan-jobs", "1"]
    result = CliRunner().invoke(cli, [*args, "--provider", "toyprov>=1.1"])
    doc = json.loads(result.stdout)
    assert [row["version"] for row in doc["rows"]] == list(toy.VERSIONS[1:])
    assert all(not row["fetched"] for row in doc["rows"])
    result = CliRunner().invoke(cli, [*args, "--provider", "otherprov>=1"])
    assert result.exit_code == 2 and "no release of otherprov is in the cache and --offline fetches nothing" in result.output
