"""The provider module loader: every module file read is verified and recorded once a run, and
the release's sources are listed in path order."""

from __future__ import annotations

import hashlib
from pathlib import Path

from apiaudit.provider.loader import ModuleLoader


def _tree(tmp_path: Path) -> ModuleLoader:
    files = {
        "prov/__init__.py": "from .a import A\n",
        "prov/a.py": "class A:\n    pass\n",
        "prov/a/__init__.py": "",
        "prov/a/b.py": "B = 1\r\nC = 2\r\n",
        "prov/a_x.py": "X = 1\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(text.encode())
    return ModuleLoader(tmp_path, ("prov",))


def test_a_module_file_is_verified_and_hashed_once_whoever_reads_it(tmp_path):
    loader = _tree(tmp_path)
    seen: list[str] = []
    loader.verify = lambda rel, sha: seen.append(rel)
    list(loader.source_files())
    assert loader.load("prov.a_x") is not None
    assert loader.read_text(tmp_path / "prov" / "a_x.py") == "X = 1\n"
    assert sorted(seen) == sorted(set(seen)) and "prov/a_x.py" in seen
    data = (tmp_path / "prov" / "a_x.py").read_bytes()
    assert loader.touched["prov/a_x.py"] == hashlib.sha256(data).hexdigest()


def test_read_text_gives_universal_newlines_as_a_text_file_read_does(tmp_path):
    loader = _tree(tmp_path)
    assert loader.read_text(tmp_path / "prov" / "a" / "b.py") == "B = 1\nC = 2\n"
    assert loader.read_text(tmp_path / "prov" / "missing.py") is None


def test_sources_come_in_path_order_folder_by_folder(tmp_path):
    loader = _tree(tmp_path)
    modules = [module for module, _ in loader.source_files()]
    expected = sorted((tmp_path / "prov").rglob("*.py"))
    # `sorted(Path.rglob(...))`'s order: prov/__init__, prov/a/__init__, prov/a/b, prov/a.py, prov/a_x
    assert modules == [".".join(p.relative_to(tmp_path).with_suffix("").parts).removesuffix(".__init__") for p in expected]
    assert modules == ["prov", "prov.a", "prov.a.b", "prov.a", "prov.a_x"]
