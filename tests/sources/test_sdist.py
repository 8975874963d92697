"""Releases published only as source distributions: their .py files read as data, never built or run.

Offline tests build small sdists (.tar.gz and .zip) in the test and serve them from a local
index (tests/sources/index_server.py) or a --find-links folder to the real pip and to apiaudit;
hostile archives are refused with one `malformed sdist` line and nothing written; the
`network` test reads a real release that publishes no wheel.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from wheel_helpers import build_sdist, build_wheel

from apiaudit.errors import InputError
from apiaudit.sources import release as release_module
from apiaudit.sources import resolve
from apiaudit.sources.archive import DEFAULT_LIMITS, WheelLimits
from apiaudit.sources.cache import MARKER_NAME
from apiaudit.sources.sdist import import_layout, read_sdist, source_metadata

PKG_INFO = "Metadata-Version: 2.1\nName: plug\nVersion: 1.0\nRequires-Dist: toypkg>=1.0\nRequires-Dist: extra-dep; extra == \"x\"\n"
SRC_LAYOUT: dict[str, bytes | str] = {
    "PKG-INFO": PKG_INFO,
    "pyproject.toml": '[project]\nname = "plug"\nversion = "1.0"\n\n[project.entry-points."toy.plugins"]\nplug = "plug.hooks:register"\n',
    "setup.py": "from setuptools import setup\nsetup()\n",
    "src/plug/__init__.py": "",
    "src/plug/hooks.py": "def register():\n    return 1\n",
    "src/plug/types.pyi": "X: int\n",
    "src/plug/data.json": "{}",
    "src/plug.egg-info/PKG-INFO": PKG_INFO,
    "tests/test_hooks.py": "from plug.hooks import register\n",
    "docs/conf.py": "project = 'plug'\n",
}
FLAT_LAYOUT: dict[str, bytes | str] = {
    "PKG-INFO": "Metadata-Version: 2.1\nName: plug\nVersion: 1.0\n",
    "setup.py": "from setuptools import setup\nsetup(install_requires=['toypkg'])\n",
    "conftest.py": "",
    "noxfile.py": "",
    "plug/__init__.py": "",
    "plug/core.py": "def run(): ...\n",
    "plug_single.py": "VALUE = 1\n",  # a top-level module
    "nsplug/backends/cuda.py": "X = 1\n",  # a namespace package (no __init__.py)
    "tests/__init__.py": "",
    "tests/test_core.py": "",
    "docs/source/conf.py": "",
    "examples/run.py": "",
    "benchmarks/bench_core.py": "",
    "csrc/kernel.cu": "",
}


class Steps:
    def __init__(self) -> None:
        self.steps: list[str] = []

    def step(self, message: str) -> None:
        self.steps.append(message)


def find_links(monkeypatch, links: Path) -> None:
    """pip's only place to look: the folder `links` (no index, no user config)."""
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    for variable in ("PIP_EXTRA_INDEX_URL", "PIP_INDEX_URL"):
        monkeypatch.delenv(variable, raising=False)


def entry_files(entry: Path) -> dict[str, str]:
    return {p.relative_to(entry).as_posix(): p.read_text() for p in sorted(entry.rglob("*")) if p.is_file() and p.name != MARKER_NAME}


