"""The atlas as data (JSON) and as one static HTML page: no server, no file beside it.

The page is a table, downstreams x releases, sortable by any column (a click on its header), each
cell a `<details>` that opens on its findings, the first broken release of each downstream
marked. The data is embedded too (`<script type="application/json" id="atlas-data">`)."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from apiaudit.impact.atlas import Atlas, AtlasCell, AtlasRow

ATLAS_FORMATS = ("html", "json")
# MAJOR.MINOR, as the scan report's (docs/report-format.md, Versioning): MINOR for what is added
# (1.1: cell outcome "unused"), MAJOR for what is removed, renamed or means something else.
ATLAS_SCHEMA_VERSION = "1.1"

# Cells sort by how bad they are, worst first when a column is sorted descending: a release a
# downstream does not use below clean (nothing checked), one that cannot be read last.
_SEVERITY = {"unreadable": 0, "unused": 1, "clean": 2, "conditional": 3, "breaks": 4}


def atlas_to_dict(atlas: Atlas) -> dict[str, Any]:
    return {
        "schema_version": ATLAS_SCHEMA_VERSION,
        "provider": atlas.provider,
        "releases": list(atlas.releases),
        "counts": dict(sorted(atlas.counts.items())),
        "downstreams": [{
            "spec": row.spec, "label": row.label, "first_broken": row.first_broken, "failure": row.failure,
            "cells": [{
                "release": c.release, "outcome": c.outcome, "errors": c.errors, "failure": c.failure,
                "findings": [{"id": f.id, "rule": f.rule, "severity": f.severity, "site": f.site, "message": f.message,
                              "blocking": f.blocking} for f in c.findings],
            } for c in row.cells],
        } for row in atlas.rows],  # fmt: skip
        "duration_s": atlas.duration_s,
    }


def render_atlas(atlas: Atlas, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(atlas_to_dict(atlas), indent=2) + "\n"
    return page(atlas)


def _cell_text(cell: AtlasCell, provider: str) -> str:
    if cell.outcome == "breaks":
        return f"breaks {cell.errors}"
    if cell.outcome == "unused":
        return f"does not use {provider}"
    return {"clean": "clean", "conditional": "conditional only", "unreadable": "cannot read"}[cell.outcome]


def _cell(row: AtlasRow, cell: AtlasCell, provider: str) -> str:
    first = row.first_broken == cell.release
    classes = cell.outcome + (" first-broken" if first else "")
    mark = '<span class="mark" title="first broken release">&#9650;</span> ' if first else ""
    sort_key = _SEVERITY[cell.outcome] * 100000 + cell.errors
    items = [
        f'<li class="{"blocking" if f.blocking else "other"}"><code>{escape(f.site)}</code> '
        f"{escape(f.severity)} <b>{escape(f.rule)}</b>: {escape(f.message)}</li>"
        for f in cell.findings
    ]
    if cell.failure:
        items.append(f"<li>{escape(cell.failure)}</li>")
    body = f"{mark}{escape(_cell_text(cell, provider))}"
    if items:
        body = f"<details><summary>{body}</summary><ul>{''.join(items)}</ul></details>"
    return f'<td class="{classes}" data-sort="{sort_key}" data-release="{escape(cell.release)}">{body}</td>'


# On an atlas larger than the window, the releases (the header row) stay at the top and the
# downstreams' names at the left edge, above the cells that scroll under them (their edges drawn
# as shadows: a collapsed border does not travel with a sticky cell).
_STYLE = """
body{font:14px system-ui,sans-serif;margin:1.5em}
table{border-collapse:collapse}
th,td{border:1px solid #ccc;padding:4px 8px;vertical-align:top}
th{background:#f4f4f4}
thead th{cursor:pointer;user-select:none;position:sticky;top:0;z-index:2;box-shadow:inset 0 -1px #ccc}
tbody th{position:sticky;left:0;z-index:1;text-align:left;white-space:nowrap;box-shadow:inset -1px 0 #ccc}
thead th:first-child{left:0;z-index:3;box-shadow:inset -1px -1px #ccc}
th[aria-sort=ascending]::after{content:" \\25B2"} th[aria-sort=descending]::after{content:" \\25BC"}
td.clean,.legend .clean{background:#e6f4ea} td.breaks,.legend .breaks{background:#fce8e6}
td.conditional,.legend .conditional{background:#fef7e0} td.unused,.legend .unused{background:#e8f0fe;color:#3c4a6b}
td.unreadable,.legend .unreadable{background:#eee;color:#666} td.first-broken{outline:3px solid #c5221f;outline-offset:-3px}
.legend{line-height:1.9} .legend span{border:1px solid #ccc;padding:1px 6px}
.mark{color:#c5221f} details ul{margin:.3em 0 0 0;padding-left:1.2em;max-width:40em} li.other{color:#666}
"""

# Sort the body's rows by the clicked column: the downstreams by name (A to Z first), a release
# by what it does to each (worst first); a second click on the same column reverses.
_SCRIPT = """
(function () {
  var table = document.getElementById("atlas");
  var headers = table.tHead.rows[0].cells;
  function key(row, column) {
    var cell = row.cells[column];
    return column === 0 ? cell.textContent.trim().toLowerCase() : Number(cell.getAttribute("data-sort"));
  }
  function sortBy(column) {
    var header = headers[column];
    var current = header.getAttribute("aria-sort");
    var descending = current ? current === "ascending" : column !== 0;
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a, column), y = key(b, column);
      var order = x < y ? -1 : x > y ? 1 : 0;
      return descending ? -order : order;
    });
    for (var i = 0; i < headers.length; i++) headers[i].removeAttribute("aria-sort");
    header.setAttribute("aria-sort", descending ? "descending" : "ascending");
    rows.forEach(function (row) { body.appendChild(row); });
  }
  for (var i = 0; i < headers.length; i++) {
    headers[i].addEventListener("click", sortBy.bind(null, i));
  }
  window.apiauditAtlasSort = sortBy;
})();
"""


def page(atlas: Atlas) -> str:
    counts = atlas.counts
    title = f"apiaudit atlas: {atlas.provider}"
    head = "".join(f'<th scope="col">{escape(v)}</th>' for v in atlas.releases)
    rows = []
    for row in atlas.rows:
        cells = "".join(_cell(row, c, atlas.provider_name) for c in row.cells)
        rows.append(f'<tr><th scope="row">{escape(row.label)}</th>{cells}</tr>')
    summary = ", ".join(f"{counts[o]} {o}" for o in ("breaks", "conditional", "clean", "unused", "unreadable") if counts[o])
    data = json.dumps(atlas_to_dict(atlas)).replace("</", "<\\/")  # no `</script>` inside the data
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>\n"
        f"<h1>{escape(title)}</h1>\n<p>{len(atlas.rows)} downstreams x {len(atlas.releases)} releases: {escape(summary)}. "
        "Click a header to sort; a cell opens its findings; &#9650; marks each downstream's first broken release.</p>\n"
        f"{_legend(atlas.provider_name)}\n"
        f'<table id="atlas"><thead><tr><th scope="col">downstream</th>{head}</tr></thead>\n'
        f"<tbody>{''.join(rows)}</tbody></table>\n"
        f'<script type="application/json" id="atlas-data">{data}</script>\n'
        f"<script>{_SCRIPT}</script>\n</body></html>\n"
    )


def _legend(provider: str) -> str:
    """What each kind of cell says, in its own colours."""
    kinds = (
        ("breaks", "breaks N", "N proven errors"),
        ("conditional", "conditional only", "findings behind undecided guards, warnings"),
        ("clean", "clean", "no error or warning"),
        ("unused", f"does not use {provider}", f"the downstream imports nothing of {provider} (nor does any dependency it declares): nothing to check"),
        ("unreadable", "cannot read", "the release or the downstream could not be read"),
    )  # fmt: skip
    items = "; ".join(f'<span class="{kind}">{escape(shown)}</span> {escape(meaning)}' for kind, shown, meaning in kinds)
    return f'<p class="legend">{items}.</p>'
