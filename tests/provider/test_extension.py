"""The Griffe extension's facts: light inference (self.NAME = callee(...), self.NAME: T, a helper's
returns), run-time namespaces and placeholder bodies."""

from __future__ import annotations

import ast
import textwrap

import pytest

from apiaudit.provider.extension import (
    dynamic_namespace,
    facts,
    fills_namespace,
    only_raises_not_implemented,
    returned_callees,
)
from apiaudit.provider.loader import ModuleLoader


def _module(tmp_path, source: str):
    pkg = tmp_path / "prov"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent(source))
    return ModuleLoader(tmp_path, ("prov",)).load("prov")


def test_assignments_annotations_and_returns(tmp_path):
    module = _module(tmp_path, """
        class Host:
            def __init__(self, config):
                self.model = self._build(config)
                self.inner = make(config, architectures=["A", "B"], prefix="p", other=[1])
                self.copy = config
                def nested():
                    self.hidden = Hidden()
            def later(self):
                self.runner: "Runner" = RunnerV1()
            def _build(self, config):
                if config:
                    return Model(config)
                return Model(None)
    """)
    host = module.members["Host"]
    assert facts(host)["assigned_calls"] == {
        "model": [["self._build", []]],
        "inner": [["make", [["architectures", ["A", "B"]]]]],
        "copy": [["", []]],
        "hidden": [["Hidden", []]],  # a closure assigning self counts too
        "runner": [["RunnerV1", []]],
    }
    assert facts(host)["self_annotations"] == {"runner": "'Runner'"}
    assert "hidden" in facts(host)["self_assigned"]


def test_returned_callees_skip_nested_functions():
    node = ast.parse("def f(x):\n    def g():\n        return Other()\n    if x:\n        return Model(x)\n    return x\n").body[0]
    assert sorted(returned_callees(node)) == ["", "Model"]


@pytest.mark.parametrize(
    "code",
    [
        "for n in names:\n    globals()[n] = f(n)",
        "globals().update(table)",
        "vars()['x'] = 1",
        "import sys\nsetattr(sys.modules[__name__], 'x', 1)",
        "import sys\nsys.modules['pkg.old'] = sys.modules[__name__]",
        "def _init():\n    globals()['late'] = 1\n\n_init()",
        "def _make():\n    g = globals()\n    for n in names:\n        g[n] = f(n)\n\n_make()",
        "import sys\nm = sys.modules[__name__]\nsetattr(m, 'cuda', object())",
    ],
)
def test_dynamic_namespaces(code):
    assert dynamic_namespace(ast.parse(code)) is not None


@pytest.mark.parametrize(
    "code",
    [
        # a helper that runs only when someone calls it binds nothing at import time
        "import sys\ndef import_from_path(name, mod):\n    sys.modules[name] = mod",
        "class Lazy:\n    def _load(self):\n        globals()['x'] = 1",
        "x = globals()['y']",
        "import sys\nmod = sys.modules[__name__]",
        "d = {}\nd['k'] = 1",
    ],
)
def test_static_namespaces(code):
    assert dynamic_namespace(ast.parse(code)) is None


def _func(code: str) -> ast.FunctionDef:
    return ast.parse(code).body[0]


def test_placeholder_bodies():
    assert only_raises_not_implemented(_func("def f(self):\n    '''doc'''\n    raise NotImplementedError('x')"))
    assert only_raises_not_implemented(_func("def f(self):\n    raise NotImplementedError"))
    assert not only_raises_not_implemented(_func("def f(self):\n    x = 1\n    raise NotImplementedError"))
    assert not only_raises_not_implemented(_func("def f(self):\n    raise ValueError"))


@pytest.mark.parametrize(
    "code",
    [
        # a registry filling its module's globals once called (sqlalchemy's util.preloaded)
        "import sys\nclass R:\n    def import_prefix(self, key, module):\n        self.__dict__[key] = globals()[key] = sys.modules[module]",
        "def fill(names):\n    g = globals()\n    g.update(names)",
        "import sys\ndef fill(k, v):\n    setattr(sys.modules[__name__], k, v)",
        "def fill(k, v):\n    (globals())[k] = v",
    ],
)
def test_namespaces_filled_at_run_time(code):
    assert fills_namespace(ast.parse(code)) is not None
    assert fills_namespace(ast.parse(code), code) is not None  # the text pre-test lets it through


