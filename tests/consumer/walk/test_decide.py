"""Tests three-valued: folded, noted, or conditions the checks decide, with what they narrow (`walk/decide.py`)."""

from __future__ import annotations

from tests.consumer.test_visitor import files_of, versioned_files


def test_a_version_compared_as_text_is_noted_and_evaluated_as_python_does(tmp_path):
    f = versioned_files(tmp_path, a="""
        import prov
        if prov.__version__ >= "0.9":
            prov.never()
        else:
            prov.always()
    """)["cons/a.py"]
    assert [n.kind for n in f.notes] == ["version-compared-as-string"]
    assert {u.steps[0].name for u in f.uses if u.steps} == {"always", "__version__"}  # the read is a use too


def test_feature_guards_are_conditions_and_early_exits_narrow_the_rest(tmp_path):
    f = versioned_files(tmp_path, a="""
        import inspect
        from prov import Engine
        def f(e: Engine):
            if not hasattr(e, "new"):
                return e.old()
            e.new()
            if "p" in inspect.signature(Engine.run).parameters:
                e.run(p=1)
    """)["cons/a.py"]
    by_line = {u.site.line: u for u in f.uses}
    assert by_line[6].live.conditions[0].expect is False and by_line[6].live.conditions[0].name == "new"
    assert by_line[7].live.conditions[0].expect is True  # the rest runs only where hasattr held
    assert any(c.kind.value == "has-param" and c.name == "p" for c in by_line[9].live.conditions)


def test_guards_narrow_chains_and_a_guard_and_raise_is_recorded(tmp_path):
    f = files_of(tmp_path, g="""
        import types
        from prov.worker import Worker
        from prov.interfaces import supports_draft

        def forward(self, x):
            return self.embed(x)

        class Ext(Worker):
            def setup(self):
                model = self.runner.model
                if not supports_draft(model):
                    raise ValueError("no")
                base = model.model
                if hasattr(base, "inner"):
                    target = base.inner
                else:
                    target = base
                target._mine = 1
                types.MethodType(forward, target)
                setattr(base, "forward", forward)
        """)["cons/g.py"]
    (stop,) = f.guard_stops
    assert (stop.site.line, stop.condition.kind.value, stop.condition.name, stop.condition.expect, stop.condition.stops) == (
        12, "narrows", "prov.interfaces.supports_draft", True, True)
    # one binding per way `target` can be, then the setattr on `base`
    targets = [tuple((s.kind, s.name) for s in b.target[1]) for b in f.method_bindings]
    narrow = ("narrow", "prov.interfaces.supports_draft")
    assert targets == [
        (("attr", "runner"), ("attr", "model"), narrow, ("attr", "model"), ("narrow", "inner"), ("attr", "inner")),
        (("attr", "runner"), ("attr", "model"), narrow, ("attr", "model"), ("narrow", "inner")),
        (("attr", "runner"), ("attr", "model"), narrow, ("attr", "model")),
    ]
    assert [b.own for b in f.method_bindings] == [("_mine",), ("_mine",), ()]
    guard_step = f.method_bindings[0].target[1][2].guard
    assert guard_step.stops and guard_step.expect is True
    assert [s.guard.expect for s in f.method_bindings[1].target[1] if s.kind == "narrow"] == [True, False]


def test_a_none_test_of_a_constructor_argument_conditions_both_sides(tmp_path):
    """`if cache is not None:` / `else:` in an `__init__` whose `cache` defaults to None: each side
    runs under the ARGUMENT condition (the `else` expecting it False); `if cache:` leaves its other
    side unconditioned, and so does a parameter the body rebinds."""
    f = versioned_files(tmp_path, a="""
        import prov
        class Conn(prov.Base):
            def __init__(self, config, cache=None, other=None):
                if cache is not None:
                    prov.given(cache)
                else:
                    prov.absent()
                if cache:
                    prov.truthy()
                else:
                    prov.falsy()
                other = make(other)
                if other is None:
                    prov.rebound()
    """)["cons/a.py"]
    by_line = {u.site.line: [(c.kind.value, c.expect, c.name, c.owner) for c in u.live.conditions] for u in f.uses if u.steps}
    assert by_line[6] == [("argument", True, "cache", "cons.a.Conn")]
    assert by_line[8] == [("argument", False, "cache", "cons.a.Conn")]
    assert by_line[10] == [("argument", True, "cache", "cons.a.Conn")]
    assert by_line[12] == by_line[15] == []


def test_the_rest_of_an_init_after_returning_on_a_given_argument_runs_where_it_is_none(tmp_path):
    f = versioned_files(tmp_path, a="""
        import prov
        class Conn(prov.Base):
            def __init__(self, config, cache=None):
                if cache is not None:
                    return
                prov.absent()
    """)["cons/a.py"]
    (use,) = [u for u in f.uses if u.steps and u.steps[0].name == "absent"]
    assert [(c.kind.value, c.expect, c.name) for c in use.live.conditions] == [("argument", False, "cache")]


def test_the_truth_of_an_attribute_of_an_instance_is_a_fixed_value_condition(tmp_path):
    """`if self.flag and not x:` on a consumer class over a provider class: the true side runs under
    a FIXED_VALUE condition on `self.flag` (the checks decide it where the provider keeps the flag at
    one literal), every other side as on run-time data: the `else` unconditioned, like the code after
    `if self.flag or x:`. The flag kept in a name is the same test; a module's attribute (`prov.FLAG`)
    and a local of another value stay run-time tests."""
    f = versioned_files(tmp_path, a="""
        import prov
        class Runner(prov.Base):
            def step(self, x):
                if self.flag and not x:
                    prov.fast()
                else:
                    prov.slow()
                if self.flag or x:
                    prov.either()
                if prov.FLAG:
                    prov.module_flag()
                on = self.flag
                n = len(x)
                if on:
                    prov.kept()
                if n:
                    prov.local()
    """)["cons/a.py"]
    by_line = {u.site.line: [(c.kind.value, c.expect, c.text) for c in u.live.conditions] for u in f.uses if u.steps and u.root.kind == "symbol"}
    assert by_line[6] == [("fixed-value", True, "self.flag")]
    assert by_line[16] == [("fixed-value", True, "on")]
    assert by_line[8] == by_line[10] == by_line[12] == by_line[18] == []
