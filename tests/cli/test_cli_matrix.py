"""Bad input to matrix and explain: one clear line on stderr, exit 2, never a traceback."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from apiaudit.cli.group import cli


def _run(args, **env):
    outcome = CliRunner().invoke(cli, [*args, "--no-progress"], env=env or None)
    lines = outcome.stderr.strip().splitlines()
    return outcome.exit_code, lines


def test_an_empty_range_is_one_line():
    code, lines = _run(["matrix", "--consumer", "speculators==0.4.0", "--provider", "vllm>=0.20,<0.11"])
    assert code == 2 and len(lines) == 1 and "is empty" in lines[0]


def test_a_missing_provider_range_is_one_line():
    code, lines = _run(["matrix", "--consumer", "speculators==0.4.0"])
    assert code == 2 and len(lines) == 1 and "--provider" in lines[0]


def test_explain_needs_one_release():
    code, lines = _run(["explain", "--consumer", "speculators==0.3.0", "--provider", "vllm>=0.11"])
    assert code == 2 and len(lines) == 1 and "NAME==VERSION" in lines[0]


def test_no_network_is_one_line(monkeypatch, tmp_path):
    # Nothing listens on port 9 of localhost: pip cannot reach any index.
    for key, value in {"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": "",
                       "PIP_CONFIG_FILE": "/dev/null", "PIP_RETRIES": "0", "PIP_DEFAULT_TIMEOUT": "2"}.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    job = tmp_path / "job.py"  # a consumer that is there: the index is the first thing asked
    job.write_text("import vllm\n")
    code, lines = _run(["matrix", "--consumer", str(job), "--provider", "vllm>=0.11,<=0.12", "--cache-dir", str(tmp_path)])
    assert code == 2 and lines == ["apiaudit: error: could not reach the package index to list the releases of vllm"]


@pytest.mark.network
def test_a_range_with_no_release_on_the_index_is_one_line(release_cache):
    code, lines = _run(["matrix", "--consumer", "speculators==0.4.0", "--provider", "vllm>=999", "--cache-dir", str(release_cache)])
    assert code == 2 and len(lines) == 1 and "no release of vllm on the package index falls in vllm>=999" in lines[0]


@pytest.mark.parametrize(("command", "name"), [("matrix", "m.sarif"), ("matrix", "m.xml"), ("explain", "e.sarif")])
def test_an_output_name_the_command_cannot_write_is_refused_before_any_work(tmp_path, command, name):
    # A .sarif file holding JSON would be a lie; no release is listed or fetched first (nothing listens on port 9).
    provider = "vllm>=0.11,<=0.12" if command == "matrix" else "vllm==0.12.0"
    out = tmp_path / name
    code, lines = _run([command, "--consumer", str(tmp_path), "--provider", provider, "--cache-dir", str(tmp_path),
                        "-o", str(out)], PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_CONFIG_FILE="/dev/null")  # fmt: skip
    assert code == 2 and len(lines) == 1, lines
    assert f"-o {out}: a {out.suffix} file is " in lines[0] and "this command does not write (it writes table, json)" in lines[0]
    assert not out.exists()
