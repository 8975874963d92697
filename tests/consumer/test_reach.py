"""Which consumer modules run (consumer/reach.py): roots, edges, entry points."""

from __future__ import annotations

import ast

import pytest

from apiaudit.consumer.reach import _runs_by_itself, entry_point_modules, named_modules, unreachable_modules
from apiaudit.consumer.records import ConsumerFile
from apiaudit.sources.base import CodeTree


@pytest.mark.parametrize(
    "path, user_facing",
    [
        ("pkg/__init__.py", True),
        ("pkg/contrib/tool.py", True),
        ("pkg/v1/models.py", True),  # a public API version (one number), as pydantic.v1
        ("pkg/integration/connector_v1_085.py", True),  # a module a provider's config may name
        ("pkg/vllm_v0_6/worker.py", False),  # a per-release copy of provider internals
        ("pkg/third_party/vllm/vllm_v_0_5_4/__init__.py", False),
        ("pkg/_legacy.py", False),
        ("pkg/_internal/x.py", False),
        ("pkg/_internal/test_x.py", True),  # tests run by themselves
        ("pkg/vllm_v0_6/__main__.py", True),
    ],
)  # fmt: skip
def test_what_runs_by_itself(path, user_facing):
    module = path[: -len(".py")].replace("/", ".").removesuffix(".__init__")
    assert _runs_by_itself(module, path) is user_facing


def _file(path: str, reaches: tuple[str, ...] = ()) -> ConsumerFile:
    module = path[: -len(".py")].replace("/", ".").removesuffix(".__init__")
    return ConsumerFile(path=path, module=module, reaches=reaches)


def test_imports_and_the_packages_on_the_way_are_reached(tmp_path):
    tree = CodeTree("pkg", None, tmp_path, ("pkg",))
    files = [
        _file("pkg/__init__.py", ("pkg.engine",)),
        _file("pkg/engine.py", ("pkg.copies.vllm_v0_7.runner.make",)),  # from .copies.vllm_v0_7.runner import make
        _file("pkg/copies/vllm_v0_7/__init__.py"),
        _file("pkg/copies/vllm_v0_7/runner.py", ("pkg.copies.vllm_v0_7.util",)),
        _file("pkg/copies/vllm_v0_7/util.py"),
        _file("pkg/copies/vllm_v0_6/__init__.py"),
        _file("pkg/copies/vllm_v0_6/runner.py"),
        _file("pkg/_cli.py"),
    ]
    assert unreachable_modules(tree, files) == {"pkg/copies/vllm_v0_6/__init__.py", "pkg/copies/vllm_v0_6/runner.py", "pkg/_cli.py"}
    # an entry point names the private CLI module; a subpackage given alone is reachable whole
    info = tmp_path / "pkg-1.0.dist-info"
    info.mkdir()
    (info / "entry_points.txt").write_text("[console_scripts]\npkg = pkg._cli:main\n")
    assert entry_point_modules(tree) == ("pkg._cli",)
    assert "pkg/_cli.py" not in unreachable_modules(tree, files)
    assert unreachable_modules(CodeTree("pkg", None, tmp_path, ("pkg",), only=(tmp_path / "pkg" / "copies",)), files) == frozenset()


def test_dotted_names_in_strings_are_edges():
    tree = ast.parse('W = "pkg.ext.Worker"\nE = "pkg.cli:main"\nX = "pkg"\nY = "other.mod.C"\nZ = "pkg.a b"\n')
    assert named_modules(tree, "pkg") == ("pkg.ext.Worker", "pkg.cli")


def test_entry_points_keep_their_group_name_and_object(tmp_path):
    from apiaudit.consumer.reach import entry_points
    from apiaudit.consumer.records import EntryPoint

    root = tmp_path / "site"
    info = root / "pkg-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "entry_points.txt").write_text("[vllm.general_plugins]\nMyPlug = pkg._boot:register [extra]\n")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "pkg"\n[project.scripts]\npkg = "pkg.cli:main"\n'
        '[project.entry-points."vllm.platform_plugins"]\nplat = "pkg.platform:resolve"\n'
    )
    tree = CodeTree("pkg", None, root, ("pkg",))
    assert entry_points(tree) == (
        EntryPoint("vllm.general_plugins", "MyPlug", "pkg._boot", "register"),
        EntryPoint("console_scripts", "pkg", "pkg.cli", "main"),
        EntryPoint("vllm.platform_plugins", "plat", "pkg.platform", "resolve"),
    )


