"""Each consumer file parsed once on a cold read (`consumer.one_pass`), with the same uses as
reading every file's bindings first."""

from __future__ import annotations

from pathlib import Path

import apiaudit.consumer as consumer_stage
from apiaudit.consumer import collect
from apiaudit.consumer.imports import ConsumerNames
from apiaudit.consumer.one_pass import RecordingNames, import_order, still_valid
from apiaudit.consumer.records import ConsumerOptions
from apiaudit.consumer.values import Const
from apiaudit.sources.base import CodeTree


def test_import_order_puts_the_modules_a_file_imports_first():
    modules = [("pkg.a", False), ("pkg.b", False), ("pkg", True), ("pkg.c", False)]
    texts = [b"from .b import X\n", b"import os\nfrom pkg.c import Y\n", b"", b"x = 1\n"]
    order = import_order(modules, texts)
    assert sorted(order) == [0, 1, 2, 3]
    position = {i: order.index(i) for i in order}
    assert position[3] < position[1] < position[0]  # c before b before a
    assert position[2] < position[0]  # the package's __init__ runs before its modules


def test_import_order_survives_a_cycle():
    modules = [("p.a", False), ("p.b", False)]
    assert sorted(import_order(modules, [b"from .b import x\n", b"from .a import y\n"])) == [0, 1]


def test_a_reading_stays_valid_only_while_every_answer_it_got_is_the_same():
    names = RecordingNames(("engine",), (3, 11, 0))
    names.add({"app.compat.P": "engine.P"}, {"app.consts.N": Const(1)})
    asked = names.start()
    assert names.value("app.compat.P") is not None and names.value("app.other.Q") is None
    assert still_valid(asked, ConsumerNames({"app.compat.P": "engine.P"}, {"app.consts.N": Const(1)}))
    # Q turned out to re-export a provider object: the reading that saw a consumer name is stale.
    assert not still_valid(asked, ConsumerNames({"app.compat.P": "engine.P", "app.other.Q": "engine.Q"}, {}))


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


FILES = {
    "app/__init__.py": "",
    # Sorted first, but reads names the later files export: its first reading is stale.
    "app/a_uses.py": "from app.z_compat import Engine, FLAG\n\ndef go():\n    if FLAG:\n        Engine(size=1)\n",
    "app/z_compat.py": "from engine import Engine\nFLAG = True\n",
}


def _options() -> ConsumerOptions:
    return ConsumerOptions(provider_packages=("engine",))


def test_one_reading_of_each_file_gives_the_uses_of_two(tmp_path, monkeypatch):
    _write(tmp_path, FILES)
    tree = CodeTree(name="app", version=None, root=tmp_path, packages=("app",))
    files = sorted(tmp_path.rglob("*.py"))
    parses: list[str] = []
    real_parse = consumer_stage.parse_quietly

    def counting(source, filename="<unknown>"):
        parses.append(filename)
        return real_parse(source, filename)

    monkeypatch.setattr(consumer_stage, "parse_quietly", counting)
    once = collect(tree, _options(), files=files)
    assert len(parses) == len(files)  # import order: z_compat is read before a_uses
    # Read in the worst order (a_uses before what it imports), the stale reading is redone.
    parses.clear()
    monkeypatch.setattr(consumer_stage, "import_order", lambda modules, texts: list(range(len(modules))))
    worst = collect(tree, _options(), files=files)
    assert len(parses) == len(files) + 1
    assert worst == once
    uses = next(f for f in once if f.path == "app/a_uses.py").uses
    assert any(u.root.name == "engine.Engine" for u in uses)  # the re-export was followed


def test_a_first_reading_asks_the_tables_of_every_call_statement():
    """The growing tables never let a call statement pass as no requirement check: the reading
    is kept on the answers it recorded, so it asks them whatever is known so far."""
    assert RecordingNames(("prov",), (3, 11)).has_requirements is True
