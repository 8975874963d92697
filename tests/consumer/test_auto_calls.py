"""Auto-class load calls, read on the consumer stage's own parse for the [[remote_code]] rules."""

from __future__ import annotations

from pathlib import Path

from apiaudit.consumer import collect_file
from apiaudit.consumer.records import ConsumerOptions, TrustArgument
from apiaudit.recipes.loader import load_remote_code_rules
from apiaudit.sources.base import CodeTree

RULE = load_remote_code_rules()[0]


def test_auto_calls_ride_on_the_file_with_their_rule_and_character_columns(tmp_path: Path):
    text = "from transformers import AutoTokenizer\né = 1; AutoTokenizer.from_pretrained(p)\n"
    (tmp_path / "job.py").write_text(text, encoding="utf-8")
    tree = CodeTree(name="job", version=None, root=tmp_path, packages=())
    options = ConsumerOptions(provider_packages=("eng",), remote_code=(RULE,))
    (site,) = collect_file(tree, tmp_path / "job.py", options).auto_calls
    assert (site.line, site.column, site.auto_class, site.trust, site.rule) == (2, 7, "AutoTokenizer", TrustArgument.ABSENT, RULE.id)
    assert collect_file(tree, tmp_path / "job.py", ConsumerOptions(provider_packages=("eng",))).auto_calls == ()
