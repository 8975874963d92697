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


def test_a_none_placeholder_and_a_property_returning_it_keep_the_object_assigned(tmp_path):
    """dataset's Table: `self._table = None`, then `Table(...)` with other arguments in two methods;
    `table` is a property returning `self._table`: `self.table.insert(row)` is a call on the Table."""
    f = files_of(tmp_path, t="""
        from prov import Table
        class T:
            def __init__(self):
                self._table = None
            @property
            def table(self):
                if self._table is None:
                    self._sync()
                return self._table
            def _reflect(self):
                self._table = Table("n", autoload=True)
            def _sync(self):
                self._table = Table("n")
                self._table = None
            def insert(self, row):
                return self.table.insert(row)
    """)["cons/t.py"]
    last = [u for u in f.uses if u.site.line == 17]
    assert [(u.root.name, [s.name for s in u.steps if s.check]) for u in last] == [("prov.Table", ["insert", None])]