def test_a_release_with_no_wheel_is_read_from_its_src_layout_sdist(tmp_path, serve):
    sdist = build_sdist(tmp_path / "files", "plug", "1.0", SRC_LAYOUT)
    serve([sdist])
    progress = Steps()
    tree = resolve("plug==1.0", cache_dir=tmp_path / "cache", progress=progress)

    assert (tree.kind, tree.packages) == ("release", ("plug",))
    files = entry_files(tree.root)
    assert sorted(files) == [
        "plug-1.0.dist-info/METADATA",
        "plug-1.0.dist-info/entry_points.txt",
        "plug-1.0.dist-info/top_level.txt",
        "plug/__init__.py",
        "plug/hooks.py",
        "plug/types.pyi",
    ]  # src/ is the import root; tests/, docs/, setup.py and data are not kept
    assert files["plug-1.0.dist-info/METADATA"].splitlines()[1:] == [
        "Name: plug", "Version: 1.0", "Requires-Dist: toypkg>=1.0", 'Requires-Dist: extra-dep; extra == "x"',
    ]  # fmt: skip
    assert files["plug-1.0.dist-info/entry_points.txt"] == "[toy.plugins]\nplug = plug.hooks:register\n\n"
    assert "no wheel for plug==1.0: reading its source distribution (plug-1.0.tar.gz; nothing of it is built or run)" in progress.steps
    marker = json.loads((tree.root / MARKER_NAME).read_text())
    import hashlib

    assert (marker["wheel"], marker["fetched_by"]) == ("plug-1.0.tar.gz", "download")
    assert marker["wheel_sha256"] == hashlib.sha256(sdist.read_bytes()).hexdigest()
    assert not [p for p in (tmp_path / "cache" / "releases").iterdir() if p.name not in ("plug-1.0", ".files")], "no work folders left"

    again = resolve("plug==1.0", cache_dir=tmp_path / "cache")
    assert again == tree and not again.fetched  # the cache keeps the extracted tree


def test_a_flat_layout_keeps_its_packages_namespace_packages_and_modules_not_its_tooling(tmp_path, serve):
    serve([build_sdist(tmp_path / "files", "plug", "1.0", FLAT_LAYOUT)])
    tree = resolve("plug==1.0", cache_dir=tmp_path / "cache")

    assert sorted(tree.packages) == ["nsplug", "plug", "plug_single"]
    assert sorted(p.relative_to(tree.root).as_posix() for p in tree.python_files()) == [
        "nsplug/backends/cuda.py", "plug/__init__.py", "plug/core.py", "plug_single.py",
    ]  # fmt: skip
    metadata = (tree.root / "plug-1.0.dist-info" / "METADATA").read_text()
    assert "Requires-Dist: toypkg\n" in metadata  # setup(install_requires=[...]) as written


def test_the_names_an_egg_info_top_level_lists_are_the_import_roots():
    files = ["vllm_plug/__init__.py", "tools/lint.py", "helpers/gen.py", "use_existing_torch.py", "vllm_plug/ops/x.py"]
    assert import_layout(files).names == ("vllm_plug", "helpers", "use_existing_torch")  # the layout alone
    assert import_layout(files, declared=["vllm_plug", "tests"]) == import_layout(["vllm_plug/__init__.py"])
    # A declared name that is not in src/ but at the top: the top is the root.
    assert import_layout(["src/gen.py", "pkg/__init__.py"], declared=["pkg"]).root == ""


def test_a_zip_sdist_is_read_through_pips_find_links_folder(tmp_path, monkeypatch):
    links = tmp_path / "links"
    build_sdist(links, "plug", "1.0", FLAT_LAYOUT, archive="zip")
    find_links(monkeypatch, links)
    progress = Steps()
    tree = resolve("plug==1.0", cache_dir=tmp_path / "cache", progress=progress)
    assert sorted(tree.packages) == ["nsplug", "plug", "plug_single"]
    assert progress.steps[0] == "fetching plug==1.0 (first time only)"
    assert not any("linux" in step for step in progress.steps), "no other platform's wheel is looked for"
    assert json.loads((tree.root / MARKER_NAME).read_text())["wheel"] == "plug-1.0.zip"


def test_verify_wheels_reads_the_sdist_pip_names(tmp_path, serve):
    sdist = build_sdist(tmp_path / "files", "plug", "1.0", SRC_LAYOUT)
    index = serve([sdist])
    whole = resolve("plug==1.0", cache_dir=tmp_path / "whole", verify_wheels=True)
    ranged = resolve("plug==1.0", cache_dir=tmp_path / "ranged")
    assert entry_files(whole.root) == entry_files(ranged.root)
    assert [path for path, _ in index.requests if path.endswith(".tar.gz")] == ["/files/plug-1.0.tar.gz"] * 2


