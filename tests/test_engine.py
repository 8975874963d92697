"""The engine's seam: `prepare` readies a release once, `check_file` runs every per-file rule on the
file as the consumer stage parsed it (no re-parse), and says which provider calls it bound."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from apiaudit import sources
from apiaudit.audit import rulebook_for, scan
from apiaudit.consumer import collect
from apiaudit.engine import check_file, consumer_context, prepare
from apiaudit.provider.records import SymbolKind

PROVIDER = {
    "toyeng/__init__.py": """\
        from toyeng.client import Client, make

        __version__ = "1.0"
    """,
    "toyeng/client.py": """\
        import warnings


        class Client:
            def start(self, a, b=1):
                return a

            def finish(self):
                return None


        def make(x, *, flag=False):
            return x


        def old(x):
            warnings.warn("old() goes in 2.0", DeprecationWarning)
            return x
    """,
}
RULES = """\
    [provider]
    name = "toyeng"

    [[pattern]]
    id = "toy-needs-finish"
    severity = "warning"
    versions = ">=0"
    kind = "call-not-followed-by"
    method = "start"
    then = "finish"
    message = "start() must be followed by finish()"
"""
JOB = """\
    from toyeng import Client, make
    from toyeng.client import old


    def run():
        c = Client()
        c.start(
            1,
            b=2,
        )
        make(1, flg=True)
        old(3)
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


@pytest.fixture
def toy(tmp_path):
    _write(tmp_path / "provider", PROVIDER)
    _write(tmp_path / "rules", {"toyeng.toml": RULES})
    _write(tmp_path / "consumer", {"job.py": JOB})
    return tmp_path


def _setup(toy: Path):
    tree = sources.resolve(str(toy / "provider" / "toyeng"), cache_dir=toy / "cache")
    book = rulebook_for([toy / "rules"], tree)
    setup = prepare(tree, book)
    consumer = sources.resolve(str(toy / "consumer"), cache_dir=toy / "cache")
    return setup, collect(consumer, setup.options)


def _scan(toy: Path):
    return scan([str(toy / "consumer")], str(toy / "provider" / "toyeng"), rules_dirs=[toy / "rules"],
                cache_dir=toy / "cache", use_index_cache=False)  # fmt: skip


def test_scan_is_prepare_then_check_file_per_file(toy):
    report = _scan(toy)
    setup, files = _setup(toy)
    context = consumer_context(setup, "consumer", files)
    seamed = [f for file in files for f in check_file(setup, file, consumer=context).findings]
    key = lambda f: (f.rule, f.path, f.line, f.column, f.param, f.message)  # noqa: E731
    assert sorted(map(key, report.findings)) == sorted(map(key, seamed))
    assert {f.rule for f in report.findings} == {"toy-needs-finish", "unexpected-keyword", "deprecated-use"}


def test_check_file_parses_no_consumer_file(toy, monkeypatch):
    setup, files = _setup(toy)
    parsed: list[str] = []
    real_parse = ast.parse

    def recording_parse(source, *args, **kwargs):
        parsed.append(source if isinstance(source, str) else source.decode("utf-8", "replace"))
        return real_parse(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", recording_parse)
    (file,) = files
    found = check_file(setup, file)
    assert {f.rule for f in found.findings} == {"toy-needs-finish", "unexpected-keyword", "deprecated-use"}
    assert not [text for text in parsed if "def run():" in text]  # provider files may be read; the consumer's never


def test_only_runs_the_rules_asked_for_and_calls_say_what_was_bound(toy):
    setup, (file,) = _setup(toy)
    found = check_file(setup, file, only={"unexpected-keyword"})
    assert [(f.rule, f.line, f.param) for f in found.findings] == [("unexpected-keyword", 11, "flg")]
    (bound,) = [c for c in found.calls_on_line(11)]
    assert bound.callee.path == "toyeng.client.make"
    assert [p.name for p in (bound.fallback or bound.signatures[0]).params] == ["x", "flag"]
    assert [f.rule for f in check_file(setup, file, only={"toy-needs-finish"}).findings] == ["toy-needs-finish"]
    assert check_file(setup, file, only={"no-such-rule"}).findings == ()


def test_pattern_findings_show_the_whole_call(toy):
    (finding,) = [f for f in _scan(toy).findings if f.rule == "toy-needs-finish"]
    assert (finding.line, finding.end_line) == (7, 10)
    assert finding.source == "c.start(\n    1,\n    b=2,\n)"


def test_index_members_are_symbols_along_the_mro(toy):
    setup, _ = _setup(toy)
    members = {m.name: m for m in setup.index.members("toyeng.client.Client")}
    assert {"start", "finish"} <= set(members)
    assert members["start"].kind is SymbolKind.FUNCTION
    assert members["start"].location == "toyeng/client.py:5"
    module = {m.name: m for m in setup.index.members("toyeng.client")}
    assert module["Client"].kind is SymbolKind.CLASS and module["make"].kind is SymbolKind.FUNCTION
