"""Text [[pattern]]s matched on the consumer stage's own parse: hits ride on the ConsumerFile."""

from __future__ import annotations

from pathlib import Path

from apiaudit.consumer import collect_file
from apiaudit.consumer.records import ConsumerOptions, Site
from apiaudit.findings import Severity
from apiaudit.recipes import Pattern
from apiaudit.sources.base import CodeTree

FOLLOW = Pattern(id="demo-needs-finish", severity=Severity.WARNING, versions="", kind="call-not-followed-by",
                 method="start", then="finish", message="start() must be followed by finish()")  # fmt: skip


def _file(tmp_path: Path, text: str, **options):
    (tmp_path / "job.py").write_text(text, encoding="utf-8")
    tree = CodeTree(name="job", version=None, root=tmp_path, packages=())
    return collect_file(tree, tmp_path / "job.py", ConsumerOptions(provider_packages=("eng",), **options))


def test_hits_are_recorded_with_character_columns(tmp_path):
    text = "from eng import Client\n\ndef run(c: Client):\n    é = 1; c.start(\n        é)\n"
    file = _file(tmp_path, text, patterns=(FOLLOW,))
    (hit,) = file.pattern_hits
    assert (hit.pattern, hit.site) == ("demo-needs-finish", Site(4, 11, 5, 10))


def test_no_hits_without_patterns_or_without_a_provider_import(tmp_path):
    assert _file(tmp_path, "from eng import C\n\ndef run(c):\n    c.start()\n").pattern_hits == ()
    assert _file(tmp_path, "def run(c):\n    c.start()\n", patterns=(FOLLOW,)).pattern_hits == ()
