"""[[launch]] and [[launch_registry]]: the provider's command line as validated rule data."""

from __future__ import annotations

from pathlib import Path

import pytest

from apiaudit.errors import InputError
from apiaudit.recipes import load_rule_file, load_rulebook
from apiaudit.recipes.records import LaunchCommand

LAUNCH = """
[provider]
name = "demo"

[[launch]]
name = "server"
commands = [{ script = "demo", module = "demo.cli", subcommand = "serve" }, { module = "demo.server" }]
parsers = ["demo.cli.make_parser"]
"""


def _load(tmp_path: Path, body: str):
    path = tmp_path / "demo.toml"
    path.write_text(body)
    return load_rule_file(path)


def test_the_bundled_vllm_rules_describe_its_server():
    book = load_rulebook([], "vllm")
    (launch,) = book.launches
    assert launch.commands[0] == LaunchCommand("vllm.entrypoints.cli.main", "vllm", "serve")
    assert launch.commands[0].text == "vllm serve"
    assert launch.commands[1].text == "python -m vllm.entrypoints.openai.api_server"
    assert (launch.underscores, launch.dotted_keys, launch.short_options) == (True, True, (("-O", "--optimization-level"),))
    (registry,) = book.launch_registries
    assert (registry.key, registry.call, registry.plugin_key) == ("kv_connector", "register_connector", "kv_connector_module_path")
    assert book.applicable("0.33.0").launches == book.launches  # not versioned


def test_a_minimal_launch_rule_loads(tmp_path):
    (launch,) = _load(tmp_path, LAUNCH).launches
    assert launch.field_kwargs is None and launch.plugin_hooks == () and not launch.underscores


@pytest.mark.parametrize(
    "extra, problem",
    [
        ('bogus = 1\n', "launch [1]: unknown key 'bogus'"),
        ('json_flags = { "spec" = "demo.Spec" }\n', "'json_flags' must be a table"),
        ('short_options = { "-O" = "opt" }\n', "'short_options' must be a table"),
        ('underscores = "yes"\n', "'underscores' must be true or false"),
        ('plugin_hooks = ["a.b"]\n', "'plugin_hooks' item 'a.b' is not a function name"),
    ],
)
def test_each_problem_names_the_entry(tmp_path, extra, problem):
    with pytest.raises(InputError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        _load(tmp_path, LAUNCH + extra)


@pytest.mark.parametrize(
    "body, problem",
    [
        (LAUNCH.replace('{ module = "demo.server" }', '{ script = "x" }'), "'commands' item 2 needs 'module'"),
        (LAUNCH.replace('{ module = "demo.server" }', '{ module = "demo.server", sub = "x" }'), "'commands' item 2: unknown key 'sub'"),
        (LAUNCH.replace('parsers = ["demo.cli.make_parser"]', "parsers = []"), "'parsers' is empty"),
        (LAUNCH + LAUNCH.split("[provider]\nname = \"demo\"\n")[1], "launch 'server' [2]: duplicate launch name"),
        (LAUNCH + '\n[[launch_registry]]\nconfig = "demo.C"\nkey = "k"\nmodule = "demo.f"\ncall = "reg"\n', "missing key 'what'"),
        (LAUNCH + '\n[[launch_registry]]\nconfig = "demo.C"\nkey = "k"\nmodule = "demo.f"\ncall = "reg"\nwhat = "w"\nname_arg = -1\n',
         "'name_arg' must be a non-negative integer"),
    ],
)
def test_commands_and_registries_are_validated(tmp_path, body, problem):
    with pytest.raises(InputError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        _load(tmp_path, body)
