"""Extension modules are found from the file tree and from a RECORD, never by importing."""

from __future__ import annotations

from pathlib import Path

from apiaudit.provider.compiled import compiled_modules, compiled_prefix, module_name

STUBBED = Path(__file__).resolve().parents[2] / "fixtures" / "providers" / "stubbed"


def test_module_names_from_extension_paths():
    assert module_name("pkg/sub/_impl.cpython-312-x86_64-linux-gnu.so") == "pkg.sub._impl"
    assert module_name("pkg/_impl.cp312-win_amd64.pyd") == "pkg._impl"
    assert module_name("pkg/lib/libtorch-1.2.so") is None  # a shared library, not a module
    assert module_name("pkg/mod.py") is None


def test_tree_and_record_are_both_read():
    # _speedups is a file in the tree; _native exists only as a RECORD row (a release cache entry).
    assert compiled_modules(STUBBED, ("stubbed",)) == frozenset({"stubbed._speedups", "stubbed._native"})
    assert compiled_modules(STUBBED, ("other",)) == frozenset()


def test_compiled_prefix():
    compiled = frozenset({"pkg._C"})
    assert compiled_prefix("pkg._C._nn.linear", compiled) == "pkg._C"
    assert compiled_prefix("pkg._C", compiled) == "pkg._C"
    assert compiled_prefix("pkg._Cx", compiled) is None


def test_the_record_read_is_part_of_the_index_cache_key():
    from apiaudit.provider.loader import ModuleLoader

    loader = ModuleLoader(STUBBED, ("stubbed",))
    assert "stubbed._native" in loader.compiled
    assert "stubbed-1.0.dist-info/RECORD" in loader.touched
