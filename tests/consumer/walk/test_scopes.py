"""Names meet again where branches and loops join (`walk/scopes.py`)."""

from __future__ import annotations

from tests.consumer.test_visitor import files_of


def test_a_name_bound_to_two_provider_values_is_forgotten(tmp_path):
    f = files_of(tmp_path, c="""
        from prov import A, B
        def f(flag):
            if flag:
                x = A()
            else:
                x = B()
            for x in []:
                pass
            x.method()
    """)["cons/c.py"]
    # Line 1 is the blank line after the opening quotes: A() is line 5, B() line 7, x.method()
    # line 10 (line 9 is `pass`, which no use can be on).
    assert sorted(u.site.line for u in f.uses) == [5, 7]
    assert not any(s.name == "method" for u in f.uses for s in u.steps)