@pytest.mark.parametrize("verify_wheels", [False, True], ids=["index-page", "pips-listing"])
def test_an_sdist_that_differs_from_the_index_sha256_is_refused(tmp_path, serve, monkeypatch, verify_wheels):
    index = serve([build_sdist(tmp_path / "files", "plug", "1.0", SRC_LAYOUT)])
    index.hashes = False  # pip's listing then names no hash (as for a JSON page): the page is read for it
    real = release_module._page_files
    monkeypatch.setattr(release_module, "_page_files", lambda page, http: [replace(f, sha256="0" * 64) for f in real(page, http)])
    with pytest.raises(InputError) as caught:
        resolve("plug==1.0", cache_dir=tmp_path / "cache", verify_wheels=verify_wheels)
    assert str(caught.value) == "the downloaded plug-1.0.tar.gz for plug==1.0 does not match the index's sha256"
    assert not [p for p in (tmp_path / "cache" / "releases").iterdir() if p.name != ".files"]


def test_the_wheel_is_read_when_the_release_has_one(tmp_path, serve):
    wheel = build_wheel(tmp_path / "files", "plug", "1.0", {"plug/__init__.py": "FROM_WHEEL = 1\n"}, record=True)
    serve([build_sdist(tmp_path / "files", "plug", "1.0", SRC_LAYOUT), wheel])
    tree = resolve("plug==1.0", cache_dir=tmp_path / "cache")
    assert json.loads((tree.root / MARKER_NAME).read_text())["wheel"] == wheel.name
    assert (tree.root / "plug" / "__init__.py").read_text() == "FROM_WHEEL = 1\n"


def test_metadata_is_read_as_text_and_setup_py_never_runs(tmp_path, serve):
    ran = tmp_path / "setup-ran"
    setup_py = f"""
import pathlib
pathlib.Path({str(ran)!r}).write_text("setup.py was run")
PLUGINS = {{"toy.plugins": ["plug = plug.core:register"], "console_scripts": ["plug-cli = plug.core:main"]}}
from setuptools import setup
setup(name="plug", entry_points=PLUGINS, install_requires=["toypkg==1.0"], extras_require={{"fast:python_version>'3'": ["speedy"]}})
"""
    members = {**FLAT_LAYOUT, "setup.py": setup_py, "pyproject.toml": '[build-system]\nrequires = ["setuptools"]\n'}
    serve([build_sdist(tmp_path / "files", "plug", "1.0", members)])
    tree = resolve("plug==1.0", cache_dir=tmp_path / "cache")

    assert not ran.exists(), "setup.py was run"
    info = tree.root / "plug-1.0.dist-info"
    assert (info / "entry_points.txt").read_text() == (
        "[toy.plugins]\nplug = plug.core:register\n\n[console_scripts]\nplug-cli = plug.core:main\n\n"
    )
    assert (info / "METADATA").read_text().splitlines()[3:] == [
        "Requires-Dist: toypkg==1.0", "Requires-Dist: speedy; (python_version>'3') and extra == \"fast\"",
    ]  # fmt: skip


