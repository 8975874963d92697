"""Code of a plugin nothing calls (checks/unreached.py; issue 37, N18): a class nothing builds
(registered only in a table the provider never builds from), a method nothing calls; a
library's stay live. fixtures/consumers/platplug against fixtures/providers/platkit_v1, each
line's comment saying what is expected."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

from apiaudit.audit import scan
from apiaudit.policy.config import Settings

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PROVIDER = FIXTURES / "providers" / "platkit_v1" / "platkit"
CONSUMER = FIXTURES / "consumers" / "platplug" / "platplug"


def _findings(consumer: Path, rules: tuple[Path, ...] = (FIXTURES / "providers",)) -> list[tuple]:
    report = scan([str(consumer)], str(PROVIDER), use_index_cache=False, settings=Settings(), rules_dirs=list(rules))
    found = [(f.path, f.line, f.rule, f.severity.value, f.conditional, f.reason) for f in report.findings if f.rule != "cannot-judge"]
    return sorted(found, key=lambda f: (f[0], f[1]))


@functools.lru_cache(maxsize=None)
def _platplug() -> tuple[tuple, ...]:
    return tuple(_findings(CONSUMER))


def platplug_findings() -> list[tuple]:
    """Every finding on platplug against platkit 1.0."""
    return list(_platplug())


NOTHING_BUILDS = (
    "nothing in platplug or the provider builds FastGelu: no code that may run names it, and the provider never reads a "
    "class from CustomOp.op_registry, where its decorator registers it"
)


def test_a_plugin_class_nothing_builds_and_a_method_nothing_calls_are_conditional():
    """vllm-kunlun's CustomOp subclasses registered by names vLLM never builds from (built only
    by a factory table nothing calls), and `KunlunCommunicator.change_state` (a context manager
    nothing enters, declared by no vLLM base). An override the provider dispatches to, a method
    the plugin calls itself, a class built in a provider class's place (`register_oot`) or by the
    plugin stay errors, and so does a class no decorator registers (a user may name it in the
    provider's configuration)."""
    assert [f for f in platplug_findings() if f[0] in ("platplug/activation.py", "platplug/comm.py")] == [
        ("platplug/activation.py", 9, "attribute-missing", "error", True, NOTHING_BUILDS),
        ("platplug/activation.py", 24, "attribute-missing", "error", False, None),
        ("platplug/activation.py", 28, "attribute-missing", "error", True,
         "nothing in platplug or the provider calls PlugGelu.forward_plug: no provider class it derives from declares it, "
         "and no code names it"),
        ("platplug/activation.py", 36, "attribute-missing", "error", False, None),
        ("platplug/activation.py", 43, "attribute-missing", "error", False, None),
        ("platplug/activation.py", 51, "attribute-missing", "error", False, None),
        ("platplug/comm.py", 4, "import-missing", "error", False, None),
        ("platplug/comm.py", 10, "attribute-missing", "error", False, None),
        ("platplug/comm.py", 13, "attribute-missing", "error", False, None),
        ("platplug/comm.py", 18, "attribute-missing", "error", True,
         "nothing in platplug or the provider calls PlugCommunicator.change_state: no provider class it derives from "
         "declares it, and no code names it"),
    ]  # fmt: skip


def test_a_library_s_methods_and_classes_stay_live(tmp_path):
    """The same package without the entry points the provider loads is a library: a user may
    build any public class and call any public method, and every module is user-facing."""
    package = tmp_path / "platplug"
    shutil.copytree(CONSUMER, package)
    found = _findings(package)
    assert [f for f in found if f[4]] == []
    assert {(f[0], f[1]) for f in found} == {(f[0], f[1]) for f in platplug_findings()}


def test_a_class_built_in_a_hook_implementation_is_built():
    """A module function named with a rule's hook prefix (`platkit_ops`) is called by the
    provider by its name: a class it builds is built, though nothing names the function. Without
    the rule, nothing calls the function, and nothing builds the class."""
    line = ("platplug/activation.py", 51)
    assert [f[4] for f in platplug_findings() if f[:2] == line] == [False]
    without = [f for f in _findings(CONSUMER, ()) if f[:2] == line]
    assert [(f[4], f[5]) for f in without] == [
        (True, "nothing in platplug or the provider builds Tanh: no code that may run names it, and the provider never reads a "
         "class from CustomOp.op_registry, where its decorator registers it"),
    ]  # fmt: skip
