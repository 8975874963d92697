"""What an expression holds, folded on the audited release (`walk/evaluate.py`)."""

from __future__ import annotations

from tests.consumer.test_visitor import VERSIONED, versioned_files


def test_version_text_methods_fold_on_the_audited_release(tmp_path):
    source = """
        import prov
        if prov.__version__.startswith("0.10"):
            prov.on_0_10()
        if int(prov.__version__.split(".")[1]) < 10:
            prov.before_0_10()
        import pkg_resources
        from importlib import metadata
        if pkg_resources.get_distribution("prov").version != metadata.distribution("prov").version:
            prov.never()
    """
    f = versioned_files(tmp_path, a=source)["cons/a.py"]
    assert {u.steps[0].name for u in f.uses if u.steps} == {"on_0_10", "__version__"}  # the read is a use too
    from dataclasses import replace

    (tmp_path / "u").mkdir()
    unknown = versioned_files(tmp_path / "u", replace(VERSIONED, provider_version=None), a=source)["cons/a.py"]
    assert {u.steps[0].name: u.live.conditional for u in unknown.uses if u.steps} == {
        "on_0_10": True, "before_0_10": True, "never": True, "__version__": False,
    }  # fmt: skip


def test_a_version_table_built_by_a_comprehension_selects_its_branch(tmp_path):
    """A table of `version.startswith(prefix)` per prefix, read with `any(table[v] for v in (...))`
    or a subscript: each branch decided on the audited release (0.10.0), as Python would."""
    source = """
        import importlib.metadata
        import prov
        from importlib.metadata import version
        def pick():
            found = importlib.metadata.version("prov")
            checks = {v: found.startswith(v) for v in ("0.9.", "0.10.", "0.11.")}
            if any(checks[v] for v in ("0.9.",)):
                prov.old_way()
            elif any(checks[v] for v in ("0.10.", "0.11.")):
                prov.new_way()
            if checks["0.11."]:
                prov.newest()
            if all(version("prov").startswith(p) for p in ("0.", "0.10")):
                prov.all_true()
            if any([found.startswith("0.9"), found.startswith("1.")]):
                prov.listed()
    """
    f = versioned_files(tmp_path, a=source)["cons/a.py"]
    live = {u.steps[0].name: u.live.conditional for u in f.uses if u.steps}
    assert live == {"new_way": False, "all_true": False}
    from dataclasses import replace

    (tmp_path / "u").mkdir()
    unknown = versioned_files(tmp_path / "u", replace(VERSIONED, provider_version=None), a=source)["cons/a.py"]
    assert {u.steps[0].name for u in unknown.uses if u.steps if u.live.conditional} >= {"old_way", "new_way", "newest"}


def test_a_version_table_the_code_changes_is_no_longer_folded(tmp_path):
    source = """
        import prov
        def pick(extra):
            checks = {v: prov.__version__.startswith(v) for v in ("0.9.", "0.10.")}
            checks["0.9."] = extra
            if checks["0.9."]:
                prov.set_item()
            table = {v: prov.__version__.startswith(v) for v in ("0.9.",)}
            table.update(extra)
            if table["0.9."]:
                prov.updated()
    """
    f = versioned_files(tmp_path, a=source)["cons/a.py"]
    assert {u.steps[0].name for u in f.uses if u.steps and u.steps[0].name != "__version__"} == {"set_item", "updated"}


def test_a_membership_test_of_the_version_text_in_a_literal_list_or_set_is_decided(tmp_path):
    """`version in [...]` / `in {...}` / `not in` a list kept in a local or a module constant:
    decided on the audited release (0.10.0) as Python would; the branch a release the list
    excludes takes is the only one that runs (a supported-versions table picking a module)."""
    source = """
        import prov
        OLD = ["0.8.5", "0.9.0"]
        def pick():
            current = ["0.10.0", "0.10.1"]
            if prov.__version__ in OLD:
                prov.old_way()
            elif prov.__version__ in current:
                prov.new_way()
            if prov.__version__ not in {"0.10.0"}:
                prov.not_listed()
            if prov.__version__ in ["0.9.0", "0.9.1"]:
                prov.listed_inline()
    """
    f = versioned_files(tmp_path, a=source)["cons/a.py"]
    assert {u.steps[0].name: u.live.conditional for u in f.uses if u.steps and u.steps[0].name != "__version__"} == {"new_way": False}


def test_a_version_list_the_code_changes_or_computes_is_not_decided(tmp_path):
    """Counter-case: a list the code appends to, or one holding a computed item, may hold the
    release: what it guards stays conditional, never dropped."""
    source = """
        import prov
        def pick(extra):
            supported = ["0.8.5"]
            supported.append(extra)
            if prov.__version__ in supported:
                prov.appended()
            if prov.__version__ in ["0.8.5", extra]:
                prov.computed()
    """
    f = versioned_files(tmp_path, a=source)["cons/a.py"]
    assert {u.steps[0].name: u.live.conditional for u in f.uses if u.steps and u.steps[0].name != "__version__"} == {"appended": True, "computed": True}
