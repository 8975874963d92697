"""A provider given as a path still has a version: read from what lies beside it, never imported."""

from apiaudit.sources import resolve


def write(path, text=""):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_version_literal_in_the_package(tmp_path):
    write(tmp_path / "pkg" / "__init__.py", '__version__ = "1.2.3"\n')
    assert resolve(str(tmp_path / "pkg")).version == "1.2.3"


def test_a_version_module(tmp_path):
    write(tmp_path / "pkg" / "__init__.py", "from .version import __version__\n")
    write(tmp_path / "pkg" / "version.py", '__version__: str = "0.9.1"\n')
    assert resolve(str(tmp_path / "pkg")).version == "0.9.1"


def test_dist_info_beside_it_wins(tmp_path):
    write(tmp_path / "pkg" / "__init__.py", '__version__ = "0.0.0.dev"\n')
    write(tmp_path / "pkg-2.0.1.dist-info" / "METADATA", "Metadata-Version: 2.1\nName: pkg\nVersion: 2.0.1\n\nbody\n")
    assert resolve(str(tmp_path / "pkg")).version == "2.0.1"


def test_pyproject_of_the_same_project(tmp_path):
    write(tmp_path / "src" / "pkg" / "__init__.py")
    write(tmp_path / "pyproject.toml", '[project]\nname = "pkg"\nversion = "3.1"\n')
    assert resolve(str(tmp_path / "src" / "pkg")).version == "3.1"
    write(tmp_path / "pyproject.toml", '[project]\nname = "other"\nversion = "9"\n')
    assert resolve(str(tmp_path / "src" / "pkg")).version is None  # another project's version is not this package's


def test_nothing_beside_it_means_unknown(tmp_path):
    write(tmp_path / "pkg" / "__init__.py", "__version__ = compute()\n")
    assert resolve(str(tmp_path / "pkg")).version is None


def test_an_overlays_marker_wins_over_a_stale_literal(tmp_path):
    """`apiaudit fix --into` records the release a package was copied from; its own literal may lag."""
    import json

    write(tmp_path / "pkg" / "version.py", '__version__ = "0.2.0"\n')
    write(tmp_path / "pkg" / "__init__.py", "from .version import __version__\n")
    marker = {"format": 1, "source": "/x", "packages": ["pkg"], "releases": {"pkg": {"name": "pkg", "version": "0.3.0"}}}
    write(tmp_path / ".apiaudit-overlay.json", json.dumps(marker))
    assert resolve(str(tmp_path / "pkg")).version == "0.3.0"
    # A marker without the package (or unreadable) says nothing: the literal again.
    write(tmp_path / ".apiaudit-overlay.json", json.dumps({**marker, "releases": {"other": {"name": "o", "version": "9"}}}))
    assert resolve(str(tmp_path / "pkg")).version == "0.2.0"
    write(tmp_path / ".apiaudit-overlay.json", "{not json")
    assert resolve(str(tmp_path / "pkg")).version == "0.2.0"
