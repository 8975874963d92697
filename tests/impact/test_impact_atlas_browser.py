"""The atlas page in a real headless browser (Chromium driven by selenium through chromedriver).

The page is written as `apiaudit atlas -o atlas.html` writes it and opened over file:// (it needs
no server): the real DOM must show every downstream and release, sort on a header's click, open a
cell on its findings, mark each first broken release, and log no error to the console.

Where no browser is found the tests skip, unless APIAUDIT_REQUIRE_BROWSER=1 (set by .ci/run,
which installs one): then they fail, so that CI cannot pass by skipping them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from apiaudit.impact.atlas import Atlas, AtlasCell, AtlasRow, CellFinding
from apiaudit.impact.atlas_page import render_atlas

RELEASES = ("0.10.0", "0.11.0", "0.12.0", "0.13.0")
KEYWORD = CellFinding("3f2a9c1e:1", "unexpected-keyword", "error", "drafter/model.py:41", "Request() got an unexpected keyword <eos_token_id>", True)
MISSING = CellFinding("77b0d4aa:1", "missing-required", "error", "drafter/model.py:57", "Config() is missing its required argument 'spec'", True)
MAYBE = CellFinding("0c1d2e3f:1", "attribute-missing", "warning", "sampler/hooks.py:12", "Worker has no attribute 'model_runner' when tp > 1", False)
GONE = "gone==9.9: no such release on the package index"


def _atlas() -> Atlas:
    """Six downstreams, every outcome, two of them with a first broken release."""

    def breaks(release: str, *found: CellFinding) -> AtlasCell:
        return AtlasCell(release, "breaks", sum(f.blocking for f in found), found)

    clean = [AtlasCell(r, "clean") for r in RELEASES]
    rows = (
        AtlasRow("drafter==0.3.0", "drafter 0.3.0", (*clean[:2], breaks("0.12.0", KEYWORD, MISSING), breaks("0.13.0", KEYWORD, MISSING, KEYWORD)),
                 first_broken="0.12.0"),  # fmt: skip
        AtlasRow("sampler==1.2", "sampler 1.2", (AtlasCell("0.10.0", "conditional", 0, (MAYBE,)), *(breaks(r, *(KEYWORD,) * 4) for r in RELEASES[1:])),
                 first_broken="0.11.0"),  # fmt: skip
        AtlasRow("kvcache==0.5.6", "kvcache 0.5.6", tuple(breaks(r, *(MISSING,) * 5) for r in RELEASES)),  # broken from the first release: none marked
        AtlasRow("gone==9.9", "gone 9.9", tuple(AtlasCell(r, "unreadable", failure=GONE) for r in RELEASES), failure=GONE),
        AtlasRow("early==0.1", "early 0.1", tuple(AtlasCell(r, "unused") for r in RELEASES)),  # imports nothing of prov
        AtlasRow("plugin==2.0", "plugin 2.0", tuple(clean)),
    )
    return Atlas("prov>=0.10,<=0.13", RELEASES, rows)


# The flags a browser needs where the network is closed (without them it waits on connections).
_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1400,900",
)  # fmt: skip


def _find_browser() -> tuple[str, str] | str:
    """(browser, chromedriver) paths, or why there is none."""
    browser = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        return "no Chromium and chromedriver on PATH (apt-get install chromium chromium-driver; .ci/run does)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (it is in the test extra)"
    return browser, driver


@pytest.fixture(scope="module")
def browser(tmp_path_factory) -> Iterator[Any]:
    found = _find_browser()
    if isinstance(found, str):
        if os.environ.get("APIAUDIT_REQUIRE_BROWSER") == "1":
            pytest.fail(f"APIAUDIT_REQUIRE_BROWSER=1 but {found}")
        pytest.skip(found)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = found[0]
    for flag in (*_FLAGS, f"--user-data-dir={tmp_path_factory.mktemp('profile')}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # A driver path given: selenium's own driver download (Selenium Manager) is never tried.
    driver = webdriver.Chrome(service=Service(found[1]), options=options)
    yield driver
    driver.quit()


def _console_errors(driver) -> list[str]:
    """The console's errors since the last read (script errors, failed loads, console.error)."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _open(driver, atlas: Atlas, folder: Path) -> None:
    """Write the page of `atlas` as `atlas -o atlas.html` does and open it; forget earlier pages' console."""
    path = folder / "atlas.html"
    path.write_text(render_atlas(atlas, "html"), encoding="utf-8")
    _console_errors(driver)
    driver.get(path.as_uri())


