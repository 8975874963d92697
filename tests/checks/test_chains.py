"""Model objects as unions of registry classes (issue 9): guards narrow them, code bound onto
them is checked on each class, a failing job-stopping guard is `guard-fails`.

The fixture provider modelhub (fixtures/providers/modelhub_v1, _v2, rules modelhub.toml) has a
registry (Dense, Moe, MoeV3, Wrapper), a runner slot, a factory and the `supports_draft` TypeIs
function; v2 renames the base models' get_input_embeddings to embed_input_ids and adds
SupportsDraft to the wrapper. The consumer fixtures/consumers/capture binds a forward onto the
model's base model after a guard-and-raise (guarded.py) or hasattr branches (branching.py).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from apiaudit.audit import scan
from apiaudit.model import load_model

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PROVIDERS = FIXTURES / "providers"
CONSUMER = FIXTURES / "consumers" / "capture"


def _findings(version: str, model: str | None):
    report = scan([str(CONSUMER)], str(PROVIDERS / version / "modelhub"), cache_dir=None, rules_dirs=[PROVIDERS],
                  use_index_cache=False, model=load_model(FIXTURES / "models" / model) if model else None)
    return {
        (f.rule, f.severity.value, f.path, f.line, f.callee, ",".join(map(str, f.behind_guard)) or None)
        for f in report.findings if f.rule != "cannot-judge"
    }, report


def test_v1_without_model_every_candidate_has_what_the_bound_code_uses():
    got, _ = _findings("modelhub_v1", None)
    assert got == set()


def test_v2_without_model_a_member_missing_on_every_candidate_is_an_error_and_on_some_one_warning():
    got, report = _findings("modelhub_v2", None)
    assert got == {
        # hasattr branches: the get_language_model() side cannot be read (unknown, not failing)
        ("attribute-missing", "error", "capture/branching.py", 7, "modelhub.models.dense.DenseModel.get_input_embeddings", None),
        # guard-and-raise narrows to the SupportsDraft classes; their base models lack it
        ("attribute-missing", "error", "capture/guarded.py", 10, "modelhub.models.dense.DenseModel.get_input_embeddings", None),
        # the wrapper passes supports_draft in v2 but has no `model`
        ("model-attribute-missing", "warning", "capture/guarded.py", 21, "modelhub.models.wrapper.WrapperForConditionalGeneration.model", None),
    }
    warning = next(f for f in report.findings if f.rule == "model-attribute-missing")
    assert warning.facts.architectures == ("WrapperForConditionalGeneration",)
    assert "1 of 4 classes" in warning.message
    error = next(f for f in report.findings if f.path == "capture/guarded.py" and f.line == 10)
    assert error.facts.classes == ("modelhub.models.dense.DenseModel", "modelhub.models.moe.MoeModel")


def test_v1_with_the_wrapper_model_the_guard_fails_and_what_follows_is_behind_it():
    got, report = _findings("modelhub_v1", "hub-wrapper")
    assert got == {
        ("guard-fails", "error", "capture/guarded.py", 19, "modelhub.models.interfaces.supports_draft", None),
        ("attribute-missing", "error", "capture/guarded.py", 21, "modelhub.models.wrapper.WrapperForConditionalGeneration.model", "19"),
    }
    behind = next(f for f in report.findings if f.rule == "attribute-missing")
    assert "behind the failing guard `supports_draft(model)` (line 19)" in behind.message


def test_v2_with_the_wrapper_model_the_guard_passes():
    got, _ = _findings("modelhub_v2", "hub-wrapper")
    assert got == {
        ("attribute-missing", "error", "capture/guarded.py", 21, "modelhub.models.wrapper.WrapperForConditionalGeneration.model", None),
    }


@pytest.mark.parametrize("version, expected", [
    ("modelhub_v1", set()),
    ("modelhub_v2", {
        # the wrapper's branch is never taken for the dense model: no unjudged option
        ("attribute-missing", "error", "capture/branching.py", 7, "modelhub.models.dense.DenseModel.get_input_embeddings", None),
        ("attribute-missing", "error", "capture/guarded.py", 10, "modelhub.models.dense.DenseModel.get_input_embeddings", None),
    }),
])
def test_dense_model_is_checked_as_its_one_class(version, expected):
    got, report = _findings(version, "hub-dense")
    assert got == expected
    for f in report.findings:
        if f.rule == "attribute-missing":
            assert f.message == "'DenseModel' object has no attribute 'get_input_embeddings'"


def _scan_sources(tmp_path, provider: str, consumer: str):
    prov = tmp_path / "prov" / "coop"
    prov.mkdir(parents=True)
    (prov / "__init__.py").write_text(textwrap.dedent(provider))
    cons = tmp_path / "cons" / "user"
    cons.mkdir(parents=True)
    (cons / "__init__.py").write_text(textwrap.dedent(consumer))
    report = scan([str(cons)], str(prov), cache_dir=None, use_index_cache=False)
    return {(f.rule, f.severity.value, f.line, f.param) for f in report.findings}


COOPERATIVE = """
    class Root:
        def __init__(self): ...
    class A(Root):
        def __init__(self, **kw):
            super().__init__(**kw)
    class B(Root):
        def __init__(self, dim, **kw):
            super().__init__(**kw)