def test_each_written_form_of_the_metadata_is_read():
    requires_txt = "toypkg>=1\n\n[cuda]\nkernels\n\n[:sys_platform == 'linux']\nuvloop\n"
    entry_points_txt = "[vllm.general_plugins]\nplug = plug:register\n"
    from_egg = source_metadata({"plug.egg-info/requires.txt": requires_txt, "plug.egg-info/entry_points.txt": entry_points_txt,
                                "plug.egg-info/top_level.txt": "plug\n"})  # fmt: skip
    assert from_egg.requires == ("toypkg>=1", 'kernels; extra == "cuda"', "uvloop; (sys_platform == 'linux')")
    assert from_egg.entry_points == (("vllm.general_plugins", "plug", "plug:register"),)
    assert from_egg.top_level == ("plug",)

    pyproject = ('[project]\ndependencies = ["toypkg"]\nscripts = {plug = "plug:main"}\n'
                 '[project.optional-dependencies]\ncuda = ["kernels"]\n')  # fmt: skip
    from_pyproject = source_metadata({"pyproject.toml": pyproject})
    assert from_pyproject.requires == ("toypkg", 'kernels; extra == "cuda"')
    assert from_pyproject.entry_points == (("console_scripts", "plug", "plug:main"),)

    setup_cfg = ("[options]\ninstall_requires =\n    toypkg\n    numpy<2\n"
                 "[options.entry_points]\nvllm.general_plugins =\n    plug = plug:register\n")  # fmt: skip
    from_cfg = source_metadata({"setup.cfg": setup_cfg})
    assert from_cfg.requires == ("toypkg", "numpy<2")
    assert from_cfg.entry_points == (("vllm.general_plugins", "plug", "plug:register"),)

    # What only running code could tell is not read: no requirement, no entry point.
    computed = "import json\nsetup(install_requires=json.load(open('deps.json')), entry_points=make())\n"
    assert source_metadata({"setup.py": computed}) == source_metadata({})


# ----------------------------------------------------------------------------- hostile archives


def tar_of(folder: Path, entries: list[tuple[tarfile.TarInfo, bytes]], name: str = "evil-1.0.tar.gz") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    with tarfile.open(path, "w:gz") as out:
        for info, data in entries:
            info.size = len(data) if info.isreg() else 0
            out.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


def refused(archive: Path, tmp_path: Path, limits: WheelLimits = DEFAULT_LIMITS) -> str:
    dest = tmp_path / "out" / "tree"
    with pytest.raises(InputError) as caught:
        read_sdist(archive, dest, "evil", "1.0", None, limits)
    message = str(caught.value)
    assert message.startswith(f"malformed sdist {archive.name} for evil==1.0: "), message
    assert "\n" not in message
    assert not dest.exists(), "nothing is written for a refused sdist"
    return message


GOOD = (member("evil-1.0/evil/__init__.py"), b"")


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ((member("/tmp/evil/x.py"), b"x = 1\n"), "unsafe member path '/tmp/evil/x.py'"),
        ((member("evil-1.0/../../x.py"), b"x = 1\n"), "unsafe member path 'evil-1.0/../../x.py'"),
        ((member("evil-1.0/evil/link.py", tarfile.SYMTYPE, "/etc/passwd"), b""), "is a link (to '/etc/passwd')"),
        ((member("evil-1.0/evil/hard.py", tarfile.LNKTYPE, "evil-1.0/evil/__init__.py"), b""), "is a link"),
        ((member("evil-1.0/evil/dev.py", tarfile.CHRTYPE), b""), "is not a file or a folder"),
        ((member("evil-1.0/evil/fifo", tarfile.FIFOTYPE), b""), "is not a file or a folder"),
        (GOOD, "member 'evil-1.0/evil/__init__.py' appears twice"),
    ],
    ids=["absolute", "dotdot", "symlink", "hardlink", "device", "fifo", "twice"],
)
def test_a_hostile_tar_sdist_is_refused(tmp_path, entry, said):
    assert said in refused(tar_of(tmp_path / "s", [GOOD, entry]), tmp_path)


def test_a_link_in_a_zip_sdist_is_refused(tmp_path):
    archive = tmp_path / "evil-1.0.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("evil-1.0/evil/__init__.py", "")
        link = zipfile.ZipInfo("evil-1.0/evil/link.py")
        link.external_attr = (0o120777 << 16)
        out.writestr(link, "/etc/passwd")
    assert "is a link" in refused(archive, tmp_path)


def test_a_gzip_bomb_is_refused_as_it_unpacks(tmp_path):
    archive = tar_of(tmp_path / "s", [GOOD, (member("evil-1.0/evil/zeros.dat"), b"\0" * (8 << 20))])
    assert archive.stat().st_size < 64 << 10
    assert "more than 200-fold" in refused(archive, tmp_path)