@pytest.mark.parametrize(
    "code",
    [
        # installing another module, a function's own locals, reads: no name of this module
        "import sys\ndef import_from_path(name, mod):\n    sys.modules[name] = mod",
        "def f(k):\n    vars()[k] = 1",
        "def f(name):\n    return globals()[name]",
        "def f(d, k):\n    d[k] = 1",
        # globals() only passed on: the text pre-test skips the walk
        'torch = LazyLoader("torch", globals(), "torch")',
    ],
)
def test_namespaces_not_filled_at_run_time(code):
    assert fills_namespace(ast.parse(code)) is None
    assert fills_namespace(ast.parse(code), code) is None


def test_a_setattr_rebinding_a_member_read_first_adds_none(tmp_path):
    """`setattr(self, name, v)` after `getattr(self, name)` (no default, outside a `try`) rebinds a
    member that exists: the class does not compute attributes. Without the read, or with the read
    in a `try`, it may add any."""
    module = _module(tmp_path, """
        class Rebinds:
            def update(self, overrides):
                for name, value in overrides.items():
                    old = getattr(self, name)
                    setattr(self, name, (old, value))
        class Adds:
            def update(self, overrides):
                for name, value in overrides.items():
                    setattr(self, name, value)
        class Guarded:
            def update(self, name, value):
                try:
                    getattr(self, name)
                except AttributeError:
                    pass
                setattr(self, name, value)
    """)
    assert [facts(module.members[c])["dynamic_attrs"] for c in ("Rebinds", "Adds", "Guarded")] == [False, True, True]


def test_only_a_method_whose_lines_name_a_way_to_set_by_name_is_walked_for_one(tmp_path):
    """The expression walk (`setattr`, `__dict__`, a named registration) is gated per method by
    its own lines: a method naming none adds nothing, one naming one is read in full, wherever
    the module names the word elsewhere; a file with lone "\\r" line ends walks every method."""
    source = """
        class Mixed:
            def plain(self):
                self.kept = 1
                return helper(self)
            def named(self, key):
                setattr(self, "given", 2)
                self.register_buffer("buffer", None)
            def computed(self, key, value):
                setattr(self, key, value)
        class Quiet:
            def plain(self):
                self.kept = 1
    """
    module = _module(tmp_path, source)
    mixed, quiet = facts(module.members["Mixed"]), facts(module.members["Quiet"])
    assert {"kept", "given", "buffer"} <= set(mixed["self_assigned"]) and mixed["dynamic_attrs"] is True
    assert quiet["self_assigned"] == ["kept"] and quiet["dynamic_attrs"] is False
    (tmp_path / "prov" / "__init__.py").write_bytes(textwrap.dedent(source).replace("\n", "\r").encode())
    again = ModuleLoader(tmp_path, ("prov",)).load("prov")
    assert facts(again.members["Mixed"])["self_assigned"] == mixed["self_assigned"]
    assert facts(again.members["Mixed"])["dynamic_attrs"] is True


def test_a_function_passing_its_kwargs_on_is_read_and_one_only_taking_them_is_not(tmp_path):
    module = _module(tmp_path, """
        def passes(a, **kwargs):
            return Other(a, **kwargs)
        def spaced(**options):
            return Other(** options)
        def takes(**kwargs):
            return len(kwargs)
        @wrap(**defaults)
        def decorated(**kwargs):
            pass
    """)
    forwards = {name: facts(module.members[name]).get("forwards") for name in ("passes", "spaced", "takes", "decorated")}
    assert forwards["passes"] == [("Other", ())] and forwards["spaced"] == [("Other", ())]
    assert forwards["takes"] is None and forwards["decorated"] is None


def test_every_name_of_a_tuple_or_list_target_is_bound(tmp_path):
    """Issue 37, N15: Griffe skips an assignment to a tuple or list target whole; the extension
    binds each name (nested and starred too) in a module or class body, and no function's locals."""
    module = _module(tmp_path, """
        (
            FIRST,
            SECOND,
        ) = Flag.__members__.values()
        head, *rest = [1, 2, 3]
        [left, (right, middle)] = 1, (2, 3)
        if True:
            guarded_a, guarded_b = 1, 2
        kept = 1
        kept, other = 2, 3

        def f():
            local_a, local_b = 1, 2

        class K:
            k1, k2 = 1, 2
    """)
    bound = {"FIRST", "SECOND", "head", "rest", "left", "right", "middle", "guarded_a", "guarded_b", "kept", "other"}
    assert bound <= set(module.members) and not {"local_a", "local_b"} & set(module.members)
    assert module.members["FIRST"].labels == {"module-attribute"}
    assert {"k1", "k2"} <= set(module.members["K"].members)
