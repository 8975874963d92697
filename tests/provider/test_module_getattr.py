"""What a module `__getattr__` serves, read from its source (`provider/module_getattr.py`)."""

from __future__ import annotations

import ast
import textwrap

from apiaudit.provider.module_getattr import Service, read


def _read(source: str, module: str = "prov.mod", package: str = "prov") -> Service | None:
    return read(ast.parse(textwrap.dedent(source)), module, package)


def test_no_getattr_no_service():
    assert _read("x = 1\n") is None


def test_a_map_of_getters_serves_its_keys_also_those_added_after_the_literal():
    service = _read("""
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            A: bool = True
        env = {"A": lambda: 1, "B": lambda: 2}
        env.update({"C": lambda: 3}, D=lambda: 4)
        env["E"] = lambda: 5
        env |= {"F": lambda: 6}
        def __getattr__(name):
            "Lazily."
            if name in env:
                return env[name]()
            raise AttributeError(name)
    """)
    assert service == Service(tuple((n, None) for n in "ABCDEF"), closed=True)


def test_a_spread_of_another_literal_and_a_list_of_names():
    service = _read("""
        _BASE = {"A": ".a:A"}
        _ALL = {**_BASE, "B": ".b:B"}
        __all__ = ["C"]
        def __getattr__(name):
            if name in _ALL or name in __all__:
                return _ALL[name]
            raise AttributeError(name)
    """)
    assert service == Service((("A", ".a:A"), ("B", ".b:B"), ("C", None)), closed=True)


def test_a_deprecation_shim_serves_the_name_it_compares_with_the_function_it_imports():
    service = _read("""
        import warnings
        from .types import TokenizerLike
        def __getattr__(name: str):
            if name == "AnyTokenizer":
                warnings.warn("moved", DeprecationWarning)
                return TokenizerLike
            if name == "get_tokenizer":
                from prov.tokenizers import get_tokenizer as impl
                warnings.warn("moved", DeprecationWarning)
                return impl
            raise AttributeError(name)
    """, module="prov.tok")
    assert service == Service(
        (("AnyTokenizer", "prov.types:TokenizerLike"), ("get_tokenizer", "prov.tokenizers:get_tokenizer")),
        closed=True,
        deprecated=(("AnyTokenizer", "moved"), ("get_tokenizer", "moved")),
    )


def test_a_map_of_module_names_imported_then_read_by_the_name():
    service = _read("""
        import importlib
        _CLASS_TO_MODULE = {"ChatConfig": "prov.configs.chat", "Exact": "prov.configs.x:Other"}
        def __getattr__(name):
            if name in _CLASS_TO_MODULE:
                module = importlib.import_module(_CLASS_TO_MODULE[name])
                return getattr(module, name)
            raise AttributeError(name)
    """)
    assert service == Service((("ChatConfig", "prov.configs.chat:ChatConfig"), ("Exact", "prov.configs.x:Other")), closed=True)


def test_an_else_chain_and_a_negated_test_close_the_function():
    chain = _read("""
        def __getattr__(name):
            if name == "current":
                return _make()
            elif name in globals():
                return globals()[name]
            else:
                raise AttributeError(name)
    """)
    assert chain == Service((("current", None),), closed=True)
    negated = _read("""
        def __getattr__(name):
            if name not in globals():
                raise AttributeError(name)
            return globals()[name]
    """)
    assert negated == Service((), closed=True)


def test_a_function_answering_any_name_is_open():
    assert _read("def __getattr__(name):\n    return name.upper()\n") == Service((), closed=False)
    falls_off = _read("def __getattr__(name):\n    if name == 'a':\n        return 1\n")
    assert falls_off == Service((("a", None),), closed=False)


def test_names_that_cannot_be_read_make_the_service_partial():
    computed = _read("""
        _FLAGS = {f"X_{n}": n for n in ("A", "B")}
        def __getattr__(name):
            if name in _FLAGS:
                return 1
            raise AttributeError(name)
    """)
    assert computed is not None and computed.closed and computed.targets == ()
    assert computed.partial == "its names are computed (line 2)"
    changed = _read("""
        env = {"A": 1}
        def register(key):
            env[key] = 2
        def __getattr__(name):
            if name in env:
                return env[name]
            raise AttributeError(name)
    """)
    assert changed is not None and changed.targets == (("A", None),)
    assert changed.partial == "`env` is changed where a reader cannot follow (line 4)"
    other_test = _read("""
        def __getattr__(name):
            if name.startswith("X_"):
                return 1
            raise AttributeError(name)
    """)
    assert other_test == Service((), closed=True, partial="its __getattr__ tests `name.startswith('X_')`")
    not_literal = _read("""
        NAMES = load()
        def __getattr__(name):
            if name in NAMES:
                return 1
            raise AttributeError(name)
    """)
    assert not_literal == Service((), closed=True, partial="its __getattr__ serves the names in `NAMES`, which is not a literal")


def test_a_lookup_with_get_and_a_frozen_set_of_names():
    service = _read("""
        _LAZY = {"attention": "attention", "Exact": "prov.x:Exact"}
        _DENSE = frozenset({"dense_fwd"})
        def __getattr__(name):
            module = _LAZY.get(name)
            if module is not None:
                import importlib
                return getattr(importlib.import_module(f".{module}", __name__), name)
            if name in _DENSE:
                return 1
            raise AttributeError(name)
    """)
    assert service == Service((("Exact", "prov.x:Exact"), ("attention", None), ("dense_fwd", None)), closed=True)


def test_a_branch_that_falls_through_passes_its_names_on():
    """`if name in OLD: warn(...)` without a return: those names go on to what follows, here a
    lookup that serves them; the others reach the `raise` of the else branch."""
    service = _read("""
        import warnings
        OLD = {"a": None}
        def __getattr__(name):
            if name in OLD:
                warnings.warn("old", DeprecationWarning)
            else:
                raise AttributeError(name)
            return _load(name)
    """)
    assert service == Service((("a", None),), closed=True)
    answers_the_rest = _read("""
        def __getattr__(name):
            if name not in ("a", "b"):
                return None
            return 1
    """)
    assert answers_the_rest == Service((("a", None), ("b", None)), closed=False)
