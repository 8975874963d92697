"""Loading and validating rule files: the bundled rules/vllm.toml, user directories, and every error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from apiaudit.errors import InputError
from apiaudit.findings import ENGINE_RULES, Severity
from apiaudit.recipes import (
    CHANGE_KINDS,
    bundled_rules_dir,
    load_rule_file,
    load_rulebook,
)
from apiaudit.recipes.changes import AddedParameter

REPO = Path(__file__).resolve().parents[2]

GOOD_RECIPE = """
[[recipe]]
id = "demo-added"
symbol = "demo.api.build"
versions = ">=2.0"
change = "added-parameter"
param = "mode"
value = "Mode.FAST"
imports = ["from demo.modes import Mode"]
rationale = "mode became required in demo 2.0"
"""

SYMBOL_PATTERN = """
[[pattern]]
id = "p"
severity = "error"
versions = ">=2.0"
kind = "call-without-keyword"
symbol = "demo.api.build"
keyword = "mode"
message = "x"
"""
INSERT_RECIPE = """
[[recipe]]
id = "r"
symbol = "demo.api.Engine.step"
versions = ">=2.0"
change = "insert-call-after"
method = "finish"
args = "None"
rationale = "split in demo 2.0"
"""


def test_the_call_protocol_kinds_load(tmp_path: Path) -> None:
    body = SYMBOL_PATTERN + INSERT_RECIPE + '[[recipe]]\nid = "d"\nsymbol = "a.b"\nversions = ""\nchange = "drop-subscript"\nrationale = "one reply"\n'
    rule_file = load_rule_file(_write(tmp_path, "ok.toml", body))
    (pattern,) = rule_file.patterns
    assert (pattern.kind, pattern.symbol, pattern.keyword, pattern.method, pattern.on_symbol) == (
        "call-without-keyword", "demo.api.build", "mode", None, True
    )
    assert [r.change.toml() for r in rule_file.recipes] == [{"method": "finish", "args": "None"}, {}]


def test_a_substitution_and_a_registration_class_load(tmp_path: Path) -> None:
    body = (
        '[[substitution]]\nbase = "demo.layers.Pluggable"\nmethod = "register_oot"\n'
        '[[plugin]]\nbase = "demo.conn.Base"\nfactory = "demo.conn.Factory.create"\nclass_variable = "cls"\n'
        'register = "register"\nregister_on = "demo.conn.Factory"\nmodule_arg = 1\nclass_arg = 2\n'
    )
    rule_file = load_rule_file(_write(tmp_path, "ok.toml", body))
    assert [(s.base, s.method) for s in rule_file.substitutions] == [("demo.layers.Pluggable", "register_oot")]
    assert [p.register_on for p in rule_file.plugins] == ["demo.conn.Factory"]


def _write(directory: Path, name: str, body: str, provider: str = "demo") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f'[provider]\nname = "{provider}"\n' + body)
    return path


def test_the_bundled_rules_are_the_repository_rules() -> None:
    assert bundled_rules_dir().resolve() == (REPO / "rules").resolve()


def test_the_shipped_vllm_rules_load_and_validate() -> None:
    book = load_rulebook([], "vllm")
    assert book.provider == "vllm" and book.default_consumers == ("speculators",)
    assert book.files == (REPO / "rules" / "vllm.toml",)
    assert len(book.fingerprint) == 12
    ids = [r.id for r in book.recipes] + [p.id for p in book.patterns]
    assert len(ids) == len(set(ids))
    for recipe in book.recipes:
        assert recipe.kind.value in CHANGE_KINDS
        assert re.search(r"\b0\.\d+\.\d+\b", recipe.rationale), f"{recipe.id}: rationale names no release"
    for pattern in book.patterns:
        assert pattern.id not in ENGINE_RULES and pattern.severity in (Severity.WARNING, Severity.ERROR)
        assert pattern.recipe is None or book.recipe(pattern.recipe) is not None
        assert re.search(r"\b0\.\d+\.\d+\b", pattern.message)
    # Errors are the patterns whose calls fail at run time (seen on a GPU: bench/gpu/results/);
    # execute_model/sample_tokens fails only on vLLM's executor: an error only where the call is
    # shown to bind to an Executor's method (receiver_class), a warning on text alone.
    assert {p.id for p in book.patterns if p.severity is Severity.ERROR} == {
        "vllm-cache-config-prefix-caching-default",
        "vllm-collective-rpc-unique-reply-rank-single-value",
        "vllm-execute-model-needs-sample-tokens",
    }
    assert {p.id: p.receiver_class for p in book.patterns if p.receiver_class} == {
        "vllm-execute-model-needs-sample-tokens": "vllm.v1.executor.abstract.Executor",
    }
    assert book.rule_infos().keys() == {p.id for p in book.patterns}
    assert [r.method for r in book.rpcs] == ["collective_rpc"] and book.rpcs[0].hosts
    assert [i.keyword for i in book.injections] == ["worker_extension_cls", "worker_cls"]


def test_the_vllm_rules_cover_the_drift_that_breaks_speculators_0_3_0() -> None:
    book = load_rulebook([], "vllm").applicable("0.16.0")
    changes = {
        (r.symbol.rsplit(".", 1)[-1], r.kind.value, getattr(r.change, "param", None) or getattr(r.change, "old", None))
        for r in book.recipes
    }
    assert ("SchedulerConfig", "added-parameter", "is_encoder_decoder") in changes
    assert ("Scheduler", "added-parameter", "block_size") in changes
    assert ("get_kv_cache_config_from_groups", "removed-parameter", "kv_cache_specs") in changes
    assert ("VllmModel", "renamed-attribute", "get_input_embeddings") in changes
    values = {r.change.param: r.change.value for r in book.recipes if isinstance(r.change, AddedParameter)}
    assert values["is_encoder_decoder"] == "False" and values["block_size"] == "{in_scope:block_size}"
    kinds = {p.kind: p for p in book.patterns}
    assert kinds["call-not-followed-by"].method == "execute_model" and kinds["call-not-followed-by"].then == "sample_tokens"
    assert kinds["result-subscripted"].when_keyword == "unique_reply_rank"


def test_applicable_filters_by_provider_version() -> None:
    book = load_rulebook([], "vllm")
    assert book.applicable("0.11.0").recipes == () and book.applicable("0.11.0").patterns == ()
    on_16 = {r.id for r in book.applicable("0.16.0").recipes}
    on_17 = {r.id for r in book.applicable("0.17.0").recipes}
    assert "vllm-request-eos-token-id" in on_17 - on_16
    assert "vllm-kv-cache-config-from-groups-kv-cache-specs" not in {r.id for r in book.applicable("0.11.1").recipes}
    every = {r.id for r in book.recipes}
    assert {r.id for r in book.applicable(None).recipes} == every
    assert {r.id for r in book.applicable("not-a-version (local path)").recipes} == every
    assert book.applicable("0.16.0").rpcs == book.rpcs


def test_a_user_directory_adds_rules(tmp_path: Path) -> None:
    _write(tmp_path / "mine", "extra.toml", 'default_consumers = ["myjobs"]\n' + GOOD_RECIPE, provider="vllm")
    book = load_rulebook([tmp_path / "mine"], "vllm")
    assert "demo-added" in {r.id for r in book.recipes}
    assert book.default_consumers == ("speculators", "myjobs")
    assert book.recipe("demo-added").change.imports == ("from demo.modes import Mode",)
    assert load_rulebook([tmp_path / "mine"], "vllm").fingerprint != load_rulebook([], "vllm").fingerprint


def test_rules_of_other_providers_are_validated_but_not_used(tmp_path: Path) -> None:
    _write(tmp_path / "mine", "demo.toml", GOOD_RECIPE)
    assert "demo-added" not in {r.id for r in load_rulebook([tmp_path / "mine"], "vllm").recipes}
    _write(tmp_path / "mine", "broken.toml", "[[recipe]]\nid = 3\n")
    with pytest.raises(InputError, match="broken.toml"):
        load_rulebook([tmp_path / "mine"], "vllm")


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (GOOD_RECIPE.replace('change = "added-parameter"', 'change = "foo"'), r"recipe 'demo-added' \[1\]: unknown change 'foo'"),
        (GOOD_RECIPE.replace('versions = ">=2.0"', 'versions = "two or later"'), r"recipe 'demo-added' \[1\]: 'versions' = 'two or later' is not a PEP 440"),
        (GOOD_RECIPE.replace('versions = ">=2.0"', "versions = 2"), r"'versions' must be a string"),
        (GOOD_RECIPE.replace('param = "mode"', "param = 7"), r"recipe 'demo-added' \[1\]: 'param' must be a string, not int"),
        (GOOD_RECIPE.replace('rationale = "', 'colour = "red"\nrationale = "'), r"recipe 'demo-added' \[1\]: unknown key 'colour'"),
        (GOOD_RECIPE.replace('param = "mode"\n', ""), r"recipe 'demo-added' \[1\]: missing key 'param'"),
        (GOOD_RECIPE.replace('value = "Mode.FAST"', 'value = "Mode.("'), r"'value' = 'Mode.\(' is not a Python expression"),
        (GOOD_RECIPE.replace('value = "Mode.FAST"', 'value = "{in_scope: x}"'), r"malformed \{in_scope:NAME\} placeholder"),
        (GOOD_RECIPE.replace("from demo.modes import Mode", "Mode = 1"), r"'imports' item 'Mode = 1' is not one import statement"),
        (GOOD_RECIPE.replace('imports = ["from demo.modes import Mode"]', 'imports = "from demo.modes import Mode"'), r"'imports' must be a list of strings"),
        (GOOD_RECIPE.replace('id = "demo-added"', 'id = "Demo_Added"'), r"'id' = 'Demo_Added' is not a kebab-case id"),
        (GOOD_RECIPE.replace('symbol = "demo.api.build"', 'symbol = "demo api"'), r"'symbol' = 'demo api' is not a dotted path"),
        (GOOD_RECIPE + GOOD_RECIPE, r"recipe 'demo-added' \[2\]: duplicate id \(also in "),
        ('[[recipe]]\nid = "r"\nsymbol = "a.b"\nversions = ""\nchange = "renamed-parameter"\nold = "x"\nrationale = "r 1.0"\n', r"recipe 'r' \[1\]: missing key 'new'"),
        ('[[recipe]]\nid = "r"\nsymbol = "a.b"\nversions = ""\nchange = "moved-symbol"\nparam = "x"\nmodule = "a.c"\nrationale = "r 1.0"\n', r"recipe 'r' \[1\]: unknown key 'param'"),
        ('[[pattern]]\nid = "p"\nseverity = "warning"\nversions = ""\nkind = "sometimes"\nmethod = "m"\nmessage = "x"\n', r"pattern 'p' \[1\]: unknown kind 'sometimes'"),
        ('[[pattern]]\nid = "p"\nseverity = "warning"\nversions = ""\nkind = "call-not-followed-by"\nmethod = "m"\nmessage = "x"\n', r"pattern 'p' \[1\]: kind 'call-not-followed-by' needs 'then'"),
        ('[[pattern]]\nid = "p"\nversions = ""\nkind = "method-called"\nmethod = "m"\nmessage = "x"\nseverity = "fatal"\n', r"unknown severity 'fatal'"),
        ('[[pattern]]\nid = "p"\nseverity = "warning"\nversions = ""\nkind = "method-called"\nmethod = "m"\nmessage = "x"\nsubscript = "int-literal"\n', r"'subscript' only applies to kind 'result-subscripted'"),
        ('[[pattern]]\nid = "p"\nseverity = "warning"\nversions = ""\nkind = "method-called"\nmethod = "m"\nmessage = "x"\nmin_args = -1\n', r"'min_args' must be a non-negative integer"),
        ('[[pattern]]\nid = "p"\nseverity = "warning"\nversions = ""\nkind = "method-called"\nmethod = "m"\nmessage = "x"\nrecipe = "nope"\n', r"pattern 'p' \[1\]: recipe 'nope' is not defined"),
        ('[[pattern]]\nid = "unexpected-keyword"\nseverity = "warning"\nversions = ""\nkind = "method-called"\nmethod = "m"\nmessage = "x"\n', r"is an engine rule id"),
        ('[[rpc]]\nmethod = "call"\nhosts = ["a.Worker"]\n', r"rpc \[1\]: needs 'name_arg' or 'name_keyword'"),
        ('[[rpc]]\nmethod = "call"\nname_arg = 0\nhosts = []\n', r"rpc \[1\]: 'hosts' is empty"),
        ('[[injection]]\nkeyword = "cls"\nhosts = ["a.Worker"]\nextra = 1\n', r"injection \[1\]: unknown key 'extra'"),
        (SYMBOL_PATTERN.replace('keyword = "mode"\n', ""), r"pattern 'p' \[1\]: kind 'call-without-keyword' needs 'keyword'"),
        (SYMBOL_PATTERN + 'method = "m"\n', r"pattern 'p' \[1\]: 'method' does not apply to kind 'call-without-keyword'"),
        (SYMBOL_PATTERN.replace('symbol = "demo.api.build"', 'symbol = "demo api"'), r"'symbol' = 'demo api' is not a dotted path"),
        ('[[pattern]]\nid = "p"\nseverity = "warning"\nversions = ""\nkind = "method-called"\nmethod = "m"\nmessage = "x"\nkeyword = "k"\n', r"'keyword' only applies to kind 'call-without-keyword'"),
        ('[[pattern]]\nid = "p"\nseverity = "warning"\nversions = ""\nkind = "method-called"\nmessage = "x"\n', r"pattern 'p' \[1\]: missing key 'method'"),
        (INSERT_RECIPE.replace('args = "None"', 'args = "x=, 1"'), r"recipe 'r' \[1\]: 'args' = 'x=, 1' is not a call's argument list"),
        (INSERT_RECIPE.replace('method = "finish"\n', ""), r"recipe 'r' \[1\]: missing key 'method'"),
        (INSERT_RECIPE + '[[pattern]]\nid = "p"\nseverity = "warning"\nversions = ""\nkind = "method-called"\nmethod = "m"\nmessage = "x"\nrecipe = "r"\n',
         r"pattern 'p' \[1\]: recipe 'r' \(insert-call-after\) fixes only kind 'call-not-followed-by' patterns"),
        ('[[pattern]]\nid = "p"\nversions = ""\nkind = "method-called"\nmethod = "m"\nmessage = "x"\n',
         r"pattern 'p' \[1\]: missing key 'severity': what happens when the matched line runs"),
        ('[[entry_point]]\ngroup = "g"\nhookspecs = "a.spec"\ncaller = "a.f"\n',
         r"entry_point \[1\]: 'hookspecs' \(a hook implementation module\) takes no 'caller'/'variable'"),
        ('[[entry_point]]\ngroup = "g"\ncaller = "a.f"\nvariable = "f"\nhook_prefix = "a_"\n',
         r"entry_point \[1\]: 'hook_prefix', 'hook_rename' and 'hook_registrar' need 'hookspecs'"),
        ('[[entry_point]]\ngroup = "g"\ncaller = "a.f"\n', r"entry_point \[1\]: missing key 'variable'"),
        ('[[substitution]]\nbase = "a.Layer"\nmethod = "register_oot"\nfactory = "a.f"\n', r"substitution \[1\]: unknown key 'factory'"),
        ('[[substitution]]\nbase = "a Layer"\nmethod = "register_oot"\n', r"'base' = 'a Layer' is not a dotted class path"),
        ('[[plugin]]\nbase = "a.B"\nfactory = "a.F.create"\nclass_variable = "c"\nregister_on = "a F"\n', r"'register_on' = 'a F' is not a dotted class path"),
        ("[[recipe]]\nid = \n", r"not valid TOML"),
        ("[settings]\n", r"unknown top-level key 'settings'"),
    ],
)
def test_each_problem_is_one_error_naming_file_and_entry(tmp_path: Path, body: str, problem: str) -> None:
    path = _write(tmp_path / "rules", "bad.toml", body)
    with pytest.raises(InputError) as raised:
        load_rule_file(path) if not re.search("duplicate|is not defined|fixes only", problem) else load_rulebook(
            [tmp_path / "rules"], "demo", include_bundled=False
        )
    message = str(raised.value)
    assert "\n" not in message and "bad.toml" in message
    assert re.search(problem, message), message


def test_the_error_message_format(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    body = GOOD_RECIPE * 2 + GOOD_RECIPE.replace("demo-added", "x").replace('"added-parameter"', '"foo"')
    path = _write(rules, "vllm.toml", body.replace('id = "demo-added"', 'id = "a"', 1).replace('id = "demo-added"', 'id = "b"', 1))
    with pytest.raises(InputError) as raised:
        load_rule_file(path)
    assert str(raised.value).endswith("vllm.toml: recipe 'x' [3]: unknown change 'foo' (expected one of: "
                                      + ", ".join(CHANGE_KINDS) + ")")  # fmt: skip


def test_a_table_where_an_array_of_tables_belongs_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "flat.toml").write_text('recipe = 3\n[provider]\nname = "demo"\n')
    with pytest.raises(InputError, match="flat.toml: 'recipe' must be an array of tables"):
        load_rule_file(tmp_path / "flat.toml")


def test_a_missing_provider_table_or_directory_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "noprov.toml").write_text(GOOD_RECIPE)
    with pytest.raises(InputError, match="needs a \\[provider\\] table"):
        load_rule_file(tmp_path / "noprov.toml")
    with pytest.raises(InputError, match="rules directory does not exist"):
        load_rulebook([tmp_path / "absent"], "vllm")


def test_a_user_rule_cannot_reuse_a_bundled_id(tmp_path: Path) -> None:
    bundled = load_rulebook([], "vllm").recipes[0]
    _write(tmp_path / "mine", "clash.toml", GOOD_RECIPE.replace("demo-added", bundled.id), provider="vllm")
    with pytest.raises(InputError, match=f"recipe '{bundled.id}' \\[1\\]: duplicate id"):
        load_rulebook([tmp_path / "mine"], "vllm")


def test_the_engine_code_names_no_provider() -> None:
    """All provider knowledge lives in rules/: the recipe and fix code must not name vLLM."""
    for package in ("recipes", "fixes"):
        for path in (REPO / "apiaudit" / package).glob("*.py"):
            assert "vllm" not in path.read_text().lower(), path
