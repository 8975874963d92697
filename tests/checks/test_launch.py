"""The launch audit against the fixture provider `launcher` (1.0 -> 2.0 drops --swap-space, the
"ngram" method, SpecConfig.num_tokens, the SharedConnector registration and launcher.api_server):
exact findings for the job files in fixtures/consumers/launch_jobs/, and each spelling the
parser accepts."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from apiaudit.audit import audit_launch, scan
from apiaudit.engine import check_launch, launch_target
from apiaudit.errors import InputError
from apiaudit.provider.cache import open_index
from apiaudit.recipes.loader import load_rulebook
from apiaudit.sources.local import resolve_path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PROVIDERS = FIXTURES / "providers"
JOBS = FIXTURES / "consumers" / "launch_jobs"

BOTH = {
    ("launch-config-key-unknown", "serve.toml", 4, "draft.layerz"),  # DraftConfig has no layerz (nested config)
    ("cannot-judge", "start_server.py", 18, "--transfer-config"),  # json.dumps(build_transfer()): run time
    ("launch-flag-unknown", "start_server.py", 20, "--unknown-flag"),
    ("launch-flag-unknown", "start_server.py", 30, "--en"),  # abbreviates --enable-docs and --enforce-eager
}
EXPECTED = {
    "v1": BOTH,
    "v2": BOTH
    | {
        ("launch-flag-unknown", "serve.sh", 6, "--swap-space"),  # written --swap_space
        ("launch-config-value-unknown", "serve.sh", 7, "method"),  # "ngram", through -sc
        ("launch-config-key-unknown", "serve.sh", 7, "num_tokens"),
        ("launch-config-value-unknown", "serve.sh", 8, "connector"),  # SharedConnector
        ("launch-entry-unknown", "serve.yaml", 3, "launcher.api_server"),
        ("launch-config-key-unknown", "serve.yaml", 3, "num_tokens"),
        ("launch-config-key-unknown", "start_server.py", 12, "num_tokens"),  # the dict display's line
    },
}


def provider(version: str) -> str:
    return str(PROVIDERS / f"launcher_{version}" / "launcher")


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_fixture_job_files_exact_findings(version):
    report = scan([str(JOBS)], provider(version), rules_dirs=[PROVIDERS], use_index_cache=False)
    assert {(f.rule, f.path, f.line, f.param) for f in report.findings} == EXPECTED[version]
    assert report.files_scanned == 4
    assert report.calls_checked == 7  # one per command line: what there was to check


def test_findings_say_what_the_release_has():
    report = scan([str(JOBS)], provider("v2"), rules_dirs=[PROVIDERS], use_index_cache=False)
    by_key = {(f.path, f.param): f for f in report.findings}
    swap = by_key[("serve.sh", "--swap-space")]
    assert swap.message == "`launch serve` on launcher 2.0.0 has no flag --swap-space"
    assert (swap.callee, swap.provider_location, swap.column) == ("launcher.server.make_parser", "launcher/server.py:23", 2)
    assert "plugins may add flags (launcher/server.py:28)" in (swap.advice or "")
    method = by_key[("serve.sh", "method")]
    assert method.facts.value == "ngram" and method.facts.known == ("draft", "eagle")
    assert method.callee == "launcher.config.SpecConfig" and method.facts.flag == "-sc"
    key = by_key[("serve.yaml", "num_tokens")]
    assert key.facts.known == ("num_speculative_tokens",) and "num_speculative_tokens" in key.advice
    connector = by_key[("serve.sh", "connector")]
    assert connector.message == '--transfer-config names connector "SharedConnector", which launcher 2.0.0 does not register'
    assert connector.facts.known == ("FileConnector",)
    assert by_key[("start_server.py", "--transfer-config")].severity.value == "info"


def target(version: str, rules_dirs=(PROVIDERS,)):
    tree = resolve_path(provider(version))
    book = load_rulebook(list(rules_dirs), "launcher")
    return launch_target(tree, book, lambda: open_index(tree, None))


def audit(argv: str, version: str = "v2"):
    import shlex

    return [(f.rule, f.param) for f in check_launch(target(version), shlex.split(argv)).findings]


@pytest.mark.parametrize(
    "argv",
    [
        "launch serve m --port=8000 --enable-docs --no-enable-docs --no-enforce-eager --api_workers 2",
        "launch serve m -O3 -O=2 -O 1 --opt-level 1 --host 0.0.0.0 -h",
        "launch serve m --spec-config.method eagle --spec-config.draft.layers 3 --spec_config.num_speculative_tokens 2",
        "launch serve m -sc '{\"method\": \"draft\"}' --transfer-config='{\"connector\": \"FileConnector\"}'",
        "launch serve m --enable-do --port -1 -- --not-a-flag",  # a unique abbreviation; a number; after --
        "launch serve m --spec-config '{\"target\": {\"anything\": 1}, \"draft\": {\"hf_config\": {\"x\": 1}}}'",
    ],
)
def test_spellings_the_parser_accepts(argv):
    assert audit(argv) == []


def test_each_spelling_of_an_unknown_flag():
    assert audit("launch serve m --swap_space 4 --swap-space=4 -x --spec-config.nope 1 -O") == [
        ("launch-flag-unknown", "--swap-space"),
        ("launch-flag-unknown", "--swap-space"),
        ("launch-flag-unknown", "-x"),
        ("launch-config-key-unknown", "nope"),
        ("launch-flag-unknown", "-O"),
    ]


def test_values_json_cannot_show_and_values_it_can():
    assert audit("launch serve m --spec-config '{not json}' --transfer-config '$CFG'") == [
        ("cannot-judge", "--spec-config"), ("cannot-judge", "--transfer-config"),
    ]  # fmt: skip
    findings = check_launch(target("v2"), ["launch", "serve", "m", "--spec-config", "{not json}"]).findings
    assert [(f.rule, f.message) for f in findings] == [
        ("cannot-judge", "cannot judge `launch serve`: the value of --spec-config is not JSON: its keys are not checked")
    ]
    assert audit("launch serve m --transfer-config '{\"role\": \"both\", \"connector\": \"x\", \"connector_module\": \"pkg.mod\"}'") == [
        ("launch-config-value-unknown", "role"),  # a Literal; the connector is out of tree (connector_module)
    ]


def test_plugins_named_are_handed_on():
    found = check_launch(target("v1"), [
        "launch", "serve", "m",
        "--transfer-config", '{"connector": "SharedConnector"}',
        "--transfer-config", '{"connector": "HiddenConnector", "connector_module": "myplugins.hidden"}',
    ])  # fmt: skip
    assert found.findings == ()
    assert [(p.what, p.name, p.class_path, p.external, p.key) for p in found.plugins] == [
        ("connector", "SharedConnector", "launcher.connectors.SharedConnector", False, "connector"),
        ("connector", "HiddenConnector", "myplugins.hidden.HiddenConnector", True, "connector"),
    ]


def test_an_argv_that_starts_no_server_is_bad_input():
    with pytest.raises(InputError, match="starts no server the launcher rules describe"):
        check_launch(target("v1"), ["python", "train.py"])


def test_an_incomplete_parser_makes_unknown_flags_cannot_judge(tmp_path):
    import shutil

    root = tmp_path / "launcher_v3"
    shutil.copytree(PROVIDERS / "launcher_v2", root)
    server = root / "launcher" / "server.py"
    # the parser handed to a module outside the provider, which no hook names
    server.write_text(server.read_text().replace("from launcher import plugins", "import platform_flags as plugins")
                      .replace("plugins.extend_parser(parser)", "plugins.add_platform_flags(parser)"))  # fmt: skip
    tree = resolve_path(str(root / "launcher"))
    unread = launch_target(tree, load_rulebook([PROVIDERS], "launcher"), lambda: open_index(tree, None))
    findings = check_launch(unread, ["launch", "serve", "m", "--swap-space", "4", "--spec-config", '{"nope": 1}']).findings
    assert [(f.rule, f.param) for f in findings] == [("cannot-judge", "--swap-space"), ("launch-config-key-unknown", "nope")]
    assert findings[0].message == (
        "cannot judge `launch serve`: `launch serve` on launcher 2.0.0 has no flag --swap-space, but not every flag could be "
        "read (launcher/server.py:28: the parser is handed to plugins.add_platform_flags, which apiaudit cannot read)"
    )


def test_a_release_that_cannot_be_read_is_said_on_each_line(tmp_path):
    book = load_rulebook([PROVIDERS], "launcher")
    tree = resolve_path(provider("v1"))

    def broken():
        raise InputError("no installed distribution 'launcher'")

    found = check_launch(launch_target(tree, book, broken), ["launch", "serve", "m", "--x"]).findings
    assert [(f.rule, f.message) for f in found] == [
        ("cannot-judge", "cannot judge `launch serve`: launcher cannot be read (no installed distribution 'launcher')")
    ]


def test_audit_launch_from_python():
    assert audit_launch(["launch", "serve", "m", "--swap-space", "4"], provider("v1"), rules_dirs=[PROVIDERS]) == ()
    found = audit_launch(["launch", "serve", "m", "--swap-space", "4"], provider("v2"), rules_dirs=[PROVIDERS])
    assert [(f.rule, f.path, f.line, f.column, f.source) for f in found] == [
        ("launch-flag-unknown", "<command>", 1, 15, "launch serve m --swap-space 4")
    ]
    with pytest.raises(InputError, match="no rules describe"):
        audit_launch(["launch", "serve"], provider("v1"))  # the bundled rules know nothing of launcher


def test_nothing_of_the_provider_is_read_without_a_launch_line(tmp_path, monkeypatch):
    import apiaudit.checks.launch as checks_launch

    calls: list[object] = []
    monkeypatch.setattr(checks_launch, "read_cli", lambda *a: calls.append(a) or pytest.fail("read"))
    (tmp_path / "train.sh").write_text("#!/bin/bash\npython train.py --epochs 3\n")
    (tmp_path / "job.py").write_text("import launcher.config\nlauncher.config.SpecConfig(method='eagle')\n")
    report = scan([str(tmp_path)], provider("v2"), rules_dirs=[PROVIDERS], use_index_cache=False)
    assert report.findings == () and calls == []


def test_job_scripts_start_the_stack_server(tmp_path):
    """Without --provider, job scripts are audited against the library they call and their
    command lines against the stack's provider (the scripts' layer carries it)."""
    from apiaudit.gate.layers import plan_layers

    (tmp_path / "serve.sh").write_text(textwrap.dedent("""\
        launch serve m --swap-space 4
    """))
    (tmp_path / "job.py").write_text("from engine import LLM\nLLM('m')\n")
    layers = plan_layers([str(tmp_path)], None, script_provider=str(PROVIDERS / "engine_v1" / "engine"),
                         stack_provider=provider("v2"), rules_dirs=[PROVIDERS])  # fmt: skip
    assert [(layer.provider, layer.launch_provider) for layer in layers] == [
        (str(PROVIDERS / "engine_v1" / "engine"), provider("v2")), (provider("v2"), None),
    ]  # fmt: skip
    report = scan([str(tmp_path)], str(PROVIDERS / "engine_v1" / "engine"), rules_dirs=[PROVIDERS],
                  launch_provider=provider("v2"), use_index_cache=False)  # fmt: skip
    assert [(f.rule, f.path, f.param) for f in report.findings] == [("launch-flag-unknown", "serve.sh", "--swap-space")]
    assert report.provider.name == "engine"
    again = scan([str(tmp_path)], str(PROVIDERS / "engine_v1" / "engine"), rules_dirs=[PROVIDERS],
                 launch_provider=provider("v1"), use_index_cache=False)  # fmt: skip
    assert again.findings == ()
    missing = scan([str(tmp_path)], str(PROVIDERS / "engine_v1" / "engine"), rules_dirs=[PROVIDERS],
                   launch_provider=str(tmp_path / "nowhere" / "launcher"), use_index_cache=False)  # fmt: skip
    assert [(f.rule, f.param) for f in missing.findings] == [("cannot-judge", None)]
    assert "no such file or directory" in missing.findings[0].message


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_a_connector_a_launch_line_names_by_module_is_live_and_checked(version):
    """serve.sh names hsconn._store.StoreConnector through "connector_module": the module, imported
    by nothing, is live, and its class is checked as the factory builds it (a [[plugin]] rule)."""
    report = scan([str(FIXTURES / "consumers" / "launch_plugin")], provider(version), rules_dirs=[PROVIDERS], use_index_cache=False)
    found = {(f.rule, f.path, f.line, f.param, f.provider_location, f.conditional) for f in report.findings}
    expected = {("constructor-incompatible", "hsconn/_store.py", 5, "cache", "launcher/connectors.py:31", False)}
    assert found == (expected if version == "v2" else set())


def test_a_flag_the_consumers_own_cli_adds_to_the_servers_parser_is_known(tmp_path):
    """hsconn/cli/serve.py builds its `serve` on launcher.server.make_parser and adds --turbo:
    serve.sh's `launch serve tiny-model --turbo` is no launch-flag-unknown; without the
    add_argument it is. The parser's `usage=` text is no command line either way (vllm-omni
    0.30.0's `usage="vllm serve ... --omni"`, a false break of the history check)."""
    import shutil

    folder = FIXTURES / "consumers" / "launch_plugin"
    report = scan([str(folder)], provider("v1"), rules_dirs=[PROVIDERS], use_index_cache=False)
    assert [f for f in report.findings if f.rule == "launch-flag-unknown"] == []
    copy = tmp_path / "launch_plugin"
    shutil.copytree(folder, copy)
    serve = copy / "hsconn" / "cli" / "serve.py"
    serve.write_text(serve.read_text().replace('parser.add_argument("--turbo", action="store_true")', "pass"))
    report = scan([str(copy)], provider("v1"), rules_dirs=[PROVIDERS], use_index_cache=False)
    assert [(f.rule, f.path, f.line, f.param) for f in report.findings] == [("launch-flag-unknown", "serve.sh", 3, "--turbo")]
