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


def test_what_a_store_puts_in_an_attribute_is_a_literal_a_built_provider_object_or_other(tmp_path):
    """`stored_value`, for the attribute stores `callsites.find_attribute_values` reads: a built
    object as `not_none` reads one (a module-level name of a provider class, not a parameter or a
    local rebinding it); at module level or in a class body (no function), the module's names."""
    import ast

    from apiaudit.provider.arguments import stored_value

    index = _index(tmp_path, "")
    tree = ast.parse("def f(CacheConfig, x):\n    pass\n")
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)

    def value(text: str, inside=None):
        return stored_value(index, inside, "toy.factory", ast.parse(text, mode="eval").body)

    assert value("False") == ("literal", "False") and value("None") == ("literal", "None") and value("'on'") == ("literal", "'on'")
    assert value("toy.cache.CacheConfig()") == ("other", "")  # `toy` is no name of toy.factory
    assert value("make()") == ("other", "") and value("x") == ("other", "") and value("[1]") == ("other", "")
    index = _index(tmp_path, "from toy.cache import CacheConfig\n")
    assert value("CacheConfig()") == ("built", "toy.cache.CacheConfig")
    assert value("CacheConfig()", function) == ("other", "")  # the parameter of that name
