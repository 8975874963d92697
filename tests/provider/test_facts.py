"""The Griffe extension's facts for light inference: self.NAME = callee(...), self.NAME: T; a helper's returns."""

from __future__ import annotations

import textwrap

import ast

from apiaudit.provider.facts import facts, returned_callees
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
