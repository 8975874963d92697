"""Bad input in the caller's terms: the command line's options, or the Python API's parameters."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import apiaudit
from apiaudit.cli.group import cli
from apiaudit.infra.callers import in_python_terms, on_command_line, python_api

REPO = Path(__file__).resolve().parents[2]
ENGINE = str(REPO / "fixtures" / "providers" / "engine_v2" / "engine")


@pytest.mark.parametrize(
    ("message", "python"),
    [
        ("pass --stack-provider vllm==VERSION --consumer speculators==VERSION",
         'pass stack_provider="vllm==VERSION" consumers=["speculators==VERSION"]'),
        ("no --provider given: pass --provider and --consumer", "no provider= given: pass provider= and consumers="),
        ("pass --consumer/--provider x==VERSION or a path", 'pass consumers=["x==VERSION"]/provider="x==VERSION" or a path'),
        ("--offline fetches nothing; --rules DIR", 'offline=True fetches nothing; rules_dirs=["DIR"]'),
        ("give the range, e.g. --provider 'vllm>=0.11,<=0.17'", 'give the range, e.g. provider="vllm>=0.11,<=0.17"'),
        # A command to type is kept; an option the API has no parameter for is left as it is.
        ("run `apiaudit matrix --provider 'vllm>=0.16'` or --write-baseline", "run `apiaudit matrix --provider 'vllm>=0.16'` or --write-baseline"),
    ],
)  # fmt: skip
def test_options_are_written_as_the_apis_parameters(message: str, python: str) -> None:
    assert in_python_terms(message) == python


def test_the_command_line_keeps_its_options() -> None:
    @python_api
    def fails() -> None:
        raise apiaudit.ArgumentError("pass --consumer")

    with pytest.raises(apiaudit.ArgumentError, match="^pass consumers=$"):
        fails()
    with on_command_line(), pytest.raises(apiaudit.ArgumentError, match="^pass --consumer$"):
        fails()


def test_a_python_caller_reads_its_parameters_and_the_cli_its_options(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(REPO)
    job = tmp_path / "job.py"
    job.write_text("x = 1\n")
    with pytest.raises(apiaudit.ArgumentError) as raised:
        apiaudit.scan([str(job)], ENGINE, cache_dir=tmp_path / "cache")
    assert str(raised.value).endswith("nothing to check; is provider= right?")
    assert isinstance(raised.value, apiaudit.ProviderUnusedError)  # its own kind: `impact` tells it from unreadable
    result = CliRunner().invoke(cli, ["scan", "--consumer", str(job), "--provider", ENGINE, "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 2 and result.output.rstrip().endswith("nothing to check; is --provider right?")


def test_each_kind_of_bad_input_is_its_own_public_class(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(REPO)
    with pytest.raises(apiaudit.NotFoundError, match="^no such file or directory: no/such/dir$"):
        apiaudit.scan(["no/such/dir"], ENGINE, cache_dir=tmp_path / "cache")
    (tmp_path / "job.py").write_text("import vllm\n")
    with pytest.raises(apiaudit.ArgumentError, match="`apiaudit matrix --provider 'vllm>=0.16' --consumer ...`$"):
        apiaudit.scan([str(tmp_path / "job.py")], "vllm>=0.16", cache_dir=tmp_path / "cache")
    (tmp_path / "pyproject.toml").write_text("[tool.apiaudit]\nselct = []\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(apiaudit.ConfigError, match="unknown key 'selct'"):
        apiaudit.scan(["job.py"], ENGINE)
    (tmp_path / "pyproject.toml").unlink()
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "bad.toml").write_text("[provider]\n")
    with pytest.raises(apiaudit.RulesError, match="bad.toml"):
        apiaudit.scan(["job.py"], ENGINE, rules_dirs=[tmp_path / "rules"], cache_dir=tmp_path / "cache")
    assert issubclass(apiaudit.NotInstalledError, apiaudit.NotFoundError)
    for kind in (apiaudit.ArgumentError, apiaudit.NotFoundError, apiaudit.NetworkError, apiaudit.ConfigError, apiaudit.RulesError, apiaudit.CacheError):
        assert issubclass(kind, apiaudit.InputError) and issubclass(kind, apiaudit.Error)
