"""The contract the provider calls (issue 25): overrides, plugin constructors, abstract members.

Fixture provider `hostlib` v1 -> v2 (fixtures/providers/hostlib_v{1,2}) builds and calls the
consumer `plugin` (fixtures/consumers/plugin): each line's comment says what v2 breaks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from apiaudit.audit import scan
from apiaudit.consumer.contracts import defined_functions
from apiaudit.policy.config import Settings

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PROVIDERS = FIXTURES / "providers"
CONSUMER = FIXTURES / "consumers" / "plugin" / "plugin"
CONTRACT_RULES = {
    "override-incompatible", "constructor-incompatible", "abstract-unimplemented", "replacement-incompatible", "patch-target-missing",
    "entry-point-incompatible",
}  # fmt: skip


def _findings(version: str):
    report = scan(
        [str(CONSUMER)], str(PROVIDERS / f"hostlib_v{version}" / "hostlib"), rules_dirs=[PROVIDERS],
        cache_dir=None, use_index_cache=False, settings=Settings(),
    )  # fmt: skip
    return sorted(
        (f.path, f.line, f.rule, f.severity.value, f.param, f.provider_location)
        for f in report.findings
        if f.rule in CONTRACT_RULES
    )


def test_nothing_breaks_on_the_release_the_plugin_was_written_for():
    assert _findings("1") == []


def test_modules_only_the_provider_loads_by_name_are_live():
    """`_boot` (an entry point the host loads), `_named` (registered by name) and `_configured`
    (a config value's module path) are imported by nothing in the package: each is live."""
    report = scan(
        [str(CONSUMER)], str(PROVIDERS / "hostlib_v2" / "hostlib"), rules_dirs=[PROVIDERS],
        cache_dir=None, use_index_cache=False, settings=Settings(),
    )  # fmt: skip
    named = [f for f in report.findings if f.path in ("plugin/_boot.py", "plugin/_named.py", "plugin/_configured.py")]
    assert len(named) == 3 and not any(f.conditional or f.unreachable for f in named)


def test_each_break_on_the_next_release_names_the_provider_call_site():
    assert _findings("2") == [
        # named, not derived: an entry point the host calls, a registration, a config value
        ("plugin/_boot.py", 6, "entry-point-incompatible", "error", None, "hostlib/plugins.py:7"),
        ("plugin/_configured.py", 5, "constructor-incompatible", "error", "cache_config", "hostlib/factory.py:14"),
        ("plugin/_named.py", 5, "constructor-incompatible", "error", "cache_config", "hostlib/factory.py:14"),
        ("plugin/connector.py", 6, "abstract-unimplemented", "error", "finish", None),
        ("plugin/connector.py", 7, "constructor-incompatible", "error", "cache_config", "hostlib/factory.py:14"),
        ("plugin/connector.py", 16, "override-incompatible", "error", "external_tokens", "hostlib/scheduler.py:12"),
        ("plugin/connector.py", 19, "override-incompatible", "warning", None, "hostlib/scheduler.py:11"),
        ("plugin/executor.py", 7, "override-incompatible", "error", "non_block", "hostlib/executor.py:6"),
        ("plugin/patches.py", 20, "replacement-incompatible", "error", "metadata", "hostlib/model.py:16"),
        ("plugin/patches.py", 21, "patch-target-missing", "warning", "old_hook", None),
        ("plugin/patches.py", 25, "replacement-incompatible", "error", "positions", "hostlib/model.py:19"),
    ]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("class A(B):\n    def f(self, x, /, y=1, *a, k, **kw):\n        return x, y\n", [("m.A.f", "method", (2,))]),
        ("class A(B):\n    @staticmethod\n    def f(x):\n        return g(*x)\n", [("m.A.f", "staticmethod", (None,))]),
        ("def f(x):\n    def inner():\n        return 1, 2\n", [("m.f", "function", ())]),
        ("if X:\n    class A:\n        def f(self):\n            return (1, 2)\n", [("m.A.f", "method", (2,))]),
    ],
)
def test_definitions_record_what_a_caller_binds_to(source, expected):
    import ast

    found = defined_functions(ast.parse(source), "m")
    assert [(f.dotted, f.kind, f.returns) for f in found] == expected


def test_a_definition_keeps_every_parameter_kind_and_default():
    import ast

    (f,) = defined_functions(ast.parse("def f(a, /, b=1, *c, d, e=2, **g): pass\n"), "m")
    assert [(p.name, p.kind, p.has_default) for p in f.params] == [
        ("a", "positional-only", False), ("b", "positional-or-keyword", True), ("c", "var-positional", False),
        ("d", "keyword-only", False), ("e", "keyword-only", True), ("g", "var-keyword", False),
    ]  # fmt: skip


def test_an_error_in_an_init_the_factory_cannot_call_follows_that_failure():
    """Issue 27, cause 10: the first failure of a path, once. On hostlib 2.0 the factory cannot
    call ChainedConnector.__init__, so its body's wrong `super().__init__(...)` is a warning that
    names the first failure; on 1.0 the factory binds and the same line is an error."""

    def severities(version: str):
        report = scan(
            [str(FIXTURES / "consumers" / "plugin_chain" / "plugin_chain")], str(PROVIDERS / f"hostlib_v{version}" / "hostlib"),
            rules_dirs=[PROVIDERS], cache_dir=None, use_index_cache=False, settings=Settings(),
        )  # fmt: skip
        return sorted((f.line, f.rule, f.severity.value, "follows the failure at line 7" in (f.reason or "")) for f in report.findings)

    assert severities("2") == [(7, "constructor-incompatible", "error", False), (8, "unexpected-keyword", "warning", True)]
    assert severities("1") == [(8, "unexpected-keyword", "error", False)]
