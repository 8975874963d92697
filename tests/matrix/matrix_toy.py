"""A toy provider with a known history, published as release cache entries (no network).

The entries are written exactly as sources' cache lays them out, so `resolve("toyprov==1.3")`
reads them without fetching; the toy provider is apiaudit's own fixture, not a stand-in for vLLM.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from apiaudit.sources import cache

NAME = "toyprov"
VERSIONS = ("1.0", "1.1", "1.2", "1.3", "1.4")

_BEFORE_RENAME = '''
def connect(host, port=80):
    return (host, port)


class Client:
    def __init__(self, url):
        self.url = url

    def send(self, data):
        return data

    def close(self):
        return None
'''

_AFTER_RENAME = '''
def connect(address, port=80):
    return (address, port)


class Client:
    def __init__(self, url, *, retries):
        self.url = url

    def transmit(self, data):
        return data

    def close(self):
        return None
'''

# The history: 1.3 renames connect(host) to connect(address) and Client.send to
# Client.transmit, and gives Client.__init__ a required keyword-only `retries`.
SOURCES = {"1.0": _BEFORE_RENAME, "1.1": _BEFORE_RENAME, "1.2": _BEFORE_RENAME, "1.3": _AFTER_RENAME, "1.4": _AFTER_RENAME}
FIRST_CHANGED = "1.3"

CONSUMER = '''
from toyprov.api import Client, connect


def run():
    link = connect(host="example.org")
    client = Client("http://example.org")
    client.send(b"payload")
    return link
'''


def publish(cache_dir: Path) -> None:
    """Write every toy release into `cache_dir` as a complete release cache entry."""
    for version in VERSIONS:
        publish_release(cache_dir, NAME, version, {"__init__.py": "", "api.py": SOURCES[version]})


def publish_release(cache_dir: Path, name: str, version: str, modules: dict[str, str], requires: tuple[str, ...] = ()) -> None:
    """One release of package `name` (its `modules` by file name, `requires` as Requires-Dist) as a cache entry."""
    entry = cache.entry_dir(cache_dir, name, version)
    if entry.exists():
        return
    package = entry / name
    package.mkdir(parents=True)
    for file, text in modules.items():
        (package / file).write_text(textwrap.dedent(text), encoding="utf-8")
    seal_entry(entry, name, version, requires)


def seal_entry(entry: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    """Make a folder holding a release's package a complete release cache entry of NAME==VERSION:
    its dist-info (METADATA with `requires` as Requires-Dist, top_level.txt) and the marker written last."""
    info = entry / f"{name}-{version}.dist-info"
    info.mkdir()
    header = "".join(f"Requires-Dist: {r}\n" for r in requires)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{header}\n", encoding="utf-8")
    (info / "top_level.txt").write_text(f"{name}\n", encoding="utf-8")
    files = cache.tree_files(entry)
    marker = cache.Marker(name, version, f"{name}-{version}-py3-none-any.whl", "0" * 64, len(files), cache.tree_digest(entry, files))
    (entry / cache.MARKER_NAME).write_text(marker.to_json(), encoding="utf-8")


def publish_coupled(cache_dir: Path, bridge_requires: tuple[str, ...] = ()) -> str:
    """A released consumer, `toyapp 1.0`, that imports nothing of the toy provider but pins
    `toybridge==1.0`, which does (the toy consumer's code) and declares `bridge_requires`.
    Returns the consumer's spec."""
    publish_release(cache_dir, "toybridge", "1.0", {"__init__.py": "", "main.py": CONSUMER}, bridge_requires)
    publish_release(cache_dir, "toyapp", "1.0", {"__init__.py": "import toybridge\n"}, ("toybridge==1.0",))
    return "toyapp==1.0"


def write_consumer(root: Path, requirement: str | None = None) -> Path:
    """A consumer project using the toy provider; `requirement` goes into its pyproject.toml."""
    package = root / "toyuser"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "main.py").write_text(textwrap.dedent(CONSUMER), encoding="utf-8")
    if requirement is not None:
        (root / "pyproject.toml").write_text(
            f'[project]\nname = "toyuser"\nversion = "0.1"\n[project.optional-dependencies]\nnet = ["{requirement}"]\n',
            encoding="utf-8",
        )
    return package
