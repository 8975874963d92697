"""Module constants and guard helpers fold where they are used, across modules (`walk/fold.py`)."""

from __future__ import annotations

from tests.consumer.test_visitor import VERSIONED, versioned_files


GUARDED = """
    import prov
    from packaging.version import Version
    from cons.flags import NEW, at_least
    def f(x):
        if Version(prov.__version__) >= Version("0.10"):
            prov.new_api()
        else:
            prov.old_api()
        if not NEW:
            prov.old_flag()
        if at_least("0.11"):
            prov.newer()
        if x:
            prov.runtime()
"""


FLAGS = """
    import prov
    from packaging.version import Version
    NEW = Version(prov.__version__) >= Version("0.10")
    def at_least(v):
        return Version(prov.__version__) >= Version(v)
"""


def test_a_dead_branch_emits_nothing_and_constants_and_helpers_fold_across_modules(tmp_path):
    f = versioned_files(tmp_path, a=GUARDED, flags=FLAGS)["cons/a.py"]
    names = {u.steps[0].name: u for u in f.uses if u.root.name == "prov" and u.steps}
    assert "new_api" in names and "runtime" in names
    assert not {"old_api", "old_flag", "newer"} & set(names)
    assert not names["runtime"].live.conditional  # a test on run-time data is not a guard


def test_an_unknown_provider_version_keeps_both_branches_conditional(tmp_path):
    from dataclasses import replace

    f = versioned_files(tmp_path, replace(VERSIONED, provider_version=None), a=GUARDED, flags=FLAGS)["cons/a.py"]
    names = {u.steps[0].name: u for u in f.uses if u.root.name == "prov" and u.steps}
    assert {"new_api", "old_api", "old_flag", "newer"} <= set(names)
    assert names["old_api"].live.guard == "not (Version(prov.__version__) >= Version('0.10'))"
    assert not names["runtime"].live.conditional
