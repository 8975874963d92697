"""Resolving a distribution installed in this Python, from its metadata only (never importing it)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest

from apiaudit.errors import InputError
from apiaudit.sources import resolve
from apiaudit.sources.installed import resolve_installed


def test_installed_distribution_resolves_to_its_package():
    tree = resolve("click")

    assert tree.kind == "installed"
    assert tree.name == "click"
    assert tree.version == metadata.version("click")
    assert tree.packages == ("click",)
    assert (tree.root / "click" / "__init__.py").is_file()
    assert tree.origin().version == tree.version


def test_resolving_an_installed_distribution_does_not_import_it():
    # A fresh interpreter: nothing else has imported iniconfig there.
    probe = textwrap.dedent(
        """
        import sys
        from apiaudit.sources import resolve
        tree = resolve("iniconfig")
        print(tree.packages, "iniconfig" in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=Path(__file__).parents[2]
    ).stdout.strip()
    assert out == "('iniconfig',) False"


def test_distribution_that_is_not_installed_is_one_clear_error():
    with pytest.raises(InputError) as caught:
        resolve("apiaudit-no-such-dist")
    message = str(caught.value)
    assert message.startswith("apiaudit-no-such-dist is not installed in this Python (")
    assert "apiaudit-no-such-dist==VERSION" in message
    assert "\n" not in message


def make_dist_info(site: Path, name: str, version: str, files: dict[str, str]) -> Path:
    """Write a minimal *.dist-info (METADATA + RECORD + extra files) into `site`."""
    dist_info = site / f"{name}-{version}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    record = [f"{name}-{version}.dist-info/METADATA,,", f"{name}-{version}.dist-info/RECORD,,"]
    for rel, text in files.items():
        target = (site / rel) if not rel.startswith(f"{name}-{version}.dist-info/") else dist_info / Path(rel).name
        if not rel.startswith(".."):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        record.append(f"{rel},,")
    (dist_info / "RECORD").write_text("\n".join(record) + "\n")
    return dist_info


def test_regular_install_packages_come_from_record(tmp_path):
    site = tmp_path / "site-packages"
    make_dist_info(
        site,
        "demo_dist",
        "1.2.3",
        {
            "demo/__init__.py": "",
            "demo/core.py": "",
            "demo_helpers.py": "",
            "../../bin/demo": "",  # console script outside site-packages
            "__editable___other_finder.py": "",  # install machinery, not this distribution's code
        },
    )

    tree = resolve_installed("demo-dist", search_path=[str(site)])

    assert tree.version == "1.2.3"
    assert tree.root == site.resolve()
    assert tree.packages == ("demo", "demo_helpers")
    assert {p.name for p in tree.python_files()} == {"__init__.py", "core.py", "demo_helpers.py"}


def test_editable_install_with_pth_points_at_the_source(tmp_path):
    source = tmp_path / "checkout" / "src"
    (source / "edpkg").mkdir(parents=True)
    (source / "edpkg" / "__init__.py").write_text("")
    site = tmp_path / "site-packages"
    dist_info = make_dist_info(site, "edpkg", "0.1.dev0", {"_edpkg.pth": f"{source}\n"})
    (dist_info / "direct_url.json").write_text(
        json.dumps({"url": (tmp_path / "checkout").as_uri(), "dir_info": {"editable": True}})
    )

    tree = resolve_installed("edpkg", search_path=[str(site)])

    assert tree.root == source.resolve()
    assert tree.packages == ("edpkg",)
    assert tree.kind == "installed"


def test_editable_install_with_setuptools_finder_is_read_not_run(tmp_path):
    source = tmp_path / "checkout"
    (source / "finderpkg").mkdir(parents=True)
    (source / "finderpkg" / "__init__.py").write_text("")
    site = tmp_path / "site-packages"
    finder = textwrap.dedent(
        f"""
        raise RuntimeError("apiaudit must never execute this file")
        MAPPING = {{'finderpkg': {str(source / 'finderpkg')!r}}}
        """
    )
    make_dist_info(
        site,
        "finderpkg",
        "2.0",
        {
            "__editable__.finderpkg-2.0.pth": (
                "import __editable___finderpkg_2_0_finder; __editable___finderpkg_2_0_finder.install()\n"
            ),
            "__editable___finderpkg_2_0_finder.py": finder,
        },
    )

    tree = resolve_installed("finderpkg", search_path=[str(site)])

    assert tree.root == source.resolve()
    assert tree.packages == ("finderpkg",)


def test_editable_install_whose_source_is_gone_is_an_error(tmp_path):
    site = tmp_path / "site-packages"
    dist_info = make_dist_info(site, "gonepkg", "1.0", {})
    (dist_info / "direct_url.json").write_text(
        json.dumps({"url": (tmp_path / "deleted").as_uri(), "dir_info": {"editable": True}})
    )
    with pytest.raises(InputError, match="editable install but its source was not found"):
        resolve_installed("gonepkg", search_path=[str(site)])
