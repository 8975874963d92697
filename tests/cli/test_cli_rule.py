"""`apiaudit rule ID`: every engine rule's section of docs/rules.md, recipe rules from their file."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from apiaudit.cli.group import cli
from apiaudit.findings import ENGINE_RULES


def _run(*args):
    result = CliRunner().invoke(cli, ["rule", *args])
    return result.exit_code, result.output


@pytest.mark.parametrize("rule_id", sorted(ENGINE_RULES))
def test_every_engine_rule_prints_what_an_example_and_the_fix(rule_id):
    code, out = _run(rule_id)
    assert code == 0 and out.startswith(f"{rule_id}\n")
    assert "**Means:**" in out
    assert "```" in out  # an example
    assert "**Fix:**" in out or "**What to do:**" in out


def test_a_recipe_rule_and_an_unknown_id(tmp_path):
    (tmp_path / "r.toml").write_text(
        '[provider]\nname = "tinyprov"\n[[pattern]]\nid = "tiny-old-call"\nseverity = "warning"\nversions = ">=1"\n'
        'kind = "method-called"\nmethod = "old"\nmessage = "old() is slow since 1.0"\nadvice = "call new()"\n'
    )
    code, out = _run("tiny-old-call", "--rules", str(tmp_path))
    assert code == 0 and "old() is slow since 1.0" in out and "**Fix:** call new()" in out
    code, out = _run("no-such-rule")
    assert code == 2 and out.count("\n") == 1 and "unknown rule id 'no-such-rule'" in out
    code, out = _run()
    assert code == 0 and "unexpected-keyword" in out.split()


def test_a_mistyped_id_gets_the_closest_and_help_shows_the_id_optional():
    code, out = _run("unexpected-keywrd")
    assert code == 2 and out == "apiaudit: error: unknown rule id 'unexpected-keywrd' (did you mean 'unexpected-keyword'?)\n"
    code, out = _run("--help")
    assert code == 0 and " rule [OPTIONS] [ID]\n" in out


def test_without_an_id_each_rule_is_listed_with_a_one_line_summary(tmp_path):
    (tmp_path / "r.toml").write_text(
        '[provider]\nname = "tinyprov"\n[[pattern]]\nid = "tiny-old-call"\nseverity = "warning"\nversions = ">=1"\n'
        'kind = "method-called"\nmethod = "old"\nmessage = "old() is slow since 1.0; new() is not"\n'
    )
    code, out = _run("--rules", str(tmp_path))
    assert code == 0
    rows = {line.split()[0]: line.split(None, 1)[1] for line in out.splitlines()}
    for rule in ENGINE_RULES.values():
        assert rows[rule.id] == rule.summary
    assert rows["tiny-old-call"] == "old() is slow since 1.0"
    assert "remote-code-required" in rows  # the model-facing rule of rules/transformers.toml too
    # The summaries start in one column.
    assert len({line.index(line.split(None, 1)[1]) for line in out.splitlines()}) == 1
