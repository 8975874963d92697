"""Resolving code given as a path: package dir, job script, folder of packages and scripts."""

from __future__ import annotations

from pathlib import Path

import pytest

from apiaudit.errors import InputError
from apiaudit.sources import default_cache_dir, resolve


def write(path: Path, text: str = "x = 1\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_package_directory_is_rooted_at_its_parent(tmp_path):
    write(tmp_path / "proj" / "mypkg" / "__init__.py")
    write(tmp_path / "proj" / "mypkg" / "sub" / "mod.py")

    tree = resolve(str(tmp_path / "proj" / "mypkg"))

    assert tree.kind == "path"
    assert tree.name == "mypkg"
    assert tree.version is None
    assert tree.root == (tmp_path / "proj").resolve()
    assert tree.packages == ("mypkg",)
    assert tree.scripts == ()
    assert {p.name for p in tree.python_files()} == {"__init__.py", "mod.py"}


def test_single_script_is_a_script_of_its_folder(tmp_path):
    script = write(tmp_path / "jobs" / "train_eagle3.py")

    tree = resolve(str(script))

    assert tree.name == "train_eagle3"
    assert tree.root == (tmp_path / "jobs").resolve()
    assert tree.packages == ()
    assert tree.scripts == (script.resolve(),)


def test_folder_without_init_collects_packages_and_loose_scripts(tmp_path):
    folder = tmp_path / "repo"
    write(folder / "alpha" / "__init__.py")
    write(folder / "alpha" / "inner.py")
    write(folder / "beta" / "__init__.py")
    top_script = write(folder / "run.py")
    nested_script = write(folder / "examples" / "deep" / "demo.py")
    write(folder / "notes.txt", "not python")
    write(folder / ".venv" / "lib" / "site.py")  # a virtual environment is not the project's code
    write(folder / "__pycache__" / "cached.py")

    tree = resolve(str(folder))

    assert tree.name == "repo"
    assert tree.root == folder.resolve()
    assert tree.packages == ("alpha", "beta")
    assert set(tree.scripts) == {top_script.resolve(), nested_script.resolve()}
    assert all(".venv" not in p.parts and "__pycache__" not in p.parts for p in tree.python_files())


def test_relative_path_is_resolved(tmp_path, monkeypatch):
    write(tmp_path / "pkg" / "__init__.py")
    monkeypatch.chdir(tmp_path)

    tree = resolve("./pkg")

    assert tree.root == tmp_path.resolve()
    assert tree.packages == ("pkg",)


@pytest.mark.parametrize("spec", ["./does/not/exist", "missing_script.py"])
def test_missing_path_is_one_clear_error(tmp_path, monkeypatch, spec):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as caught:
        resolve(spec)
    assert str(caught.value) == f"no such file or directory: {spec}"


def test_folder_with_no_python_is_an_error(tmp_path):
    write(tmp_path / "empty" / "README.md", "hi")
    with pytest.raises(InputError, match="no Python files under"):
        resolve(str(tmp_path / "empty"))


def test_non_python_file_is_an_error(tmp_path):
    data = write(tmp_path / "data.json", "{}")
    with pytest.raises(InputError, match="not a Python file"):
        resolve(str(data))


@pytest.mark.parametrize("spec", ["", "vllm>=0.16", "vllm[all]", "two words"])
def test_specs_that_are_no_source_are_rejected(spec):
    with pytest.raises(InputError):
        resolve(spec)


def test_default_cache_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("APIAUDIT_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "explicit"

    monkeypatch.delenv("APIAUDIT_CACHE_DIR")
    assert default_cache_dir() == tmp_path / "xdg" / "apiaudit"

    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "apiaudit"


def test_a_subpackage_keeps_the_module_names_python_uses(tmp_path):
    write(tmp_path / "proj" / "mypkg" / "__init__.py")
    write(tmp_path / "proj" / "mypkg" / "other.py")
    write(tmp_path / "proj" / "mypkg" / "sub" / "__init__.py")
    write(tmp_path / "proj" / "mypkg" / "sub" / "mod.py")

    tree = resolve(str(tmp_path / "proj" / "mypkg" / "sub"))

    assert (tree.name, tree.packages, tree.root) == ("mypkg", ("mypkg",), (tmp_path / "proj").resolve())
    rel = [p.relative_to(tree.root).as_posix() for p in tree.python_files()]
    assert rel == ["mypkg/sub/__init__.py", "mypkg/sub/mod.py"]


def test_job_files_are_read_beside_loose_scripts(tmp_path):
    write(tmp_path / "jobs" / "train.py", "x = 1")
    write(tmp_path / "jobs" / "serve.sh", "prov serve m")
    write(tmp_path / "jobs" / "conf" / "server.yaml", "a: 1")
    write(tmp_path / "jobs" / "conf" / "server.toml", "a = 1")
    write(tmp_path / "jobs" / ".hidden.yaml", "a: 1")
    write(tmp_path / "jobs" / "notes.md", "hi")
    tree = resolve(str(tmp_path / "jobs"))
    assert [p.relative_to(tree.root).as_posix() for p in tree.files()] == [
        "train.py", "conf/server.toml", "conf/server.yaml", "serve.sh",
    ]  # fmt: skip
    assert [p.name for p in tree.python_files()] == ["train.py"]


def test_a_job_file_or_a_folder_of_them_is_a_consumer(tmp_path):
    script = write(tmp_path / "only" / "serve.sh", "prov serve m")
    tree = resolve(str(script))
    assert (tree.name, tree.root, tree.job_files, tree.scripts) == ("serve", script.parent, (script,), ())
    assert resolve(str(tmp_path / "only")).job_files == (script,)


class _Steps:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def step(self, message: str) -> None:
        self.lines.append(message)


def test_a_bare_name_read_from_a_folder_here_says_it_hides_the_installed_distribution(tmp_path, monkeypatch):
    # click is installed in every environment apiaudit runs in; ./click is a folder of scripts here.
    write(tmp_path / "click" / "job.py")
    monkeypatch.chdir(tmp_path)
    steps = _Steps()
    tree = resolve("click", progress=steps)
    assert tree.kind == "path" and tree.root == (tmp_path / "click").resolve()
    assert len(steps.lines) == 1 and steps.lines[0].startswith("click: reading ./click here, not the installed click ")
    steps = _Steps()
    resolve("./click", progress=steps)  # a path by its form: nothing to say
    write(tmp_path / "not-installed-anywhere" / "job.py")
    resolve("not-installed-anywhere", progress=steps)  # nothing installed of that name: nothing hidden
    assert steps.lines == []


@pytest.mark.parametrize("spec", ["vllm>=0.16", "vllm>=0.11,<0.17", "vllm ~= 0.16.0", "vllm!=0.12.0"])
def test_a_version_range_points_to_matrix(spec):
    with pytest.raises(InputError) as raised:
        resolve(spec)
    message = str(raised.value)
    assert message.startswith(f"cannot audit '{spec}': a scan reads one release (NAME==VERSION)")
    assert "`apiaudit matrix --provider '" in message
