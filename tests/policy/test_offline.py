"""--offline: a release that is not cached is one line and exit 2; paths and installed code still work."""

from __future__ import annotations

import json

from policy_helpers import run, validate_report, write_config


def test_an_uncached_release_is_refused_without_fetching(project):
    code, out = run("scan", "--consumer", "jobs", "--provider", "tinyprov==9.9.9", "--offline", "--format", "json")
    lines = out.strip().splitlines()
    assert code == 2 and len(lines) == 1
    assert "tinyprov==9.9.9 is not in the cache" in lines[0] and "--offline fetches nothing" in lines[0]
    assert not (project / "cache" / "releases").exists() or not any((project / "cache" / "releases").iterdir())


def test_offline_from_config_and_paths_are_read_as_always(project):
    write_config(project, "offline = true\n")
    code, out = run("scan", "--consumer", "jobs", "--provider", "prov/tinyprov", "--format", "json")
    assert code == 1 and validate_report(json.loads(out))["findings"]
    code, out = run("scan", "--consumer", "jobs", "--provider", "tinyprov==9.9.9", "--format", "json")
    assert code == 2 and "--offline fetches nothing" in out
