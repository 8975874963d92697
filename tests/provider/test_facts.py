"""The Griffe extension's facts for light inference: self.NAME = callee(...), self.NAME: T, return callee(...)."""

from __future__ import annotations

import textwrap

from apiaudit.provider.facts import facts
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
        "runner": [["RunnerV1", []]],
    }
    assert facts(host)["self_annotations"] == {"runner": "'Runner'"}
    assert facts(host.members["_build"])["return_calls"] == ["Model", "Model"]
    assert "hidden" in facts(host)["self_assigned"]  # still recorded as an attribute, just not inferred
