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
