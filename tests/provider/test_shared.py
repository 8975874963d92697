"""Work shared among processes that ask one provider index (provider/shared.py): the same
results in the same order as in one process, and what a copy's index learned joins this one's."""

from __future__ import annotations

import sys

import pytest

from apiaudit.infra import workers
from apiaudit.provider.callsites import find_calls
from apiaudit.provider.index import ProviderIndex
from apiaudit.provider.shared import read_shared

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="work is split only where fork is safe (Linux)")


def _provider(root, modules: int) -> ProviderIndex:
    """A provider whose every module calls `step` on a typed receiver (`self.engine: Engine`)."""
    (root / "prov").mkdir(parents=True)
    (root / "prov" / "__init__.py").write_text("")
    (root / "prov" / "engine.py").write_text("class Engine:\n    def step(self, batch, *, block=True):\n        return batch\n")
    for i in range(modules):
        (root / "prov" / f"user{i:03d}.py").write_text(
            "from prov.engine import Engine\n\n\n"
            f"class User{i}:\n"
            "    def __init__(self, engine: Engine):\n"
            "        self.engine = engine\n\n"
            "    def run(self, batch):\n"
            f"        return self.engine.step(batch{', block=False' if i % 2 else ''})\n"
        )  # fmt: skip
    return ProviderIndex(root, ("prov",))


@pytest.fixture
def split_small(monkeypatch):
    monkeypatch.setattr(workers, "MIN_SHARE", 2)  # a split of a few items, as of a large release


def test_the_provider_calls_read_shared_are_those_read_in_one_process(tmp_path, split_small):
    alone = find_calls(_provider(tmp_path / "one", 24), ["step"], workers=1)
    index = _provider(tmp_path / "two", 24)
    shared = find_calls(index, ["step"], workers=2)
    assert len(alone["step"]) == 24
    assert [(c.location, c.receiver, c.keywords) for c in shared["step"]] == [(c.location, c.receiver, c.keywords) for c in alone["step"]]
    assert shared["step"][1].keywords == ("block",) and shared["step"][0].keywords == ()
    assert ("reexported-class", "prov.engine.Engine") in index.answered()  # the receivers' class, as asked


def test_results_come_back_in_item_order_with_what_each_process_learned(tmp_path, split_small):
    index = _provider(tmp_path, 0)
    items = [f"prov.user{i}" for i in range(30)] + ["prov.engine.Engine"]

    def read(dotted: str) -> str:
        found = index.resolve(dotted)
        return type(found).__name__

    seen: list[str] = []
    results = read_shared(index, items, read, workers=2, on_result=seen.append)
    assert results == ["Missing"] * 30 + ["Found"]
    assert sorted(seen) == sorted(results)  # every result seen here as it arrived
    # every question asked, by this process or a copy, is answered here now (the index cache keeps it)
    assert all(("resolve", dotted) in index.answered() for dotted in items)


def test_a_copy_sends_its_answers_but_not_the_map_of_every_name(tmp_path, split_small):
    """Where a missing name is now defined is answered in the process that asks; the map it is
    read from (every top-level name of the release) is made again where needed, never sent."""
    index = _provider(tmp_path, 4)
    items = [f"prov.engine.User{i % 4}" for i in range(30)]  # each defined in its own module, not there

    def moved(dotted: str) -> tuple[str, ...]:
        return index.moved_to(index.resolve(dotted))

    assert read_shared(index, items, moved, workers=2) == [(f"prov.user{i % 4:03d}.User{i % 4}",) for i in range(30)]
    assert all(("defs", f"User{i}") in index.answered() for i in range(4))
    assert ("definitions",) not in index.answers_since(frozenset())[0]
