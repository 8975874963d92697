"""The downstream list: bundled per provider, extended or replaced by the project's."""

from __future__ import annotations

import re

import pytest

from apiaudit.errors import ConfigError, InputError
from apiaudit.impact.downstream import downstreams, read_list
from apiaudit.policy.config import load_settings
from apiaudit.recipes.files import bundled_rules_dir, rule_files


def test_the_bundled_vllm_list_pins_every_entry():
    listed = downstreams(["vllm"])
    specs = [e.spec for e in listed]
    assert {"speculators", "trl", "lm-eval", "lighteval", "guidellm", "openrlhf", "lmcache", "hs-connectors",
            "arctic-inference", "vllm-spyre"} <= {s.split("==")[0] for s in specs}  # fmt: skip
    assert all(re.fullmatch(r"[a-z0-9][a-z0-9._-]*==[0-9][0-9a-z.]*", s) for s in specs), specs
    assert len(specs) == len(set(specs))


def test_a_downstream_list_is_never_loaded_as_rules():
    files = rule_files(bundled_rules_dir())
    assert files and not any(p.name.endswith(".downstream.toml") for p in files)
    from apiaudit.recipes.loader import load_rulebook

    assert load_rulebook([], "vllm").files  # the rules still load beside it


def test_a_given_file_extends_the_bundled_list_and_replace_bundled_replaces_it(tmp_path):
    extra = tmp_path / "mine.toml"
    extra.write_text('downstream = ["mypkg==1.0", {spec = "./consumer_dir", with-deps = true}]\n')
    listed = downstreams(["vllm"], files=[extra])
    assert listed[-2].spec == "mypkg==1.0" and listed[-1].with_deps is True
    assert listed[-1].spec == str((tmp_path / "consumer_dir").resolve())  # a path is relative to its file
    assert len(listed) > 2
    extra.write_text('replace-bundled = true\ndownstream = ["mypkg==1.0"]\n')
    assert [e.spec for e in downstreams(["vllm"], files=[extra])] == ["mypkg==1.0"]


def test_the_project_config_names_downstreams(tmp_path, monkeypatch):
    monkeypatch.delenv("APIAUDIT_CONFIG", raising=False)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.apiaudit.impact]\nreplace-bundled = true\ndownstream = [{spec = "speculators==0.3.0", with-deps = false}]\n'
    )
    settings = load_settings(tmp_path)
    listed = downstreams(["vllm"], settings=settings)
    assert [(e.spec, e.with_deps) for e in listed] == [("speculators==0.3.0", False)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('downstream = "x==1"\n', "downstream: must be an array"),
        ('downstream = [{spec = "x==1", deps = true}]\n', "downstream[0]: unknown key 'deps' (did you mean 'with-deps'?)"),
        ('downstream = [{with-deps = true}]\n', "downstream[0]: 'spec' is required"),
        ('replace-bundled = "yes"\n', "replace-bundled: must be true or false"),
        ('downstreams = []\n', "unknown key 'downstreams'"),
    ],
)
def test_a_bad_list_is_one_line_naming_the_key(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(message)):
        read_list(path)


def test_no_downstream_at_all_is_bad_input(tmp_path):
    with pytest.raises(InputError, match="no downstream to check for lonelylib"):
        downstreams(["lonelylib"])


def test_apiaudit_config_shows_the_impact_list(tmp_path, monkeypatch):
    import json

    from click.testing import CliRunner

    from apiaudit.cli.group import cli

    monkeypatch.delenv("APIAUDIT_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.apiaudit.impact]\ndownstream = [{spec = "trl==1.2.0", with-deps = true}]\n')
    outcome = CliRunner().invoke(cli, ["config", "--json"])
    assert outcome.exit_code == 0, outcome.output
    shown = json.loads(outcome.stdout)["settings"]["impact"]
    assert shown["value"] == {"downstream": [{"spec": "trl==1.2.0", "with-deps": True}], "replace-bundled": False}
    table = CliRunner().invoke(cli, ["config"]).stdout
    assert any(line.split()[:2] == ["impact", "trl==1.2.0"] for line in table.splitlines())