def test_the_text_test_before_the_walk_keeps_every_name():
    # the walk is skipped only where no quote opens on the package's name
    for source in ('x = "pkg.ext.Worker"', "x = ('pkg' '.cli')", "x = f'pkg.a'", 'x = "other.pkg.a"', "import pkg.ext"):
        tree = ast.parse(source)
        assert named_modules(tree, "pkg", source) == named_modules(tree, "pkg")


def test_a_plugin_runs_what_its_entry_points_reach_a_library_every_public_module(tmp_path):
    """Issue 37, cause 7: a distribution declaring entry points a provider loads (not only console
    scripts) is a plugin: its legacy modules (a worker its platform no longer names, importing a
    runner kept from an older provider) run only if something outside imports them; the same
    modules in a library are what a user imports. A module written to be run, or one its
    examples name, is a root either way."""
    files = [
        _file("pkg/__init__.py"),
        _file("pkg/platform.py", ("pkg.ops",)),
        _file("pkg/ops.py"),
        _file("pkg/worker/__init__.py"),
        _file("pkg/worker/worker.py", ("pkg.worker.model_runner.Runner",)),
        _file("pkg/worker/model_runner.py"),
        ConsumerFile(path="pkg/tools/bench.py", module="pkg.tools.bench", source='def main(): ...\n\nif __name__ == "__main__":\n    main()\n'),
        _file("pkg/tools/__init__.py"),
        _file("pkg/tools/convert.py"),
    ]
    library = CodeTree("pkg", None, tmp_path, ("pkg",))
    assert unreachable_modules(library, files) == frozenset()
    info = tmp_path / "pkg-1.0.dist-info"
    info.mkdir()
    (info / "entry_points.txt").write_text("[console_scripts]\npkg = pkg.tools.bench:main\n")
    assert unreachable_modules(library, files) == frozenset()  # commands do not make a plugin
    (info / "entry_points.txt").write_text("[console_scripts]\npkg = pkg.tools.bench:main\n[prov.platform_plugins]\np = pkg:register\n")
    assert unreachable_modules(library, files) == {
        "pkg/platform.py", "pkg/ops.py", "pkg/worker/__init__.py", "pkg/worker/worker.py", "pkg/worker/model_runner.py",
        "pkg/tools/convert.py",
    }  # fmt: skip
    (info / "METADATA").write_text("Name: pkg\n\nRun `python -m pkg.tools.convert` to convert; `pkg.platform` is loaded by the provider.\n")
    assert unreachable_modules(library, files) == {
        "pkg/worker/__init__.py", "pkg/worker/worker.py", "pkg/worker/model_runner.py",
    }  # fmt: skip


def test_per_release_copies_run_only_where_a_version_table_picks_them(tmp_path):
    """Issue 37, cause 11: `copied_scheduler_v0_9.py` beside `copied_scheduler_v0_10.py` is a
    family of per-release copies: none is a root by its path; a version table's entry for the
    audited release is an edge, the others are not. A lone numbered module stays user-facing."""
    from apiaudit.consumer.reach import per_release_copies

    table = 'SCHEDULERS = {"0.9.2": "pkg.copied_scheduler_v0_9", "0.10.1": "pkg.copied_scheduler_v0_10"}\n'
    assert named_modules(ast.parse(table), "pkg", table, "0.10.1") == ("pkg.copied_scheduler_v0_10",)
    assert named_modules(ast.parse(table), "pkg", table, "0.9.2.post1") == ("pkg.copied_scheduler_v0_9",)
    assert set(named_modules(ast.parse(table), "pkg", table)) == {"pkg.copied_scheduler_v0_9", "pkg.copied_scheduler_v0_10"}
    paths = ["pkg/copied_scheduler_v0_9.py", "pkg/copied_scheduler_v0_10.py", "pkg/connector_v1_085.py", "pkg/connector_v1.py"]
    assert per_release_copies(paths) == {"pkg/copied_scheduler_v0_9.py", "pkg/copied_scheduler_v0_10.py"}
    tree = CodeTree("pkg", None, tmp_path, ("pkg",))
    files = [
        _file("pkg/__init__.py", ("pkg.copied_scheduler_v0_10",)),  # the table's entry for the release
        _file("pkg/copied_scheduler_v0_9.py"),
        _file("pkg/copied_scheduler_v0_10.py"),
        _file("pkg/connector_v1_085.py"),
    ]
    assert unreachable_modules(tree, files) == {"pkg/copied_scheduler_v0_9.py"}
