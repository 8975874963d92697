"""Config: found upwards, every key validated with one line, CLI over file, `apiaudit config` says where from."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pytest
from policy_helpers import run, validate_report, write_config

from apiaudit.errors import InputError
from apiaudit.policy.config import KEYS, find_config, load_settings

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_found_from_a_subdirectory_and_paths_are_relative_to_the_file(project):
    write_config(project, 'consumers = ["jobs"]\nprovider = "prov/tinyprov"\n')
    sub = project / "jobs" / "deeper"
    sub.mkdir()
    settings = load_settings(sub)
    assert settings.file == project / "pyproject.toml"
    assert settings.consumers == (str(project / "jobs"),)
    assert settings.provider == str(project / "prov" / "tinyprov")


def test_apiaudit_toml_wins_and_a_pyproject_without_the_table_is_passed_by(project):
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert find_config(project) is None
    write_config(project, 'fail-on = "warning"\n', name="apiaudit.toml")
    assert load_settings(project).fail_on == "warning"


def test_config_feeds_scan_and_the_command_line_wins(project):
    write_config(project, 'consumers = ["jobs"]\nprovider = "prov/tinyprov"\nfail-on = "never"\n')
    code, out = run("scan", "--format", "json")
    assert code == 0  # fail-on = never from the file
    assert {f["param"] for f in json.loads(out)["findings"]} == {"c", "y"}
    code, _ = run("scan", "--format", "json", "--fail-on", "error")
    assert code == 1  # the flag wins


@pytest.mark.parametrize(
    "body, expected",
    [
        ("selct = []\n", r"unknown key 'selct' \(did you mean 'select'\?\)$"),
        ("zzz = []\n", r"unknown key 'zzz' \(known: consumers, provider"),
        ('[[tool.apiaudit.ignores]]\nrule = "x"\nreason = "r"\npaht = "a.py"\n', r"ignores\[0\]: unknown key 'paht' \(did you mean 'path'\?\)$"),
        ('fail-on = "sometimes"\n', r"fail-on: 'sometimes' is not one of error, warning, info, never"),
        ("offline = 1\n", r"offline: must be true or false"),
        ('[tool.apiaudit.severity]\nunexpected-keyword = "loud"\n', r"severity.unexpected-keyword: 'loud' is not one of error, warning, info, off"),
        ('ignore = ["Not A Rule"]\n', r"ignore: 'Not A Rule' is not a rule id"),
        ('[[tool.apiaudit.ignores]]\nrule = "unexpected-keyword"\n', r"ignores\[0\]: 'reason' is required"),
        ('[[tool.apiaudit.ignores]]\nrule = "unexpected-keyword"\nreason = "r"\nuntil = "soon"\n', r"ignores\[0\].until: 'soon' is not a date"),
        ("consumers = [1]\n", r"consumers: must be a string or a list of non-empty strings"),
        ("fail-on = \n", r"not valid TOML"),
    ],
)
def test_bad_config_is_one_line_naming_file_and_key(project, body, expected):
    write_config(project, body)
    code, out = run("config")
    assert code == 2
    lines = out.strip().splitlines()
    assert len(lines) == 1 and "pyproject.toml" in lines[0], out
    assert re.search(expected, lines[0]), lines[0]


def test_an_unknown_rule_id_is_refused_once_the_provider_is_known(project):
    write_config(project, 'consumers = ["jobs"]\nprovider = "prov/tinyprov"\nselect = ["no-such-rule"]\n')
    code, out = run("scan", "--format", "json")
    assert code == 2 and "select: unknown rule id 'no-such-rule' (`apiaudit rule` lists them)" in out and "pyproject.toml" in out


def test_a_mistyped_rule_id_in_ignore_says_which_was_meant(project):
    write_config(project, 'consumers = ["jobs"]\nprovider = "prov/tinyprov"\nignore = ["unexpected-keywrd"]\n')
    code, out = run("scan", "--format", "json")
    assert code == 2 and "ignore: unknown rule id 'unexpected-keywrd' (did you mean 'unexpected-keyword'?)" in out


def test_config_command_prints_each_value_and_where_it_came_from(project):
    path = write_config(project, 'provider = "prov/tinyprov"\nfail-on = "warning"\n')
    code, out = run("config", "--fail-on", "info", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["settings"]["cache-dir"]["from"] == "$APIAUDIT_CACHE_DIR"
    assert doc["file"] == str(path)
    assert doc["settings"]["fail-on"] == {"value": "info", "from": "command line"}
    assert doc["settings"]["provider"]["from"] == str(path)
    assert doc["settings"]["select"] == {"value": None, "from": "default"}  # every rule
    assert set(doc["settings"]) == set(KEYS)
    code, out = run("config")
    assert code == 0 and re.search(r"fail-on\s+warning\s+\[.*pyproject.toml\]", out)


def test_config_json_gives_values_not_display_strings(project):
    write_config(project, """\
        ignore = ["cannot-judge"]
        baseline = "base.json"
        [tool.apiaudit.severity]
        unexpected-keyword = "warning"
        [[tool.apiaudit.ignores]]
        rule = "unexpected-keyword"
        reason = "pinned"
        until = 2027-01-01
    """)
    code, out = run("config", "--json")
    assert code == 0
    settings = {key: entry["value"] for key, entry in json.loads(out)["settings"].items()}
    assert settings["ignore"] == ["cannot-judge"] and settings["exclude"] == [] and settings["rules"] == []
    assert settings["severity"] == {"unexpected-keyword": "warning"}
    assert settings["offline"] is False and settings["select"] is None
    assert settings["baseline"] == str(project / "base.json")
    assert settings["ignores"] == [
        {"rule": "unexpected-keyword", "reason": "pinned", "path": None, "callee": None, "param": None, "until": "2027-01-01"}
    ]


def test_config_command_prints_the_value_in_force_for_a_default(project, monkeypatch):
    monkeypatch.delenv("APIAUDIT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(project / "xdg"))
    code, out = run("config", "--json")
    assert code == 0
    settings = json.loads(out)["settings"]
    assert settings["cache-dir"] == {"value": str(project / "xdg" / "apiaudit"), "from": "default"}
    assert settings["fail-on"] == {"value": "error", "from": "default"}
    assert settings["provider"] == {"value": "vllm", "from": "default"}  # the bundled rules' default
    assert settings["consumers"] == {"value": ["speculators"], "from": "default"}
    assert "-" not in [entry["value"] for entry in settings.values()]
    code, out = run("config")
    assert re.search(rf"cache-dir\s+{re.escape(str(project / 'xdg' / 'apiaudit'))}\s+\[default\]", out), out


def test_explicit_config_file_and_none(project, monkeypatch):
    other = write_config(project / "jobs", 'fail-on = "info"\n', name="apiaudit.toml")
    monkeypatch.setenv("APIAUDIT_CONFIG", str(other))
    assert load_settings().fail_on == "info"
    monkeypatch.setenv("APIAUDIT_CONFIG", "none")
    assert load_settings().file is None
    monkeypatch.setenv("APIAUDIT_CONFIG", str(project / "missing.toml"))
    with pytest.raises(InputError, match="no such file"):
        load_settings()


def test_severity_override_select_ignore_and_exclude(project):
    write_config(project, """\
        consumers = ["jobs"]
        provider = "prov/tinyprov"
        [tool.apiaudit.severity]
        unexpected-keyword = "warning"
    """)
    code, out = run("scan", "--format", "json")
    doc = validate_report(json.loads(out))
    assert code == 0 and {f["severity"] for f in doc["findings"]} == {"warning"}
    write_config(project, 'consumers = ["jobs"]\nprovider = "prov/tinyprov"\nignore = ["unexpected-keyword"]\n')
    code, out = run("scan", "--format", "json")
    doc = validate_report(json.loads(out))
    assert code == 0 and doc["findings"] == [] and doc["summary"]["suppressed"] == 2
    assert {s["by"] for s in doc["suppressed"]} == {"disabled"}
    (project / "jobs" / "skipped").mkdir()
    (project / "jobs" / "skipped" / "x.py").write_text("from tinyprov import gone\n")
    (project / "jobs" / "good.py").write_text("from tinyprov import make\nmake(1, b=2)\n")
    write_config(project, 'consumers = ["jobs"]\nprovider = "prov/tinyprov"\nexclude = ["bad.py", "skipped/"]\n'
                 'select = ["import-missing"]\n')
    code, out = run("scan", "--format", "json")
    doc = validate_report(json.loads(out))
    assert code == 0 and doc["findings"] == [] and doc["suppressed"] == []  # excluded files are not read at all
    assert doc["summary"]["files_scanned"] == 1


def test_config_ignores_with_reason_and_an_expired_until(project):
    tomorrow = dt.date.today() + dt.timedelta(days=1)
    write_config(project, f"""\
        consumers = ["jobs"]
        provider = "prov/tinyprov"
        [[tool.apiaudit.ignores]]
        rule = "unexpected-keyword"
        param = "c"
        reason = "make() takes c again in the next release"
        until = {tomorrow.isoformat()}
        [[tool.apiaudit.ignores]]
        rule = "unexpected-keyword"
        callee = "tinyprov"
        param = "y"
        reason = "old"
        until = 2020-01-01
    """)
    code, out = run("scan", "--format", "json")
    doc = validate_report(json.loads(out))
    assert code == 1
    assert [f["param"] for f in doc["findings"]] == ["y"]  # the expired entry no longer applies
    assert [(s["by"], s["reason"], s["finding"]["param"]) for s in doc["suppressed"]] == [
        ("config", "make() takes c again in the next release", "c")
    ]
    assert len(doc["notices"]) == 1 and "expired on 2020-01-01" in doc["notices"][0]


def test_every_key_is_documented():
    text = (DOCS / "config.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([a-z-]+)` \|", text, re.M))
    assert set(KEYS) <= documented, sorted(set(KEYS) - documented)