def test_an_sdist_past_the_size_and_count_caps_is_refused(tmp_path):
    members = {f"evil/m{i}.py": "x = 1\n" * 200 for i in range(20)}
    archive = build_sdist(tmp_path / "s", "evil", "1.0", members)
    assert "more than the 3000 bytes" in refused(archive, tmp_path, WheelLimits(max_total_bytes=3000))
    assert "more members than the 10" in refused(archive, tmp_path, WheelLimits(max_members=10))
    zipped = build_sdist(tmp_path / "z", "evil", "1.0", members, archive="zip")
    assert "more members than the 10" in refused(zipped, tmp_path, WheelLimits(max_members=10))


def test_a_refused_sdist_leaves_nothing_in_the_cache(tmp_path, serve):
    serve([tar_of(tmp_path / "files", [GOOD, (member("evil-1.0/../escape.py"), b"x = 1\n")])])
    with pytest.raises(InputError, match=r"^malformed sdist evil-1.0.tar.gz for evil==1.0: unsafe member path"):
        resolve("evil==1.0", cache_dir=tmp_path / "cache")
    assert not [p for p in (tmp_path / "cache" / "releases").iterdir() if p.name != ".files"]
    assert not (tmp_path / "escape.py").exists()


# ----------------------------------------------------------------------------- the command line


def test_scan_of_a_consumer_published_only_as_an_sdist(tmp_path, serve):
    from apiaudit.cli.group import cli

    provider = build_wheel(tmp_path / "files", "toypkg", "1.0", {"toypkg/__init__.py": "", "toypkg/mod.py": "def f(a): ...\n"})
    plugin = {**SRC_LAYOUT, "src/plug/hooks.py": "from toypkg.mod import f\n\ndef register():\n    return f(1, b=2)\n"}
    serve([provider, build_sdist(tmp_path / "files", "plug", "1.0", plugin)])
    result = CliRunner().invoke(cli, ["scan", "--consumer", "plug==1.0", "--provider", "toypkg==1.0",
                                       "--cache-dir", str(tmp_path / "cache"), "--format", "json"])  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "no wheel for plug==1.0: reading its source distribution" in result.output
    report = json.loads(result.output[result.output.index("{"):])
    assert [(f["rule"], f["path"], f["line"]) for f in report["findings"]] == [("unexpected-keyword", "plug/hooks.py", 4)]


@pytest.mark.network
def test_a_real_release_published_only_as_an_sdist(release_cache):
    # arctic-inference publishes no wheel from 0.0.6 on (0.0.1-0.0.4 have one).
    tree = resolve("arctic-inference==0.0.6", cache_dir=release_cache)
    assert tree.packages == ("arctic_inference",)  # its egg-info's top_level.txt; not tests/
    assert any(p.name == "model_runner.py" for p in tree.python_files())
    assert not list(tree.root.glob("tests"))
    info = next(tree.root.glob("*.dist-info"))
    assert "[vllm.general_plugins]\narctic_inference = arctic_inference.vllm.plugins:arctic_inference_plugin\n" in (info / "entry_points.txt").read_text()
    assert 'Requires-Dist: vllm==0.8.4; extra == "vllm"' in (info / "METADATA").read_text()


def test_a_release_with_only_other_platforms_wheels_and_no_sdist_is_one_line(tmp_path, monkeypatch):
    links = tmp_path / "links"
    build_wheel(links, "plug", "1.0", {"plug/__init__.py": ""}).rename(links / "plug-1.0-cp27-cp27m-win32.whl")
    find_links(monkeypatch, links)
    with pytest.raises(InputError) as caught:
        resolve("plug==1.0", cache_dir=tmp_path / "cache")
    assert str(caught.value) == (
        "plug==1.0 has no wheel apiaudit can read (for this Python, or CPython 3.12 on linux x86_64) and no source distribution"
    )
