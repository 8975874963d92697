"""What one scan covers: every consumer told apart, a subpackage in its package, and never green on nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from apiaudit.audit import scan
from apiaudit.errors import InputError


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    provider = tmp_path / "prov" / "eng"
    provider.mkdir(parents=True)
    (provider / "__init__.py").write_text("class Worker:\n    def ping(self):\n        pass\n\ndef make(a, *, b):\n    return a\n")
    app = tmp_path / "one" / "app"
    (app / "ext").mkdir(parents=True)
    (app / "__init__.py").write_text("")
    (app / "ext" / "__init__.py").write_text("")
    # The subpackage imports its sibling by its full name, as Python names it.
    (app / "ext" / "calls.py").write_text("from app.ext import helpers\nfrom eng import make\nmake(1, c=2)\n")
    (app / "ext" / "helpers.py").write_text("X = 1\n")
    return provider, app


def test_two_consumers_of_one_name_are_told_apart(tmp_path):
    provider, app = _tree(tmp_path)
    twin = tmp_path / "two" / "app"
    twin.mkdir(parents=True)
    (twin / "__init__.py").write_text("from eng import make\nmake(2)\n")
    report = scan([str(app), str(twin)], str(provider), cache_dir=tmp_path / "cache")
    keys = {c.key for c in report.consumers}
    assert len(keys) == 2 and all(k.startswith("app (") for k in keys)
    assert {f.consumer for f in report.findings} == keys


def test_a_subpackage_is_scanned_inside_its_package(tmp_path):
    provider, app = _tree(tmp_path)
    report = scan([str(app / "ext")], str(provider), cache_dir=tmp_path / "cache")
    assert {f.path for f in report.findings} == {"app/ext/calls.py"}
    assert report.files_scanned == 3  # ext/__init__, calls, helpers: not app/__init__


def test_counts_cover_every_use_checked(tmp_path):
    provider, app = _tree(tmp_path)
    report = scan([str(app)], str(provider), cache_dir=tmp_path / "cache")
    errors = [f for f in report.findings if f.severity.value == "error"]
    assert report.calls_checked >= len(errors) > 0


def test_nothing_to_check_is_bad_input_not_green(tmp_path):
    provider, _app = _tree(tmp_path)
    lone = tmp_path / "lone.py"
    lone.write_text("import json\nprint(json.dumps({}))\n")
    with pytest.raises(InputError, match="never uses eng"):
        scan([str(lone)], str(provider), cache_dir=tmp_path / "cache")


@pytest.mark.runner
def test_job_scripts_without_provider_go_against_the_library_they_call(tmp_path):
    # As `preflight` does: a job script is checked against the rules' default consumer
    # (speculators), not against the provider the rules describe (vLLM).
    pytest.importorskip("speculators")
    job = Path(__file__).resolve().parent.parent / "fixtures" / "runner" / "jobs" / "current_job.py"
    report = scan([str(job)], None, cache_dir=tmp_path / "cache")
    assert report.provider.name == "speculators"


# --- a job file whose only coupling is a provider command line needs no library ---------------

JOB = "#!/bin/bash\nvllm serve meta-llama/Llama-3.1-8B --max-model-len 4096 --no-such-flag\n"


def _no_library(monkeypatch):
    from apiaudit import audit

    def library(*args):
        raise AssertionError("a launch-only job needs no library to check it against")

    monkeypatch.setattr(audit, "default_script_provider", library)


def test_a_launch_only_job_without_its_provider_here_says_which_provider_to_give(tmp_path, monkeypatch):
    from apiaudit import audit

    _no_library(monkeypatch)
    monkeypatch.setattr(audit, "default_launch_provider", lambda rules_dirs=(): "surely-not-installed-provider")
    job = tmp_path / "job.sh"
    job.write_text(JOB)
    with pytest.raises(InputError, match=r"job\.sh: the command lines in it start surely-not-installed-provider, which is not "
                                         r'installed .*: pass provider="surely-not-installed-provider==VERSION"'):  # fmt: skip
        scan([str(job)], None, cache_dir=tmp_path / "cache")


@pytest.mark.network
def test_a_launch_only_job_is_audited_against_the_installed_provider_or_the_configs(tmp_path, monkeypatch, release_cache):
    import importlib

    from apiaudit import sources
    from apiaudit.policy.config import Settings

    _no_library(monkeypatch)
    job = tmp_path / "job.sh"
    job.write_text(JOB)
    vllm = sources.resolve("vllm==0.17.0", cache_dir=release_cache)
    for settings, installed in ((Settings(provider="vllm==0.17.0"), False), (Settings(), True)):
        if installed:  # the release's files and dist-info on the path: vLLM 0.17.0 as an installed distribution
            monkeypatch.syspath_prepend(str(vllm.root))
            importlib.invalidate_caches()
        report = scan([str(job)], None, cache_dir=release_cache, settings=settings)
        assert (report.provider.name, report.provider.version) == ("vllm", "0.17.0")
        assert report.provider.kind == ("installed" if installed else "release")
        assert [(f.rule, f.line) for f in report.findings] == [("launch-flag-unknown", 2)]
