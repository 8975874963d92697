"""Pattern matches cached per consumer file: what the matcher finds is what the cache keeps."""

from __future__ import annotations

from apiaudit.checks.recipes import _valid
from apiaudit.findings import Severity
from apiaudit.recipes import Pattern
from apiaudit.recipes.patterns import pattern_matches

BOUND = Pattern(id="demo-single-reply", severity=Severity.WARNING, versions="", kind="result-subscripted",
                method="ask", message="ask() returns one value")  # fmt: skip


def test_a_file_with_matches_is_a_valid_entry() -> None:
    source = "import provider\n\ndef f(self):\n    reply = self.engine.ask()\n    return reply[0]\n"
    matches = pattern_matches(source, [BOUND], ("provider",))
    assert matches and matches[0][5] == (("bound", "reply"),)
    assert _valid("pkg/mod.py", ("sha", matches), 1)
    assert not _valid("pkg/mod.py", ("sha", matches), 0)  # a pattern the rulebook no longer has
    assert not _valid("pkg/mod.py", ("sha", (matches[0][:5],)), 1)
