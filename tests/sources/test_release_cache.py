"""Released wheels: fetched with real pip, reduced to .py files, cached, reused, rebuilt when broken.

Offline tests build a tiny wheel and serve it to the real pip through --find-links
(PIP_NO_INDEX); `network` tests fetch a real small release (speculators==0.3.0).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version
from wheel_helpers import build_wheel

from apiaudit.errors import InputError
from apiaudit.sources import SourceWarning, release_versions, resolve
from apiaudit.sources import release as release_module
from apiaudit.sources.cache import MARKER_NAME, releases_beside

SMALL_RELEASE = "speculators==0.3.0"


class Recorder:
    """A progress reporter that remembers every step."""

    def __init__(self) -> None:
        self.steps: list[str] = []

    def step(self, message: str) -> None:
        self.steps.append(message)


def forbid_pip(monkeypatch) -> None:
    def refuse(args):
        raise AssertionError(f"pip was run although the release is cached: {args}")

    monkeypatch.setattr(release_module, "_run_pip", refuse)


def test_release_is_reduced_to_python_files_and_cached(tmp_path, local_index, monkeypatch):
    cache_dir = tmp_path / "cache"
    progress = Recorder()

    tree = resolve("toypkg==1.0", cache_dir=cache_dir, progress=progress)

    assert (tree.kind, tree.name, tree.version) == ("release", "toypkg", "1.0")
    assert tree.root == cache_dir / "releases" / "toypkg-1.0"
    assert tree.packages == ("toypkg",)  # from top_level.txt
    on_disk = sorted(p.relative_to(tree.root).as_posix() for p in tree.root.rglob("*") if p.is_file())
    assert on_disk == [
        MARKER_NAME,
        "toypkg-1.0.dist-info/METADATA",
        "toypkg-1.0.dist-info/RECORD",
        "toypkg-1.0.dist-info/entry_points.txt",  # the plugins a provider loads from it
        "toypkg-1.0.dist-info/top_level.txt",
        "toypkg/__init__.py",
        "toypkg/mod.py",
        "toypkg/mod.pyi",
        "toypkg_extra/__init__.py",  # .data/purelib installs at the root
    ]
    assert not list(cache_dir.rglob("*.whl")), "the wheel must be deleted after extraction"
    assert not [p for p in (cache_dir / "releases").iterdir() if p.name not in ("toypkg-1.0", ".files")], "no work folders left"
    marker = json.loads((tree.root / MARKER_NAME).read_text())
    assert marker["wheel"] == "toypkg-1.0-py3-none-any.whl"
    assert marker["file_count"] == len(on_disk) - 1
    assert len(marker["wheel_sha256"]) == 64
    assert progress.steps[0] == "fetching toypkg==1.0 (first time only)"
    assert "extracting 4 .py files" in progress.steps

    assert tree.fetched  # this resolution downloaded the wheel

    forbid_pip(monkeypatch)
    again = resolve("toypkg==1.0", cache_dir=cache_dir)
    assert again == tree
    assert not again.fetched  # served from the cache


def test_unknown_version_names_the_newest_release(tmp_path, local_index):
    progress = Recorder()
    with pytest.raises(InputError) as caught:
        resolve("toypkg==7.0", cache_dir=tmp_path / "cache", progress=progress)
    assert str(caught.value) == "toypkg has no release 7.0; newest is 1.0"
    assert not (tmp_path / "cache" / "releases" / "toypkg-7.0").exists()
    assert progress.steps == []  # nothing about fetching (or a fallback wheel) for a release that is not there


@pytest.mark.skipif(sys.version_info[:2] == (3, 12) and sys.platform == "linux", reason="the fallback wheel is this interpreter's")
def test_a_release_with_no_wheel_for_here_is_announced_then_fetched_for_the_fallback(tmp_path, local_index):
    built = build_wheel(tmp_path / "other", "toypkg", "2.0", {"toypkg/__init__.py": "X = 2\n"})
    built.rename(local_index / "toypkg-2.0-cp312-cp312-manylinux_2_17_x86_64.whl")
    progress = Recorder()
    tree = resolve("toypkg==2.0", cache_dir=tmp_path / "cache", progress=progress)
    assert tree.version == "2.0"
    assert progress.steps[0] == "fetching toypkg==2.0 (first time only)"
    assert progress.steps[1].startswith("no toypkg==2.0 wheel for this Python/platform; fetching the linux x86_64 CPython 3.12 one")


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda root: (root / MARKER_NAME).unlink(), id="marker-deleted"),
        pytest.param(lambda root: (root / "toypkg" / "mod.py").unlink(), id="file-deleted"),
        pytest.param(lambda root: (root / "toypkg" / "mod.py").write_text(""), id="file-truncated"),
        pytest.param(lambda root: (root / MARKER_NAME).write_text("{not json"), id="marker-garbled"),
    ],
)
def test_broken_cache_entry_is_rebuilt_with_one_line_notice(tmp_path, local_index, damage):
    cache_dir = tmp_path / "cache"
    tree = resolve("toypkg==1.0", cache_dir=cache_dir)
    damage(tree.root)

    progress = Recorder()
    rebuilt = resolve("toypkg==1.0", cache_dir=cache_dir, progress=progress)

    assert rebuilt == tree
    assert rebuilt.fetched  # a broken entry is fetched again, and says so
    assert (rebuilt.root / "toypkg" / "mod.py").read_text() == "def f(a, *, b=1): ...\n"
    assert (rebuilt.root / MARKER_NAME).is_file()
    assert progress.steps[0].startswith(f"cache entry {tree.root} is broken (")
    assert "\n" not in progress.steps[0]
    assert progress.steps[1] == "fetching toypkg==1.0 (first time only)"


def test_broken_cache_entry_without_reporter_warns(tmp_path, local_index):
    cache_dir = tmp_path / "cache"
    tree = resolve("toypkg==1.0", cache_dir=cache_dir)
    (tree.root / MARKER_NAME).unlink()
    with pytest.warns(SourceWarning, match="is broken"):
        resolve("toypkg==1.0", cache_dir=cache_dir)


def _as_layout_1(root, drop: str | None) -> None:
    """Make the entry what an apiaudit that kept no entry_points.txt left: without `drop`, its
    marker without `layout` (the files it lists, their count and digest redone)."""
    from apiaudit.sources import cache

    if drop:
        (root / drop).unlink()
    marker = json.loads((root / MARKER_NAME).read_text())
    marker.pop("layout")
    files = cache.tree_files(root)
    marker.update(file_count=len(files), tree_digest=cache.tree_digest(root, files))
    marker["sha256"] = {rel: cache.file_sha256(root / rel) for rel in files}
    (root / MARKER_NAME).write_text(json.dumps(marker))


def test_an_entry_extracted_before_entry_points_were_kept_is_fetched_again(tmp_path, local_index):
    """The wheel's RECORD lists entry_points.txt, which an older layout left out: the entry is
    fetched again, with one line saying why."""
    cache_dir = tmp_path / "cache"
    tree = resolve("toypkg==1.0", cache_dir=cache_dir)
    _as_layout_1(tree.root, "toypkg-1.0.dist-info/entry_points.txt")

    progress = Recorder()
    again = resolve("toypkg==1.0", cache_dir=cache_dir, progress=progress)
    assert again.fetched and (again.root / "toypkg-1.0.dist-info" / "entry_points.txt").is_file()
    assert progress.steps[0] == (
        f"cache entry {tree.root} was extracted by an older apiaudit, without "
        "toypkg-1.0.dist-info/entry_points.txt; fetching toypkg==1.0 again"
    )
    assert not any("first time" in step for step in progress.steps)  # it is not the first time
    assert json.loads((again.root / MARKER_NAME).read_text())["layout"] == 2


def test_an_older_entry_is_used_as_it_is_offline(tmp_path, local_index, monkeypatch):
    """--offline fetches nothing: the entry an older apiaudit extracted stays, and is served."""
    cache_dir = tmp_path / "cache"
    tree = resolve("toypkg==1.0", cache_dir=cache_dir)
    _as_layout_1(tree.root, "toypkg-1.0.dist-info/entry_points.txt")
    before = (tree.root / MARKER_NAME).read_text()
    forbid_pip(monkeypatch)
    progress = Recorder()
    with release_module.fetching_refused():
        again = resolve("toypkg==1.0", cache_dir=cache_dir, progress=progress)
    assert not again.fetched and again.root == tree.root and (tree.root / MARKER_NAME).read_text() == before
    assert progress.steps == [
        f"cache entry {tree.root} was extracted by an older apiaudit, without "
        "toypkg-1.0.dist-info/entry_points.txt; --offline fetches nothing, so it is used as it is"
    ]


def test_an_older_entry_is_kept_when_fetching_it_again_fails(tmp_path, local_index, monkeypatch):
    """No network (or no such wheel any more): the older entry comes back and is served."""
    cache_dir = tmp_path / "cache"
    tree = resolve("toypkg==1.0", cache_dir=cache_dir)
    _as_layout_1(tree.root, "toypkg-1.0.dist-info/entry_points.txt")
    before = (tree.root / MARKER_NAME).read_text()

    def offline(*args, **kwargs):
        raise InputError("cannot reach the package index")

    monkeypatch.setattr(release_module, "_fetch_by_ranges", lambda *a, **k: None)
    monkeypatch.setattr(release_module, "_download_wheel", offline)
    progress = Recorder()
    again = resolve("toypkg==1.0", cache_dir=cache_dir, progress=progress)
    assert not again.fetched and again.root == tree.root and (tree.root / MARKER_NAME).read_text() == before
    assert progress.steps[-1] == (
        f"cache entry {tree.root} was extracted by an older apiaudit, without toypkg-1.0.dist-info/entry_points.txt, "
        "and fetching it again failed (cannot reach the package index): it is used as it is"
    )
    assert sorted(p.name for p in (cache_dir / "releases").iterdir() if "toypkg" in p.name) == ["toypkg-1.0"]


def test_an_older_entry_of_a_wheel_without_entry_points_is_upgraded_in_place(tmp_path, local_index, monkeypatch):
    """Nothing more to keep (its RECORD lists no entry_points.txt): the marker is upgraded, once,
    and the entry served as it is."""
    cache_dir = tmp_path / "cache"
    tree = resolve("toypkg==0.9", cache_dir=cache_dir)
    _as_layout_1(tree.root, None)
    forbid_pip(monkeypatch)
    progress = Recorder()
    again = resolve("toypkg==0.9", cache_dir=cache_dir, progress=progress)
    assert not again.fetched and progress.steps == []
    assert json.loads((again.root / MARKER_NAME).read_text())["layout"] == 2


def test_unreachable_index_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # nothing listens on the discard port
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "no-links"))
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_NO_INDEX", raising=False)
    (tmp_path / "no-links").mkdir()

    with pytest.raises(InputError) as caught:
        resolve("speculators==0.3.0", cache_dir=tmp_path / "cache")
    assert str(caught.value) == "could not reach the package index to fetch speculators==0.3.0"

    with pytest.raises(InputError, match="could not reach the package index"):
        release_versions("speculators")


@pytest.mark.parametrize("spec", ["vllm==", "vllm==not a version", "vllm==1.0==2"])
def test_malformed_release_spec_is_rejected_before_pip(spec, monkeypatch, tmp_path):
    forbid_pip(monkeypatch)
    with pytest.raises(InputError):
        resolve(spec, cache_dir=tmp_path)


# --- wheel members -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "member",
    # the last two name a file another member may name too (`pkg/escape.py`): one name, one file
    ["../escape.py", "/abs/escape.py", "pkg/../../escape.py", "C:/escape.py", "pkg\\..\\escape.py", "pkg//escape.py", "pkg/./escape.py"],
)
def test_wheel_member_escaping_the_cache_is_refused(tmp_path, member):
    wheel = build_wheel(tmp_path / "wheels", "evil", "1.0", {"evil/__init__.py": "", member: "boom = 1\n"})
    dest = tmp_path / "out" / "tree"
    with pytest.raises(InputError, match="unsafe member path"):
        release_module._extract_wheel(wheel, dest, "evil", "1.0", None)
    assert not list((tmp_path).rglob("escape.py"))


def test_packages_without_top_level_txt_are_the_folders_holding_python(tmp_path):
    wheel = build_wheel(
        tmp_path / "wheels",
        "multi",
        "1.0",
        {"alpha/__init__.py": "", "beta/sub/mod.py": "", "gamma.py": "", "assets/logo.png": b"\x89PNG"},
    )
    dest = tmp_path / "tree"
    release_module._extract_wheel(wheel, dest, "multi", "1.0", None)
    assert release_module.release_packages(dest) == ("alpha", "beta", "gamma")


# --- the real package index ----------------------------------------------------------------


@pytest.mark.network
def test_real_release_is_fetched_once_then_reused_offline(tmp_path, monkeypatch):
    cache_dir = tmp_path / "cache"
    progress = Recorder()

    tree = resolve(SMALL_RELEASE, cache_dir=cache_dir, progress=progress)

    assert (tree.kind, tree.name, tree.version) == ("release", "speculators", "0.3.0")
    assert tree.packages == ("speculators",)
    files = tree.python_files()
    assert files and all(f.suffix == ".py" and f.is_relative_to(tree.root / "speculators") for f in files)
    assert not list(cache_dir.rglob("*.whl"))
    assert any(step.startswith("extracting ") for step in progress.steps)

    forbid_pip(monkeypatch)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    assert resolve(SMALL_RELEASE, cache_dir=cache_dir) == tree


@pytest.mark.network
def test_real_unknown_project_is_one_clear_error(tmp_path):
    with pytest.raises(InputError) as caught:
        resolve("apiaudit-surely-unpublished-project==1.0", cache_dir=tmp_path)
    assert str(caught.value) == "no distribution named apiaudit-surely-unpublished-project on the package index"


@pytest.mark.network
def test_real_unknown_version_names_a_published_newest(tmp_path):
    with pytest.raises(InputError) as caught:
        resolve("speculators==999.0", cache_dir=tmp_path)
    message = str(caught.value)
    assert message.startswith("speculators has no release 999.0; newest is ")
    assert Version(message.rsplit(" ", 1)[-1]) >= Version("0.3.0")


@pytest.mark.network
def test_real_release_versions_are_oldest_first():
    versions = release_versions("speculators")
    assert "0.3.0" in versions
    assert versions == sorted(versions, key=Version)
    assert not any(Version(v).is_prerelease for v in versions)
    with pytest.raises(InputError, match="no distribution named"):
        release_versions("apiaudit-surely-unpublished-project")


@pytest.mark.network
def test_shared_release_cache_fixture_serves_real_releases(released, monkeypatch):
    tree = released(SMALL_RELEASE)
    forbid_pip(monkeypatch)
    assert released(SMALL_RELEASE) == tree


# Fetches one release in a process of its own and says whether it fetched or found it.
FETCH_ONE = """
import sys
from pathlib import Path
from apiaudit.sources.release import fetch_release

