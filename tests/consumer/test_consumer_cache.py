"""The consumer stage's per-file cache: data only, never runs a planted entry, warm equals cold."""

from __future__ import annotations

import ast
import pickle
import textwrap
from pathlib import Path

from apiaudit.consumer import collect
from apiaudit.consumer.records import ConsumerOptions
from apiaudit.sources import resolve


def _tree(tmp_path):
    cons = tmp_path / "cons"
    cons.mkdir()
    (cons / "job.py").write_text(textwrap.dedent("""
        from tinyprov import make
        make(1, c=2)
        class K(make):
            def run(self):
                return self.go(x=1)
    """))
    return resolve(str(cons))


OPTIONS = ConsumerOptions(provider_packages=("tinyprov",))


class _Hostile:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_a_warm_collect_parses_nothing_and_equals_the_cold_one(tmp_path, monkeypatch):
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    cold = collect(tree, OPTIONS, cache_dir=cache)
    assert list((cache / "consumer").glob("*.json"))

    def no_parse(*args, **kwargs):
        raise AssertionError("a warm collect must not parse")

    monkeypatch.setattr(ast, "parse", no_parse)
    assert collect(tree, OPTIONS, cache_dir=cache) == cold


def test_a_planted_pickle_never_runs_and_is_rebuilt(tmp_path, capsys):
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    cold = collect(tree, OPTIONS, cache_dir=cache)
    entry = next((cache / "consumer").glob("*.json"))
    marker = tmp_path / "pickle-ran"
    payload = pickle.dumps({"key": "x", "entries": {}, "boom": _Hostile(marker)})
    entry.with_suffix(".pickle").write_bytes(payload)  # where the pickle cache lived
    entry.write_bytes(payload)
    capsys.readouterr()

    assert collect(tree, OPTIONS, cache_dir=cache) == cold
    assert not marker.exists(), "a cache entry ran code"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rebuilding" in err[0]


def test_a_tampered_entry_is_rebuilt_never_trusted(tmp_path, capsys):
    tree, cache = _tree(tmp_path), tmp_path / "cache"
    cold = collect(tree, OPTIONS, cache_dir=cache)
    entry = next((cache / "consumer").glob("*.json"))
    header, _, payload = entry.read_bytes().partition(b"\n")
    entry.write_bytes(header + b"\n" + payload.replace(b'"c"', b'"d"'))
    capsys.readouterr()
    assert collect(tree, OPTIONS, cache_dir=cache) == cold
    assert "does not match its hash" in capsys.readouterr().err


from apiaudit.consumer import _canonical  # noqa: E402


def test_sets_are_canonical_whatever_their_iteration_order():
    one = frozenset(f"name{i}" for i in range(50))
    other = frozenset(sorted(one, reverse=True))
    assert repr(_canonical({"a": one, "b": [one]})) == repr(_canonical({"b": [other], "a": other}))


def test_a_files_lines_come_back_from_its_bytes_not_the_cache(tmp_path):
    cons = tmp_path / "cons"
    cons.mkdir()
    (cons / "job.py").write_text("from tinyprov import make\n# a line only the file holds\nmake(1, c=2)\n")
    tree, cache = resolve(str(cons)), tmp_path / "cache"
    cold = collect(tree, OPTIONS, cache_dir=cache)
    assert "# a line only the file holds" in cold[0].lines
    entry = next((cache / "consumer").glob("*.json"))
    assert b"a line only the file holds" not in entry.read_bytes()
    warm = collect(tree, OPTIONS, cache_dir=cache)
    assert warm == cold and warm[0].lines == cold[0].lines


def test_a_file_with_crlf_and_a_bad_byte_warms_to_the_same_lines(tmp_path):
    cons = tmp_path / "cons"
    cons.mkdir()
    (cons / "job.py").write_bytes(b"from tinyprov import make\r\nx = '\xff'\r\nmake(1, c=2)\r\n")
    tree, cache = resolve(str(cons)), tmp_path / "cache"
    cold = collect(tree, OPTIONS, cache_dir=cache)
    assert collect(tree, OPTIONS, cache_dir=cache) == cold


def test_string_literals_holding_lone_surrogates_are_cached_and_read_back(tmp_path):
    """`"\\ud800"` in a consumer (pandas' tests have them) is a str the cache must hold: the
    module constant it binds is exported to other files and kept with the file."""
    cons = tmp_path / "cons"
    cons.mkdir()
    (cons / "job.py").write_text('from tinyprov import make\nBAD = "\\ud800"\nPAIR = "\\ud83d" "\\ude00"\nmake(BAD, PAIR)\n')
    tree, cache = resolve(str(cons)), tmp_path / "cache"
    cold = collect(tree, OPTIONS, cache_dir=cache)
    assert list((cache / "consumer").glob("*.json"))
    assert collect(tree, OPTIONS, cache_dir=cache) == cold


def test_the_key_covers_the_walks_modules_too(tmp_path, monkeypatch):
    # The walk's parts are a subpackage (consumer/walk/): a change there must be a new key.
    from apiaudit.consumer import _FileCache
    from apiaudit.consumer.walk import evaluate

    tree = _tree(tmp_path)
    before = _FileCache(tmp_path / "cache", tree, OPTIONS).key
    part, read = Path(evaluate.__file__), Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: read(self) + (b"\n# changed\n" if self == part else b""))
    assert _FileCache(tmp_path / "cache", tree, OPTIONS).key != before