@pytest.fixture
def opened(browser, tmp_path) -> Iterator[Any]:
    """The atlas page opened in the browser; after the test, the console must hold no error."""
    _open(browser, _atlas(), tmp_path)
    yield browser
    assert _console_errors(browser) == []


def _by_css(driver, selector: str) -> list[Any]:
    return driver.find_elements("css selector", selector)


def _row_labels(driver) -> list[str]:
    return [th.text for th in _by_css(driver, "#atlas tbody th[scope=row]")]


def _header(driver, text: str):
    return next(th for th in _by_css(driver, "#atlas thead th") if th.text == text)  # the sort arrows are CSS, not text


def _cell(driver, label: str, release: str):
    row = next(tr for tr in _by_css(driver, "#atlas tbody tr") if tr.find_element("css selector", "th").text == label)
    return row.find_element("css selector", f'td[data-release="{release}"]')


def test_the_table_shows_every_downstream_and_release(opened):
    atlas = _atlas()
    assert [th.text for th in _by_css(opened, "#atlas thead th")] == ["downstream", *RELEASES]
    assert _row_labels(opened) == [row.label for row in atlas.rows]
    for row in atlas.rows:
        texts = [_cell(opened, row.label, r).text for r in RELEASES]
        assert all(texts), (row.label, texts)
    assert [_cell(opened, "drafter 0.3.0", r).text for r in RELEASES] == ["clean", "clean", "▲ breaks 2", "breaks 3"]
    assert _cell(opened, "gone 9.9", "0.10.0").text == "cannot read"
    assert _cell(opened, "sampler 1.2", "0.10.0").text == "conditional only"
    assert _cell(opened, "early 0.1", "0.10.0").text == "does not use prov"
    assert "6 downstreams x 4 releases" in opened.find_element("tag name", "p").text


def test_a_downstream_that_does_not_use_the_provider_has_its_own_colour_and_legend(opened):
    colour = {name: _cell(opened, label, "0.10.0").value_of_css_property("background-color")
              for name, label in (("unused", "early 0.1"), ("clean", "plugin 2.0"), ("unreadable", "gone 9.9"))}  # fmt: skip
    assert len(set(colour.values())) == 3, colour
    legend = opened.find_element("css selector", "p.legend")
    assert "does not use prov" in legend.text
    assert legend.find_element("css selector", "span.unused").value_of_css_property("background-color") == colour["unused"]


def test_a_click_on_a_release_sorts_worst_first_and_a_second_click_reverses(opened):
    header = _header(opened, "0.12.0")
    header.click()
    # kvcache breaks 5, sampler 4, drafter 2; then clean; then does not use; then cannot read
    worst_first = ["kvcache 0.5.6", "sampler 1.2", "drafter 0.3.0", "plugin 2.0", "early 0.1", "gone 9.9"]
    assert _row_labels(opened) == worst_first and header.get_attribute("aria-sort") == "descending"
    header.click()
    assert _row_labels(opened) == worst_first[::-1] and header.get_attribute("aria-sort") == "ascending"
    downstream = _header(opened, "downstream")
    downstream.click()  # by name, A to Z first
    assert _row_labels(opened) == sorted(worst_first) and header.get_attribute("aria-sort") is None


def test_scrolled_down_and_right_the_releases_and_the_names_stay_in_view(opened):
    """On an atlas larger than the window, the header row sticks to the top and the downstreams'
    names to the left edge, above the cells scrolling under them, each name level with its row."""
    seen = opened.execute_script("""
      var table = document.getElementById("atlas");
      table.style.width = "4000px";  // as wide as an atlas of many releases
      document.body.style.paddingBottom = "3000px";  // as long as one of many downstreams
      window.scrollTo(600, table.tBodies[0].rows[1].offsetTop + 150);
      function box(element) { var r = element.getBoundingClientRect(); return [Math.round(r.left), Math.round(r.top)]; }
      function shown(x, y) { var found = document.elementFromPoint(x, y); return found && found.closest("th"); }
      var corner = table.tHead.rows[0].cells[0], bottom = corner.getBoundingClientRect().bottom;
      return {corner: box(corner), cornerOnTop: shown(2, 2) === corner, release: box(table.tHead.rows[0].cells[1]),
              rows: Array.prototype.map.call(table.tBodies[0].rows, function (tr) {
                var name = box(tr.cells[0]);
                return {name: name, cell: box(tr.cells[1]), hidden: name[1] < bottom, onTop: shown(2, name[1] + 2) === tr.cells[0]};
              })};
    """)
    assert seen["corner"] == [0, 0] and seen["cornerOnTop"] and seen["release"][1] == 0
    rows = seen["rows"]
    assert all(row["name"][0] == 0 and row["name"][1] == row["cell"][1] for row in rows), rows
    assert any(row["hidden"] for row in rows) and all(row["onTop"] for row in rows if not row["hidden"]), rows


