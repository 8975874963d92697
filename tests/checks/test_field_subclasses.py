"""A call of a consumer class built on a provider class whose `__init__` is synthesized from fields.

Fixture provider structkit v1 -> v2 (fixtures/providers/structkit_v{1,2}): 2.0's msgspec Struct
`CoreRequest` (written with vLLM's `EngineCoreRequest` options), dataclass `Options` and pydantic
model `Settings` (extra="forbid") lose the field `eos_token_id`. The consumer
fixtures/consumers/structuse builds its own subclasses of them; each line says what is expected.
"""

from __future__ import annotations

from pathlib import Path

from apiaudit.audit import scan

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CONSUMER = "structuse/__init__.py"


def _findings(version: str):
    report = scan(
        [str(FIXTURES / "consumers" / "structuse" / "structuse")], str(FIXTURES / "providers" / f"structkit_v{version}" / "structkit"),
        cache_dir=None, use_index_cache=False,
    )  # fmt: skip
    return {(f.path, f.line, f.rule, f.severity.value, f.callee, f.param) for f in report.findings}


# On both releases: a deeper consumer class's own required keyword-only field left out; an
# undecorated subclass of a dataclass takes no field of its own; a decorator of the consumer's
# makes the call unjudgeable (never an error). The class with its own __init__ (line 51) is not
# judged against the fields.
BOTH = {
    (CONSUMER, 48, "cannot-judge", "info", "structkit.CoreRequest", None),
    (CONSUMER, 49, "missing-required", "error", "structkit.CoreRequest", "stage"),
    (CONSUMER, 55, "unexpected-keyword", "error", "structkit.Options", "extra"),
}
OWN_INIT = (CONSUMER, 23, "cannot-judge", "info", "structkit.CoreRequest.__init__", None)


def test_subclass_calls_bind_on_the_release_they_were_written_for():
    assert _findings("1") == BOTH | {OWN_INIT}


def test_a_field_the_provider_dropped_breaks_the_calls_of_consumer_subclasses():
    assert _findings("2") == BOTH | {OWN_INIT} | {
        (CONSUMER, 44, "unexpected-keyword", "error", "structkit.CoreRequest", "eos_token_id"),  # msgspec Struct
        (CONSUMER, 54, "unexpected-keyword", "error", "structkit.Options", "eos_token_id"),  # dataclass
        (CONSUMER, 57, "unexpected-keyword", "error", "structkit.Settings", "eos_token_id"),  # pydantic, extra="forbid"
    }


def test_impact_names_the_dropped_field_as_the_change_that_breaks_the_subclass_call(tmp_path):
    from apiaudit.impact.run import run_impact
    from apiaudit.recipes.changes import ChangeKind

    listed = tmp_path / "downstream.toml"
    listed.write_text(f'replace-bundled = true\ndownstream = ["{FIXTURES / "consumers" / "structuse" / "structuse"}"]\n')
    providers = FIXTURES / "providers"
    result = run_impact(
        str(providers / "structkit_v1" / "structkit"), str(providers / "structkit_v2" / "structkit"),
        downstream_files=[listed], cache_dir=tmp_path / "cache",
    )  # fmt: skip
    removed = {(c.change.symbol, c.change.old_name) for c in result.by_change if c.change.kind is ChangeKind.REMOVED_PARAMETER}
    assert ("structkit.CoreRequest", "eos_token_id") in removed
