"""Reports byte for byte as they were before the layout changed (issue 23).

Every format of the report on the fixture consumers and on speculators 0.3.0/0.4.0 x vLLM
0.16.0/0.20.0 is compared with the text stored under tests/golden/, written by the engine
before the package was reorganised. A refactor that changes what a user reads fails here.
`APIAUDIT_WRITE_GOLDEN=1 pytest tests/test_reports_unchanged.py` writes them anew, for a
change that means to alter reports (say why in its commit).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import replace
from pathlib import Path

import pytest

from apiaudit.audit import scan
from apiaudit.model import load_model
from apiaudit.policy.config import Settings
from apiaudit.report import FORMATS, render

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
FIXTURES = REPO / "fixtures"
PROVIDERS = FIXTURES / "providers"
CONSUMERS = FIXTURES / "consumers"
WRITE = os.environ.get("APIAUDIT_WRITE_GOLDEN") == "1"

# name -> (consumer, provider, rules dirs, model directory)
FIXTURE_SCANS: dict[str, tuple[Path, Path, tuple[Path, ...], Path | None]] = {
    "driver-engine_v2": (CONSUMERS / "driver" / "driver", PROVIDERS / "engine_v2" / "engine", (FIXTURES / "fixes" / "rules", PROVIDERS), None),
    "driver-engine_v1": (CONSUMERS / "driver" / "driver", PROVIDERS / "engine_v1" / "engine", (PROVIDERS,), None),
    "jobs-engine_v2": (CONSUMERS / "jobs", PROVIDERS / "engine_v2" / "engine", (PROVIDERS,), None),
    "protocol-engine_v2": (CONSUMERS / "protocol", PROVIDERS / "engine_v2" / "engine", (FIXTURES / "fixes" / "rules",), None),
    "compat-shim_v1": (CONSUMERS / "compat" / "compat", PROVIDERS / "shim_v1" / "shim", (PROVIDERS,), None),
    "compat-shim_v2": (CONSUMERS / "compat" / "compat", PROVIDERS / "shim_v2" / "shim", (PROVIDERS,), None),
    "compat-shim_v3": (CONSUMERS / "compat" / "compat", PROVIDERS / "shim_v3" / "shim", (PROVIDERS,), None),
    "capture-modelhub_v1": (CONSUMERS / "capture", PROVIDERS / "modelhub_v1" / "modelhub", (PROVIDERS,), FIXTURES / "models" / "hub-wrapper"),
    "capture-modelhub_v2": (CONSUMERS / "capture", PROVIDERS / "modelhub_v2" / "modelhub", (PROVIDERS,), None),
    "loaders-modelhub_v1": (CONSUMERS / "loaders", PROVIDERS / "modelhub_v1" / "modelhub", (PROVIDERS,), FIXTURES / "models" / "hub-wrapper"),
    "helpers-shim_v2": (CONSUMERS / "helpers" / "helpers", PROVIDERS / "shim_v2" / "shim", (PROVIDERS,), None),
    "honest-engine_v2": (CONSUMERS / "honest" / "honest", PROVIDERS / "engine_v2" / "engine", (PROVIDERS,), None),
    "deprecating-depprov": (CONSUMERS / "deprecating", PROVIDERS / "deprecating" / "depprov", (PROVIDERS,), None),
}  # fmt: skip
REAL_SCANS = [(c, p) for c in ("speculators==0.3.0", "speculators==0.4.0") for p in ("vllm==0.16.0", "vllm==0.20.0")]


# Where the checkout and the cache lie is written as one fixed path before rendering (a table
# wraps by the text's length, so the real path would move its line breaks), and that path as
# its name after (once escaped, as HTML and SARIF write it, a name in brackets would differ).
_REPO_PLACE, _CACHE_PLACE = "/repo-root", "/cache-root"


def _placed(value, places: dict[str, str]):
    """`value` (a report, or any part of one) with each path in `places` written as its place."""
    if type(value) is str:  # not a str-valued enum, which stays itself
        for path, name in places.items():
            value = value.replace(path, name)
        return value
    if isinstance(value, tuple):
        return tuple(_placed(item, places) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changed = {f.name: _placed(getattr(value, f.name), places) for f in dataclasses.fields(value) if f.init}
        return replace(value, **changed)
    return value


def _compare(name: str, report, cache: Path | None = None) -> None:
    report = replace(report, duration_s=0.0)  # the one field that differs between two runs
    places = {str(cache): _CACHE_PLACE} if cache is not None else {}
    report = _placed(report, {**places, str(REPO): _REPO_PLACE})
    for fmt in FORMATS:
        text = render(report, fmt, width=100, color=False, show_unresolved=True)
        text = text.replace(_REPO_PLACE, "<repo>").replace(_CACHE_PLACE, "<cache>")
        golden = GOLDEN / f"{name}.{fmt}"
        if WRITE:
            golden.write_text(text)
            continue
        assert text == golden.read_text(), f"{name} as {fmt} differs from {golden.name}"


@pytest.mark.parametrize("name", sorted(FIXTURE_SCANS))
def test_fixture_reports_are_unchanged(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    consumer, provider, rules, model = FIXTURE_SCANS[name]
    # Reports name a path consumer's files from the project root (here the working directory):
    # one that holds none of the fixtures keeps their import-root paths, wherever pytest runs.
    monkeypatch.chdir(tmp_path)
    report = scan(
        [str(consumer)], str(provider), rules_dirs=list(rules), cache_dir=None, use_index_cache=False,
        settings=Settings(), model=load_model(model) if model else None,
    )  # fmt: skip
    _compare(name, report)


@pytest.mark.network
@pytest.mark.parametrize(("consumer", "provider"), REAL_SCANS)
def test_real_wheel_reports_are_unchanged(consumer: str, provider: str, release_cache: Path):
    report = scan([consumer], provider, cache_dir=release_cache, settings=Settings())
    _compare(f"{consumer}-{provider}".replace("==", "-"), report, release_cache)
