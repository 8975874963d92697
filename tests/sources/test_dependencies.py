"""Where the coupling went (issue 25): a consumer's declared dependencies that import the provider."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from apiaudit.infra.progress import NullProgress
from apiaudit.sources.base import CodeTree
from apiaudit.sources.dependencies import declared, provider_dependencies, uses_provider

COUPLED = Path(__file__).resolve().parents[2] / "fixtures" / "consumers" / "coupled"
PROVIDER = CodeTree("hostlib", "2.0.0", Path(__file__).resolve().parents[2] / "fixtures" / "providers" / "hostlib_v2", ("hostlib",), kind="path")
LEAN = CodeTree("lean", "1.0", COUPLED / "release", ("lean",), kind="release")
BRIDGE = CodeTree("bridge", "2.0", COUPLED / "plugin_dep", ("bridge",), kind="release")
HELPER = CodeTree("helperlib", "1.3", COUPLED / "plain_dep", ("helperlib",), kind="release")


def test_an_import_of_the_provider_is_found_by_its_text_and_a_string_naming_it_is_not():
    assert uses_provider(BRIDGE, ("hostlib",))
    assert not uses_provider(HELPER, ("hostlib",))
    assert not uses_provider(LEAN, ("hostlib",))


def test_the_declared_requirements_come_from_the_dist_info():
    assert declared(LEAN) == ["bridge==2.0", "helperlib>=1.0", 'hostlib-extra>=1; extra == "dev"', "toolkit"]


def test_a_pinned_dependency_that_imports_the_provider_is_audited_and_the_rest_said(tmp_path):
    fetched: list[str] = []

    def resolve(spec: str) -> CodeTree:
        fetched.append(spec)
        return {"bridge==2.0": BRIDGE, "helperlib==1.3": HELPER}[spec]

    versions = {"helperlib": ["0.9", "1.2", "1.3", "2.0rc1"]}
    deps, notices = provider_dependencies(LEAN, PROVIDER, resolve=resolve, versions=versions.__getitem__, cache_dir=tmp_path)
    assert [(d.spec, d.requirement, d.consumer) for d in deps] == [("bridge==2.0", "bridge==2.0", "lean 1.0")]
    assert sorted(fetched) == ["bridge==2.0", "helperlib==1.3"]  # the extra's requirement is not followed
    assert notices == ["lean 1.0 requires toolkit: no release of it could be chosen to check for hostlib imports"]

    def never(spec: str) -> CodeTree:
        raise AssertionError("the answer for a release is cached")

    again, _ = provider_dependencies(LEAN, PROVIDER, resolve=never, versions=versions.__getitem__, cache_dir=tmp_path)
    assert again == deps


def test_a_dependency_that_cannot_be_read_is_a_notice_not_a_failure(tmp_path):
    def broken(spec: str) -> CodeTree:
        raise OSError("no route to the index")

    deps, notices = provider_dependencies(LEAN, PROVIDER, resolve=broken, versions=lambda name: ["1.0"], cache_dir=tmp_path)
    assert deps == []
    assert notices[0] == "lean 1.0 requires bridge==2.0: bridge==2.0 could not be read (no route to the index)"


@pytest.mark.network
def test_speculators_0_9_names_and_audits_its_hs_connectors(release_cache):
    from apiaudit.audit import scan
    from apiaudit.policy.config import Settings

    report = scan(["speculators==0.9.0"], "vllm==0.33.0", cache_dir=release_cache, settings=Settings())
    assert [(c.name, c.version) for c in report.consumers] == [("speculators", "0.9.0"), ("hs-connectors", "0.9.0")]
    assert report.notices == (
        "hs-connectors 0.9.0 audited too: speculators 0.9.0 imports nothing from vllm itself; it requires "
        "hs-connectors==0.9.0, which imports vllm",
    )


def test_offline_a_dependency_not_cached_is_said_never_fetched(tmp_path, monkeypatch):
    from apiaudit import audit, sources
    from apiaudit.infra.progress import NullProgress

    def no_fetch(*args, **kwargs):
        raise AssertionError("offline: nothing is fetched or listed")

    monkeypatch.setattr(sources, "release_versions", no_fetch)
    deps, notices = audit._dependencies([LEAN], PROVIDER, True, tmp_path, NullProgress(), offline=True)
    assert deps == []
    assert notices[0].startswith("lean 1.0 requires bridge==2.0: bridge==2.0 could not be read (")
    assert any("helperlib>=1.0: no release of it could be chosen" in n for n in notices)


class _Steps(NullProgress):
    """What a run says, kept."""

    def __init__(self) -> None:
        self.said: list[str] = []

    def step(self, message: str) -> None:
        self.said.append(message)


def test_the_requirements_are_fetched_at_once_each_saying_why_and_a_warm_run_asks_nothing(tmp_path):
    # Both fetches must be under way together: each waits for the other at the barrier (one at a
    # time, the first would wait alone and fail).
    together = threading.Barrier(2, timeout=30)

    def resolve(spec: str) -> CodeTree:
        together.wait()
        return {"bridge==2.0": BRIDGE, "helperlib==1.3": HELPER}[spec]

    steps = _Steps()
    versions = {"helperlib": ["1.3"], "toolkit": ["4.0"]}
    lean = CodeTree("lean", "1.0", COUPLED / "release", ("lean",), kind="release")
    deps, notices = provider_dependencies(
        lean, PROVIDER, resolve=lambda spec: resolve(spec) if spec != "toolkit==4.0" else HELPER,
        versions=versions.__getitem__, cache_dir=tmp_path, progress=steps,
    )  # fmt: skip
    assert [d.spec for d in deps] == ["bridge==2.0"] and notices == []
    assert sorted(steps.said) == [
        "checking whether bridge==2.0 imports hostlib (lean 1.0 requires bridge==2.0)",
        "checking whether helperlib==1.3 imports hostlib (lean 1.0 requires helperlib>=1.0)",
        "checking whether toolkit==4.0 imports hostlib (lean 1.0 requires toolkit)",
    ]

    def never(*args):
        raise AssertionError("a warm run asks neither for a release nor for a release list")

    warm = _Steps()
    again = provider_dependencies(lean, PROVIDER, resolve=never, versions=never, cache_dir=tmp_path, progress=warm)
    assert again == (deps, []) and warm.said == []


def test_the_providers_requirement_names_parse_once_a_process():
    from apiaudit.sources.dependencies import _requirement_names

    lines = ("Torch>=2.0", "not a requirement ((", "numpy; python_version < '4'")
    _requirement_names.cache_clear()
    assert _requirement_names(lines) == {"torch", "numpy"}
    _requirement_names(lines)
    assert _requirement_names.cache_info().hits == 1  # the next downstream's scan against the same provider
