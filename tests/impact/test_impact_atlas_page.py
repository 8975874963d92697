"""The atlas page as text: one static HTML file, its data embedded, its messages escaped.

What it does in a browser (sorting, cells opening, the first broken release marked) is checked
in a real headless browser: test_impact_atlas_browser.py."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

from apiaudit.impact.atlas import Atlas, AtlasCell, AtlasRow, CellFinding
from apiaudit.impact.atlas_page import page, render_atlas


def _atlas() -> Atlas:
    finding = CellFinding("abc:1", "unexpected-keyword", "error", "down/a.py:3", "f() got an unexpected keyword <x>", True)
    a = AtlasRow("a==1", "alpha 1", (AtlasCell("1.0", "clean"), AtlasCell("2.0", "breaks", 1, (finding,))), first_broken="2.0")
    b = AtlasRow("b==1", "beta 1", (AtlasCell("1.0", "breaks", 3, (finding,) * 3), AtlasCell("2.0", "conditional")))
    return Atlas("prov>=1", ("1.0", "2.0"), (b, a))


class _Cells(HTMLParser):
    def __init__(self):
        super().__init__()
        self.cells: list[dict] = []
        self.scripts: list[tuple[dict, str]] = []
        self._script: dict | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "td":
            self.cells.append(dict(attrs))
        if tag == "script":
            self._script = dict(attrs)
            self.scripts.append((self._script, ""))

    def handle_data(self, data):
        if self._script is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)

    def handle_endtag(self, tag):
        if tag == "script":
            self._script = None


def test_the_page_is_one_file_whose_cells_open_their_findings():
    html = page(_atlas())
    parsed = _Cells()
    parsed.feed(html)
    assert [c["class"] for c in parsed.cells] == ["breaks", "conditional", "clean", "breaks first-broken"]
    assert "<details><summary>" in html and "&lt;x&gt;" in html  # messages escaped
    assert not re.search(r'<(link|img|iframe)\b|src=|href="http', html)  # nothing fetched: no server, no file beside it
    data = next(text for attrs, text in parsed.scripts if attrs.get("id") == "atlas-data")
    assert json.loads(data)["downstreams"][1]["first_broken"] == "2.0"
    assert json.loads(render_atlas(_atlas(), "json"))["counts"] == {"breaks": 2, "clean": 1, "conditional": 1}


def test_a_downstream_that_does_not_use_the_provider_has_cells_of_its_own_and_a_legend():
    from apiaudit.impact.atlas_page import _SEVERITY

    early = AtlasRow("early==0.1", "early 0.1", (AtlasCell("1.0", "unused"), AtlasCell("2.0", "unused")))
    html = page(Atlas("prov>=1", ("1.0", "2.0"), (early,)))
    parsed = _Cells()
    parsed.feed(html)
    assert [c["class"] for c in parsed.cells] == ["unused", "unused"]
    assert html.count(">does not use prov</td>") == 2 and "cannot read" not in html.split('<p class="legend">')[0]
    legend = html.split('<p class="legend">', 1)[1].split("</p>", 1)[0]
    assert '<span class="unused">does not use prov</span>' in legend
    assert "td.unused" in html  # its own colour
    assert _SEVERITY["unreadable"] < _SEVERITY["unused"] < _SEVERITY["clean"]  # sorted below clean
