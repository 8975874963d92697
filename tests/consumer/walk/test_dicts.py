"""The keys a dict holds as the code changes it, bound at `**` splats (`walk/dicts.py`)."""

from __future__ import annotations

from tests.consumer.test_visitor import versioned_files


def test_dict_splats_bind_their_known_keys(tmp_path):
    f = versioned_files(tmp_path, a="""
        from prov import Args
        def f(extra):
            kw = {"a": 1}
            kw["b"] = 2
            kw.update(c=3)
            kw.pop("a")
            Args(**kw)
            kw.update(extra)
            Args(**kw)
    """)["cons/a.py"]
    shapes = [u.steps[-1].call for u in f.uses if u.steps and u.steps[-1].kind == "call"]
    assert [sorted(a.name for a in s.keywords) for s in shapes] == [["b", "c"], ["b", "c"]]
    assert [s.has_starstar for s in shapes] == [False, True]
    assert all(a.via_splat for s in shapes for a in s.keywords)


def test_a_dict_that_escapes_forgets_its_keys(tmp_path):
    f = versioned_files(tmp_path, a="""
        from prov import Args
        def f(fill):
            kw = {"a": 1, "b": 2}
            gone = kw.pop("a")
            Args(**kw)
            fill(kw)
            Args(**kw)
            other = {"c": 1}
            alias = other
            alias.pop("c")
            Args(**other)
    """)["cons/a.py"]
    shapes = [u.steps[-1].call for u in f.uses if u.steps and u.steps[-1].kind == "call"]
    assert [(sorted(a.name for a in s.keywords), s.has_starstar) for s in shapes] == [(["b"], False), ([], True), ([], True)]