class Steps:
    def step(self, message):
        print("step:", message, flush=True)

tree = fetch_release("toypkg", "1.0", cache_dir=Path(sys.argv[1]), progress=Steps())
print("fetched:", tree.fetched, sorted(p.name for p in tree.root.iterdir() if p.suffix == ".py" or p.is_dir()))
"""


def test_two_cold_scans_at_once_fetch_a_release_once(tmp_path, serve):
    from apiaudit.sources.cache import fetch_lock

    wheel = build_wheel(tmp_path / "wheels", "toypkg", "1.0", {"toypkg/__init__.py": "def f(a): ...\n"}, record=True)
    index = serve([wheel])
    cache_dir = tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    # Both processes start while the release's fetch lock is held (here, as a third process's
    # fetch would hold it): both wait, then one fetches and the other finds the entry published.
    with fetch_lock(cache_dir, "toypkg", "1.0"):
        runs = [
            subprocess.Popen([sys.executable, "-c", FETCH_ONE, str(cache_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env)
            for _ in range(2)
        ]  # fmt: skip
        first_lines = [run.stdout.readline() for run in runs]
    assert first_lines == ["step: waiting for another apiaudit process fetching toypkg==1.0\n"] * 2, first_lines
    outputs = [run.communicate(timeout=120) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    said = [out for out, _ in outputs]
    assert sorted("fetched: True" in out for out in said) == [False, True], said  # one fetched, one found it
    assert all("'toypkg'" in out for out in said)
    # The wheel was read once (a small wheel: one read of its tail holds it all), by one process.
    assert len(index.wheel_reads()) == 1, index.requests
    assert list((cache_dir / "locks").iterdir()) == []  # each holder removed its lock file


def test_the_releases_beside_an_entry_are_its_distributions_complete_ones(tmp_path):
    releases = tmp_path / "releases"
    for folder in ("prov-1.0", "prov-2.0", "prov-3.0", "prov-plugin-1.0", "other-1.0"):
        (releases / folder).mkdir(parents=True)
        if folder != "prov-3.0":  # still being written: no marker yet
            (releases / folder / MARKER_NAME).write_text("{}", encoding="utf-8")
    found = releases_beside(releases / "prov-2.0", "Prov")
    assert [(r.name, r.version, r.root.name) for r in found] == [("Prov", "1.0", "prov-1.0")]
