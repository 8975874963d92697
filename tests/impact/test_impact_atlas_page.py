"""The atlas page: one static HTML file, sortable, each cell opening its findings, first broken marked.

No headless browser is installed where these tests run: the page is parsed as HTML, and its
script is run by node against a small stand-in of the DOM it touches (when node is there)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

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


# The few DOM calls the page's script makes, enough to click a header and read the rows' order.
_DOM = """
function el(text, sort) { return {textContent: text, attrs: {"data-sort": sort}, getAttribute(k) { return this.attrs[k] ?? null; },
  setAttribute(k, v) { this.attrs[k] = v; }, removeAttribute(k) { delete this.attrs[k]; }, addEventListener() {}}; }
const rows = ROWS.map(r => ({cells: [el(r[0])].concat(r.slice(1).map(s => el("", String(s))))}));
const body = {rows: rows.slice(), appendChild(row) { this.rows.splice(this.rows.indexOf(row), 1); this.rows.push(row); }};
const headers = HEADERS.map(h => el(h));
globalThis.window = {};
globalThis.document = {getElementById() { return {tHead: {rows: [{cells: headers}]}, tBodies: [body]}; }};
SCRIPT
const order = [];
window.apiauditAtlasSort(1); order.push(body.rows.map(r => r.cells[0].textContent));
window.apiauditAtlasSort(1); order.push(body.rows.map(r => r.cells[0].textContent));
window.apiauditAtlasSort(0); order.push(body.rows.map(r => r.cells[0].textContent));
console.log(JSON.stringify(order));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_click_on_a_release_sorts_the_downstreams_by_what_it_does_to_them():
    html = page(_atlas())
    parsed = _Cells()
    parsed.feed(html)
    script = next(text for attrs, text in parsed.scripts if "id" not in attrs)
    sorts = [[c["data-sort"] for c in parsed.cells[i : i + 2]] for i in (0, 2)]
    rows = [["beta 1", *map(int, sorts[0])], ["alpha 1", *map(int, sorts[1])]]
    program = _DOM.replace("ROWS", json.dumps(rows)).replace("HEADERS", json.dumps(["downstream", "1.0", "2.0"])).replace("SCRIPT", script)
    out = subprocess.run(["node", "-e", program], capture_output=True, text=True, check=True).stdout
    # release 1.0: beta breaks there, alpha is clean: worst first, then reversed; then by name
    assert json.loads(out) == [["beta 1", "alpha 1"], ["alpha 1", "beta 1"], ["beta 1", "alpha 1"]]
