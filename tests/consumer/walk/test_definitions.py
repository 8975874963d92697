"""Function scopes and the class learning pass: what parameters and self.X hold (`walk/definitions.py`)."""

from __future__ import annotations

import ast

from apiaudit.consumer.walk import definitions
from tests.consumer.test_visitor import chains, files_of, versioned_files


def test_locals_and_self_attributes_carry_types_without_rechecking(tmp_path):
    f = files_of(tmp_path, b="""
        from prov.sched import Scheduler
        class Runner:
            def __init__(self):
                self.s = Scheduler(1)
            def go(self, other: Scheduler | None):
                self.s.step()
                other.stop()
        x = Scheduler(2)
        x.gone
    """)["cons/b.py"]
    found = chains(f)
    # self.s.step(): the constructor call is replayed unchecked, the method call is checked.
    assert (7, "symbol", "prov.sched.Scheduler", (("call", None, False), ("attr", "step", True), ("call", None, True))) in found
    assert (8, "symbol", "prov.sched.Scheduler", (("instance", None, False), ("attr", "stop", True), ("call", None, True))) in found
    assert (10, "symbol", "prov.sched.Scheduler", (("call", None, False), ("attr", "gone", True))) in found


def test_what_self_attributes_hold_is_learned_from_every_method_that_can_change_it(tmp_path):
    # The class's learning pass skips methods that cannot change what self.X holds: a dict held
    # by self.X still changes through a call in a method that stores no attribute, and a store
    # in any method makes the value conflict.
    f = versioned_files(tmp_path, a="""
        from prov import Args, Engine, Other
        class Job:
            def __init__(self):
                self.kw = {"a": 1}
                self.engine = Engine()
            def widen(self, extra):
                self.kw.update(extra)
            def later(self):
                self.engine = Other()
            def run(self):
                Args(**self.kw)
                self.engine.step()
        class Plain:
            def __init__(self):
                self.kw = {"a": 1}
            def other(self):
                Args(a=2)
            def run(self):
                Args(**self.kw)
    """)["cons/a.py"]
    shapes = [u.steps[-1].call for u in f.uses if u.steps and u.steps[-1].kind == "call" and u.root.name == "prov.Args"]
    assert [s.has_starstar for s in shapes] == [True, False, False]  # widened by a call elsewhere; known keys
    assert [sorted(a.name for a in s.keywords) for s in shapes][2] == ["a"]
    assert not [u for u in f.uses if u.text == "self.engine.step()"]  # conflicting values: nothing known


def test_the_learning_pass_reads_every_method_storing_an_attribute_whole(tmp_path):
    # A method storing no attribute is skipped before its parameters are read; one storing any
    # is walked whole: a store in a nested function, a local read by a store, and an item
    # stored into a dict the method put in self.X after the store all count.
    f = versioned_files(tmp_path, a="""
        from prov import Engine, Other
        class Job:
            def __init__(self, flag):
                kind = Engine
                log(flag)
                self.engine = kind()
                def rebuild():
                    self.spare = Other()
                rebuild()
                self.opts = {"seed": 1}
                self.opts["swap"] = 2
            def run(self):
                self.engine.step()
                self.spare.turn()
                Engine(**self.opts)
    """)["cons/a.py"]
    roots = {u.text: (u.root.name, [s.name for s in u.steps if s.kind == "attr"]) for u in f.uses}
    assert roots["self.engine.step()"] == ("prov.Engine", ["step"])
    assert roots["self.spare.turn()"] == ("prov.Other", ["turn"])
    engine = [u.steps[-1].call for u in f.uses if u.text == "Engine(**self.opts)"]
    assert [sorted(a.name for a in shape.keywords) for shape in engine] == [["seed", "swap"]]


def test_a_class_read_once_tells_which_methods_store_an_attribute_or_return_a_tuple():
    """`own_members` reads, in the same pass, what the learning pass asks of each method."""
    node = ast.parse(
        "class C:\n"
        "    x = 1\n"
        "    def a(self):\n        if self:\n            self.y = 1\n"
        "    def b(self):\n        return (1, 2)\n"
        "    def c(self):\n        def inner():\n            del self.z\n        return 3\n"
        "    def d(self):\n        pass\n"
    ).body[0]
    assert isinstance(node, ast.ClassDef)
    methods: dict[int, tuple[bool, bool]] = {}
    assert definitions.own_members(node, methods) == {"x", "a", "b", "c", "d", "y"}
    by_name = {stmt.name: methods[id(stmt)] for stmt in node.body if isinstance(stmt, ast.FunctionDef)}
    assert by_name == {"a": (True, False), "b": (False, True), "c": (True, False), "d": (False, False)}
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef):
            assert by_name[stmt.name] == (any(definitions._stores_attribute(s) for s in stmt.body), definitions._returns_tuple(stmt))
