"""Progress bars: on a terminal, drawn only once there is work to show."""

from __future__ import annotations

import io
import sys

from apiaudit.infra.progress import RichProgress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_run_with_nothing_to_show_leaves_the_terminal_alone(monkeypatch):
    # A warm scan answered from the cache: not even the cursor is hidden and shown again, so
    # its stderr is empty, as the same scan replayed before click is imported writes it.
    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    monkeypatch.setenv("TERM", "xterm")
    RichProgress().close()
    assert screen.getvalue() == ""
    bars = RichProgress()
    bars.start("reading", 2)
    bars.advance()
    bars.close()
    assert "\x1b[" in screen.getvalue()
