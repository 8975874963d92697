"""Which consumer modules run (consumer/reach.py): roots, edges, entry points."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import pytest

from apiaudit.consumer.reach import (
    _quotes_top,
    _runs_by_itself,
    conditional_names,
    entry_point_modules,
    mark_unreachable,
    module_reach,
    named_modules,
    named_only_in_dead_code,
    still_named_only_in_dead_code,
    unreachable_modules,
)
from apiaudit.consumer.records import ConsumerFile, DeadCode, EntryPoint, NamedOnlyInDeadCode, ReachedWhen, RunsWhen, Site
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


# --- issue 37, cause 37.7: names given on a condition ----------------------------------------

HOOK = """\
class Platform:
    def backend(self, use_v1, use_mla):
        if use_mla:
            return "pkg.mla.Backend"
        if use_v1:
            return "pkg.v1.Backend"
        elif not use_mla:
            return "pkg.v0.Backend"

    def communicator(self, cached):
        if cached:
            return cached
        return "pkg.comm.Communicator"
"""


def test_a_name_a_hook_returns_under_run_time_tests_is_reached_on_them_only():
    """A platform hook picking a class by its arguments: each name it returns inside tests the
    walk found no release decides (`branch_tests`, line and column of each `if`) is reached on
    those tests, an `if` arm that returns making what follows run on the other side; a function
    returning a single name (after a cache test) gives it outright, an edge as any string is."""
    tree = ast.parse(HOOK)
    tests = {(3, 8): False, (5, 8): False, (7, 8): False, (11, 8): False}
    assert conditional_names(tree, "pkg", ("prov",), tests, HOOK) == (
        ReachedWhen("pkg.mla.Backend", Site(4, 19), "use_mla"),
        ReachedWhen("pkg.v1.Backend", Site(6, 19), "not use_mla and use_v1"),
        ReachedWhen("pkg.v0.Backend", Site(8, 19), "not use_mla and not use_v1"),
    )
    skip = {(w.site.line, w.site.column) for w in conditional_names(tree, "pkg", ("prov",), tests, HOOK)}
    assert named_modules(tree, "pkg", HOOK, None, skip) == ("pkg.comm.Communicator",)
    # a test a release decides (not in `branch_tests`) names every arm outright
    assert conditional_names(tree, "pkg", ("prov",), {}, HOOK) == ()
    # a test of a provider value is said to be one
    assert conditional_names(tree, "pkg", ("prov",), {(3, 8): True}, HOOK)[0].by_release


def test_an_import_map_serves_its_module_only_where_its_key_is_imported(tmp_path):
    """`{"prov.sampler": "pkg.sampler_copy"}` (an import hook's table): the copy runs when the
    provider module is imported; a reachable module importing that name makes it live outright.
    Whether the release has the module, the engine decides (`engine.check_file`)."""
    source = 'MAP = {"prov.sampler": "pkg.sampler_copy", "prov.layers": "pkg.layers_copy"}\n'
    named = conditional_names(ast.parse(source), "pkg", ("prov",), {}, source)
    assert [(w.module, w.stands_for) for w in named] == [("pkg.sampler_copy", "prov.sampler"), ("pkg.layers_copy", "prov.layers")]
    assert named_modules(ast.parse(source), "pkg", source, None, {(w.site.line, w.site.column) for w in named}) == ()
    # a dict naming consumer modules by consumer keys is no import map
    assert conditional_names(ast.parse('M = {"pkg.a": "pkg.b"}'), "pkg", ("prov",), {}) == ()
    info = tmp_path / "pkg-1.0.dist-info"
    info.mkdir()
    (info / "entry_points.txt").write_text("[prov.plugins]\np = pkg:register\n")
    tree = CodeTree("pkg", None, tmp_path, ("pkg",))
    files = [
        replace(_file("pkg/__init__.py"), reaches_when=named),
        _file("pkg/sampler_copy.py", ("pkg.helpers",)),
        _file("pkg/helpers.py"),
        _file("pkg/layers_copy.py"),
    ]
    dead, conditional = module_reach(tree, files)
    assert dead == frozenset()
    by_map = {path: [w.named.stands_for for w in whys] for path, whys in conditional.items()}
    assert by_map == {"pkg/sampler_copy.py": ["prov.sampler"], "pkg/helpers.py": ["prov.sampler"], "pkg/layers_copy.py": ["prov.layers"]}
    assert conditional["pkg/helpers.py"][0] == RunsWhen(named[0], "pkg/__init__.py:1")
    files[3] = _file("pkg/layers_copy.py", ("prov.sampler",))  # a live module imports the key
    files.append(_file("pkg/boot.py", ("prov.sampler", "pkg.layers_copy")))
    files[0] = replace(files[0], reaches=("pkg.boot",))
    assert module_reach(tree, files) == (frozenset(), {})


def test_a_plugin_module_named_only_in_a_hook_branch_is_conditional_on_it():
    """Issue 37, cause 37.7 (vllm-kunlun's V0 attention backend, named only in its platform's
    `not use_v1` branch; its sampler copy, served in place of a module vLLM 0.11.0 no longer has;
    vllm-rbln 0.9.3.post1's V0 scheduler, a name its config hook stores only in the V0 arm):
    fixtures/consumers/platplug against platkit 1.0. What the platform names outright, and an
    import map's copy of a module the release has, stay errors."""
    from apiaudit.audit import scan
    from apiaudit.policy.config import Settings

    fixtures = Path(__file__).resolve().parents[2] / "fixtures"
    report = scan(
        [str(fixtures / "consumers" / "platplug" / "platplug")], str(fixtures / "providers" / "platkit_v1" / "platkit"),
        use_index_cache=False, settings=Settings(),
    )  # fmt: skip
    found = sorted(
        (f.path, f.line, f.rule, f.severity.value, f.conditional, f.reason)
        for f in report.findings
        if f.rule != "cannot-judge" and f.path not in ("platplug/activation.py", "platplug/comm.py")
    )
    assert found == [
        ("platplug/backend.py", 1, "import-missing", "error", True,
         "runs only when `not use_mla and use_v1` (platplug/platform.py:13 names platplug.backend.Backend only there)"),
        ("platplug/backend_utils.py", 2, "import-missing", "error", False, None),
        ("platplug/legacy/backend.py", 1, "import-missing", "error", True,
         "runs only when `not use_mla and not use_v1` (platplug/platform.py:14 names platplug.legacy.backend.LegacyBackend only there)"),
        ("platplug/legacy/helpers.py", 1, "import-missing", "error", True,
         "runs only when `not use_mla and not use_v1` (platplug/platform.py:14 names platplug.legacy.backend.LegacyBackend only there)"),
        ("platplug/legacy/scheduler.py", 1, "import-missing", "error", True,
         "runs only when `not envs.PLATKIT_USE_V1`, a test of a provider value the release may decide "
         "(platplug/platform.py:36 names platplug.legacy.scheduler.LegacyScheduler only there)"),
        ("platplug/legacy/worker.py", 1, "import-missing", "error", True,
         "runs only when `not envs.PLATKIT_USE_V1`, a test of a provider value the release may decide "
         "(platplug/platform.py:28 names platplug.legacy.worker.LegacyWorker only there)"),
        ("platplug/legacy_sampler.py", 1, "import-missing", "error", True,
         "runs only when something imports platkit.sampler, which this release does not have "
         "(the import map at platplug/__init__.py:12 serves platplug.legacy_sampler in its place)"),
    ]  # fmt: skip


# --- issue 38, F9: a function installed only by a version ladder the release decides ----------

LADDER = '''
def for_old(self, layer): return layer          # 2
def current(self, layer): return layer          # 3
def api(layer): return layer                    # 4
@register
def hooked(layer): return layer                 # 6
def recursive(n): return recursive(n - 1)       # 7
def by_string(): pass                           # 8
class Own:                                      # 9
    def old_way(self): pass                     # 10
class Derived(prov.Base):                       # 11
    def old_way2(self): pass                    # 12
def install(ver):                               # 13
    if ver >= 2:                                # 14
        return current                          # 15
    chosen = for_old, hooked, by_string, "pkg.mod:by_string", Own().old_way, Derived().old_way2  # 16
    return current                              # 17
'''


def test_a_function_named_only_in_code_the_release_never_runs_is_found():
    """Only `for_old` and the own class's `old_way` are named nowhere but the dead line 16; `current`
    is named on a live line too (the trap), `api` and `recursive` nowhere (a user's API), `hooked` is
    decorated, `by_string` is named in a string too (dead as well: still found), `old_way2`'s class
    derives from another package's class (which may call it)."""
    dead = (DeadCode(16, 17, "after `if ver >= 2` (line 14), which leaves the block on this release"),)
    found = named_only_in_dead_code(ast.parse(LADDER), dead)
    assert [(f.name, f.body, f.named_at) for f in found] == [
        ("for_old", (2, 2), 16), ("by_string", (8, 8), 16), ("old_way", (10, 10), 16),
    ]  # fmt: skip
    assert found[0].why == dead[0].why
    assert named_only_in_dead_code(ast.parse(LADDER), ()) == ()


def test_another_file_or_an_entry_point_naming_the_function_keeps_it_live():
    named = (NamedOnlyInDeadCode("for_old", (2, 2), 16, "why"), NamedOnlyInDeadCode("by_string", (8, 8), 16, "why"))
    file = replace(_file("pkg/mod.py"), dead_named=named, source=LADDER)
    other = replace(_file("pkg/user.py"), source="from pkg.mod import for_old_style\n")
    assert still_named_only_in_dead_code(file, [file, other], ()) == named  # a longer word is another name
    other = replace(other, source="from pkg.mod import for_old\n")
    assert still_named_only_in_dead_code(file, [file, other], ()) == named[1:]
    declared = (EntryPoint("console_scripts", "x", "pkg.mod", "by_string"),)
    assert still_named_only_in_dead_code(file, [file], declared) == named[:1]
    assert still_named_only_in_dead_code(file, [file], (), ("pkg.mod.for_old", "pkg.other.by_string")) == named[1:]


def test_collect_keeps_on_a_file_only_the_functions_nothing_else_names(tmp_path):
    """`mark_unreachable` (run by `collect` once every file is read) filters `dead_named`: a README
    telling users to call `pkg.mod.by_string` keeps it live."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "README.md").write_text("Call `pkg.mod.by_string()` yourself.\n")
    named = (NamedOnlyInDeadCode("for_old", (2, 2), 16, "why"), NamedOnlyInDeadCode("by_string", (8, 8), 16, "why"))
    file = replace(_file("pkg/mod.py"), dead_named=named, source=LADDER)
    tree = CodeTree("pkg", None, tmp_path, ("pkg",))
    (marked,) = mark_unreachable(tree, [file])
    assert marked.dead_named == named[:1]


LADDER_FIXTURE = Path(__file__).resolve().parents[2] / "fixtures"


def test_findings_of_a_function_a_version_ladder_installs_only_on_other_releases_are_conditional():
    """ladderuse against ladderlib 2.0 (verl 0.8.0's vllm_fp8_utils.py on vLLM 0.23.0): the patch
    installed only after `if ver >= version.parse("2.0.0"): ...; return`, and the method called only
    after the same test returns, are conditional, saying why; the patch installed in the live arm
    too and the public function named nowhere keep their errors (each line's comment says so)."""
    from apiaudit.audit import scan

    consumer = LADDER_FIXTURE / "consumers" / "ladderuse" / "ladderuse"
    report = scan([str(consumer)], str(LADDER_FIXTURE / "providers" / "ladderlib_v2" / "ladderlib"), use_index_cache=False)
    found = {(f.line, f.rule, f.severity.value, f.conditional) for f in report.findings if f.path == "ladderuse/patches.py"}
    assert found == {
        (12, "unexpected-keyword", "error", True),
        (16, "unexpected-keyword", "error", False),
        (20, "unexpected-keyword", "error", False),
        (37, "unexpected-keyword", "error", True),
    }
    reasons = {f.line: f.reason for f in report.findings if f.path == "ladderuse/patches.py"}
    assert reasons[12] == (
        "`process_for_v1` is named in ladderuse only where this release never runs (line 31, after `if ver >= "
        "version.parse('2.0.0')` (line 25), which leaves the block on this release): its body runs only if something outside calls it"
    )
    v1 = scan([str(consumer)], str(LADDER_FIXTURE / "providers" / "ladderlib_v1" / "ladderlib"), use_index_cache=False)
    assert [f for f in v1.findings if f.path == "ladderuse/patches.py"] == []


def test_a_package_is_quoted_alone_or_leading_a_dotted_name():
    assert [_quotes_top("pkg", text) for text in ('"pkg.a"', "'pkg'", "\"pkg'", "'pkg.a:b'", "pkg.a", '"pkgs.a"', "'xpkg.a'")] == [
        True, True, True, True, False, False, False,
    ]