"""


def test_super_init_kwargs_follow_the_consumer_class_mro_only_where_it_is_known(tmp_path):
    """`class P(A, B)`: A's `super().__init__(**kw)` reaches B, which takes `dim` (and Root
    rejects `width`). With a consumer base in between, the order of the provider bases is not
    known: the forwarded keywords are not judged (issue 27, cause 6)."""
    got = _scan_sources(tmp_path, COOPERATIVE, """
        from coop import A, B
        class P(A, B):
            def __init__(self):
                super().__init__(dim=1)
        class Q(A, B):
            def __init__(self):
                super().__init__(dim=1, width=2)
        class Mixin:
            pass
        class R(Mixin, A):
            pass
        class S(R, B):
            def __init__(self):
                super().__init__(dim=1, width=2)
    """)
    assert got == {("unexpected-keyword", "error", 8, "width")}


def test_a_forwarded_keyword_under_a_type_error_handler_is_a_warning(tmp_path):
    got = _scan_sources(tmp_path, COOPERATIVE, """
        from coop import A
        try:
            A(width=2)
        except TypeError:
            A()
    """)
    assert got == {("unexpected-keyword", "warning", 4, "width")}


def test_the_retry_in_a_type_error_handler_runs_only_where_the_probed_call_fails(tmp_path):
    """Precision cause N6: `try: f(new=...)` / `except TypeError: f(old=...)`. Where the body's
    call binds on the release, the handler runs only on a TypeError from inside it: its own
    call's error is a warning that says so. Where the body's call fails too, the handler is what
    runs, and its failure stays an error (both ways fail)."""
    got = _scan_sources(tmp_path, """
        def make(value, blocks=1): ...
    """, """
        from coop import make
        def new_first(v):
            try:
                return make(v, blocks=2)
            except TypeError:
                return make(v, old_blocks=2)
        def both_fail(v):
            try:
                return make(v, width=2)
            except TypeError:
                return make(v, old_width=2)
    """)
    assert got == {
        ("unexpected-keyword", "warning", 7, "old_blocks"),
        ("unexpected-keyword", "warning", 10, "width"),
        ("unexpected-keyword", "error", 12, "old_width"),
    }


def test_an_attribute_the_provider_builds_as_one_of_several_classes_is_judged_on_each():
    """Precision cause 2: `self.model_runner: Runner = self._make_runner()`, whose helper returns
    the first runner or (in some configurations) a second one, imported inside it. The annotation
    is one of two: a member either has is no error, a call either's method takes is a warning
    naming the other; a member neither has stays an error, as does one on an attribute the
    provider builds from one class only."""
    from pathlib import Path

    fixtures = Path(__file__).resolve().parents[2] / "fixtures"
    report = scan(
        [str(fixtures / "consumers" / "runneruse" / "runneruse")], str(fixtures / "providers" / "runnerlib_v1" / "runnerlib"),
        cache_dir=None, use_index_cache=False,
    )  # fmt: skip
    got = {(f.rule, f.severity.value, f.line, f.param) for f in report.findings}
    assert got == {
        ("unexpected-keyword", "warning", 7, "context_len"),
        ("attribute-missing", "error", 8, None),
        ("attribute-missing", "error", 11, None),
    }
    warned = next(f for f in report.findings if f.line == 7)
    assert warned.reason == "the provider also builds a Runner there, whose dummy_run takes the call"


def test_an_attribute_set_on_a_builtin_item_of_an_annotated_tuple_is_attribute_missing():
    """runnerplug against runnerkit (fixtures/consumers/runnerplug, arctic-inference 0.0.2's
    model_runner.py): `attn_metadata, logits_indices, *rest = super()._prepare_inputs(batch)`,
    where the provider annotates `-> tuple[dict[str, Metadata], int, Optional[SpecInfo]]`: the
    items before the starred one are known by their index, and setting an attribute on a dict
    (or an int) raises AttributeError. An `Optional[dict]` item, an instance of a provider class
    and an item of a tuple of no fixed length are not judged."""
    report = scan([str(FIXTURES / "consumers" / "runnerplug" / "runnerplug")], str(PROVIDERS / "runnerkit_v1" / "runnerkit"), use_index_cache=False)
    # (runner.py's `execute`, below line 20, and others.py: the next test)
    assert {(f.path, f.line, f.rule, f.severity.value, f.conditional, f.param) for f in report.findings if f.rule != "cannot-judge" and f.path == "runnerplug/runner.py" and f.line <= 20} == {
        ("runnerplug/runner.py", 10, "attribute-missing", "error", False, "logits_indices"),
        ("runnerplug/runner.py", 11, "attribute-missing", "error", False, "source"),
    }


def test_the_items_a_consumer_override_returns_as_it_unpacked_them_are_followed():
    """runnerplug against runnerkit (arctic-inference 0.0.2's model_runner.py:73): `execute` unpacks
    `self._prepare_inputs(batch)`, the consumer's own override (no annotation) whose every `return`
    is `attn_metadata, logits_indices, *rest` of `attn_metadata, logits_indices, *rest =
    super()._prepare_inputs(batch)`: its first item is the provider's dict, and three targets take
    the provider's three items. Not judged: two targets (ValueError at the unpacking, through the
    override or of `super()._prepare_inputs(batch)` itself), a name rebound
    before the return, returns that disagree, a starred item before the item, and a method a
    consumer subclass overrides (others.py)."""
    report = scan([str(FIXTURES / "consumers" / "runnerplug" / "runnerplug")], str(PROVIDERS / "runnerkit_v1" / "runnerkit"), use_index_cache=False)
    assert {(f.path, f.line, f.rule, f.severity.value, f.conditional, f.param) for f in report.findings if f.rule != "cannot-judge"} == {
        ("runnerplug/runner.py", 10, "attribute-missing", "error", False, "logits_indices"),
        ("runnerplug/runner.py", 11, "attribute-missing", "error", False, "source"),
        ("runnerplug/runner.py", 25, "attribute-missing", "error", False, "num_input_tokens"),
    }
    (through,) = [f.message for f in report.findings if f.line == 25]
    assert "TaggingRunner._prepare_inputs returns it as it is" in through