def test_a_cell_opens_on_its_findings(opened):
    cell = _cell(opened, "drafter 0.3.0", "0.12.0")
    details = cell.find_element("tag name", "details")
    items = cell.find_elements("tag name", "li")
    assert details.get_property("open") is False and not any(li.is_displayed() for li in items)
    cell.find_element("tag name", "summary").click()
    assert details.get_property("open") is True and all(li.is_displayed() for li in items)
    shown = [li.text for li in items]
    assert shown == [f"{f.site} {f.severity} {f.rule}: {f.message}" for f in (KEYWORD, MISSING)]
    assert "<eos_token_id>" in shown[0] and not cell.find_elements("tag name", "eos_token_id")  # text, not markup
    unreadable = _cell(opened, "gone 9.9", "0.11.0")
    unreadable.find_element("tag name", "summary").click()
    assert unreadable.find_element("tag name", "li").text == GONE
    assert not _cell(opened, "plugin 2.0", "0.10.0").find_elements("tag name", "details")  # nothing to open


def test_each_downstream_s_first_broken_release_is_marked(opened):
    for row in _atlas().rows:
        marked = [r for r in RELEASES if "first-broken" in _cell(opened, row.label, r).get_attribute("class").split()]
        assert marked == ([row.first_broken] if row.first_broken else []), row.label
    cell = _cell(opened, "sampler 1.2", "0.11.0")
    assert cell.find_element("css selector", ".mark").is_displayed()
    assert cell.value_of_css_property("outline-style") == "solid"
    assert _cell(opened, "sampler 1.2", "0.12.0").value_of_css_property("outline-style") == "none"


def test_the_page_as_seen(opened, tmp_path):
    """One screenshot, a cell open, for a person to look at (the test's tmp dir keeps it)."""
    _cell(opened, "drafter 0.3.0", "0.12.0").find_element("tag name", "summary").click()
    shot = tmp_path / "atlas.png"
    assert opened.save_screenshot(str(shot)) and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_real_sweep_s_page(browser, toy_atlas, tmp_path):
    """The page of a real sweep (the toy provider's atlas): its findings as the engine words them."""
    from tests.matrix import matrix_toy as toy

    _open(browser, toy_atlas, tmp_path)
    assert [th.text for th in _by_css(browser, "#atlas thead th")] == ["downstream", *toy_atlas.releases]
    user, gone = toy_atlas.rows
    assert _row_labels(browser) == [user.label, gone.label]
    broken = _cell(browser, user.label, toy.FIRST_CHANGED)
    assert "first-broken" in broken.get_attribute("class").split()
    broken.find_element("tag name", "summary").click()
    expected = next(c for c in user.cells if c.release == toy.FIRST_CHANGED).findings
    assert [li.text for li in broken.find_elements("tag name", "li")] == [f"{f.site} {f.severity} {f.rule}: {f.message}" for f in expected]
    assert {_cell(browser, gone.label, r).text for r in toy_atlas.releases} == {"cannot read"}
    assert _console_errors(browser) == []


def test_a_script_error_would_be_seen_on_the_console(browser, tmp_path):
    """The console check above is not blind: an error thrown by a page's script is read back."""
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><script>undefinedFunction();</script></body></html>", encoding="utf-8")
    _console_errors(browser)
    browser.get(page.as_uri())
    assert any("undefinedFunction" in message for message in _console_errors(browser))


@pytest.mark.parametrize(("required", "exit_code", "outcome"), [("1", 1, "1 error"), ("", 0, "1 skipped")])
def test_without_a_browser_ci_fails_and_elsewhere_it_skips(tmp_path, required, exit_code, outcome):
    """An empty PATH hides any browser; APIAUDIT_REQUIRE_BROWSER=1 (.ci/run) turns the skip into a failure."""
    env = {**os.environ, "PATH": str(tmp_path / "empty"), "APIAUDIT_REQUIRE_BROWSER": required}
    test = f"{Path(__file__).name}::test_the_table_shows_every_downstream_and_release"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--basetemp={tmp_path / 'run'}", test]
    run = subprocess.run(command, cwd=Path(__file__).parent, env=env, capture_output=True, text=True)
    assert run.returncode == exit_code and outcome in run.stdout, run.stdout
