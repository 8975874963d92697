"""What a [[plugin]] factory's construction call passes that is never None (`provider/arguments.py`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from apiaudit.cache import codec
from apiaudit.provider import cache as _index_cache  # noqa: F401 - registers the index records with the codec
from apiaudit.provider.index import ProviderIndex


def _index(root: Path, factory: str) -> ProviderIndex:
    files = {
        "toy/__init__.py": "",
        "toy/cache.py": "class CacheConfig:\n    pass\n",
        "toy/factory.py": factory,
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return ProviderIndex(root, ("toy",))


def test_literals_built_objects_and_parameters_declared_with_one_class_are_never_none(tmp_path):
    index = _index(tmp_path, """
        from typing import TYPE_CHECKING, Optional
        from toy.cache import CacheConfig
        if TYPE_CHECKING:
            from toy.cache import CacheConfig as Layout

        def make():
            return None

        class Factory:
            @classmethod
            def create(cls, config, role: "Layout", cache: "Layout", maybe: "Layout | None", old: Optional[Layout],
                       defaulted: CacheConfig = None, *, rebound: CacheConfig, shadowed: CacheConfig):
                connector_cls = cls.pick(config)
                rebound = make()
                connector_cls(config, role, cache, maybe, old, defaulted, rebound)
                connector_cls("a", [1], CacheConfig(), make(), None, cache=cache, lazy=lambda: 1, nested=shadowed)
                connector_cls(*config, role, key=f"{role}")

                def shadowed():
                    return None
    """)
    first, second, third = index.construction_calls("toy.factory.Factory.create", "connector_cls")
    # config: no annotation; role and cache: one class (declared under TYPE_CHECKING, as a string);
    # maybe, old: Optional; defaulted: a None default; rebound: assigned in the body
    assert first.not_none == (1, 2)
    # literals, a display and a built object; a function's result, None itself, and a parameter the
    # body rebinds (a nested def of its name) are not known
    assert second.not_none == (0, 1, 2, "cache", "lazy")
    assert third.not_none == ("key",)  # positions after *args are not known
    assert codec.from_json(codec.to_json(first)) == first  # kept in the index cache
