"""[[pattern]] matching on consumer source: each match kind fires where it should and only there."""

from __future__ import annotations

import textwrap

import pytest

from apiaudit.checks.pattern_findings import match_patterns
from apiaudit.evidence import PatternFacts, RecipeFacts
from apiaudit.findings import Severity
from apiaudit.recipes import Pattern, load_rulebook

FOLLOW = Pattern(id="demo-needs-finish", severity=Severity.WARNING, versions="", kind="call-not-followed-by",
                 method="start", then="finish", message="start() must be followed by finish()", advice="call finish()")
SUBSCRIPT = Pattern(id="demo-single-reply", severity=Severity.WARNING, versions="", kind="result-subscripted",
                    method="ask", when_keyword="only_rank", subscript="int-literal", message="ask(only_rank=) returns one value")
CALLED = Pattern(id="demo-renamed", severity=Severity.ERROR, versions="", kind="method-called", method="old_name",
                 min_args=1, recipe="demo-rename", message="old_name(x) is new_name(x)")  # fmt: skip


def _match(source: str, *patterns: Pattern, package: str | None = "provider") -> list[tuple[str, int, int]]:
    found = match_patterns(textwrap.dedent(source), "pkg/mod.py", patterns, consumer="pkg", provider_packages=(package,) if package else None)
    return [(f.rule, f.line, f.column) for f in found]


def test_call_not_followed_by_fires_only_without_the_follow_up() -> None:
    source = """\
        import provider

        def bad(self, out):
            self.engine.start(out)

        def good(self, out):
            result = self.engine.start(out)
            self.engine.finish(result)

        def other_receiver(self, out):
            self.engine.start(out)
            self.other.finish(out)

        def follow_up_before(self, out):
            self.engine.finish(out)
            self.engine.start(out)
        """
    assert _match(source, FOLLOW) == [
        ("demo-needs-finish", 4, 4),
        ("demo-needs-finish", 11, 4),
        ("demo-needs-finish", 16, 4),
    ]
    loose = Pattern(**{**FOLLOW.__dict__, "same_receiver": False})
    assert _match(source, loose) == [("demo-needs-finish", 4, 4), ("demo-needs-finish", 16, 4)]


def test_result_subscripted_directly_or_through_its_name() -> None:
    source = """\
        from provider import x

        def direct(ex):
            return ex.ask("m", only_rank=0)[0]

        def through_name(ex):
            replies = ex.ask(
                "m",
                only_rank=0,
            )
            return replies[0]

        def keyed(ex, key):
            replies = ex.ask("m", only_rank=0)
            return replies[key]

        def without_keyword(ex):
            return ex.ask("m")[0]

        def used_whole(ex):
            reply = ex.ask("m", only_rank=0)
            return reply
        """
    assert _match(source, SUBSCRIPT) == [("demo-single-reply", 4, 11), ("demo-single-reply", 7, 14)]
    any_subscript = Pattern(**{**SUBSCRIPT.__dict__, "subscript": "any"})
    assert [m[1] for m in _match(source, any_subscript)] == [4, 7, 14]


def test_method_called_respects_min_args_and_links_its_recipe() -> None:
    source = """\
        import provider.models

        def forward(self, ids):
            return self.old_name(ids) + self.old_name()
        """
    (finding,) = match_patterns(textwrap.dedent(source), "pkg/mod.py", [CALLED], consumer="pkg", provider_packages=("provider",))
    assert (finding.line, finding.column, finding.severity) == (4, 11, Severity.ERROR)
    assert finding.recipe == RecipeFacts("demo-rename") and finding.facts == PatternFacts("demo-renamed", method="old_name")
    assert finding.source == "return self.old_name(ids) + self.old_name()"


def test_files_that_do_not_import_the_provider_are_left_alone() -> None:
    source = "def f(self, ids):\n    return self.old_name(ids)\n"
    assert _match(source, CALLED) == []
    assert _match(source, CALLED, package=None) == [("demo-renamed", 2, 11)]
    assert _match("import providerx\n" + source, CALLED) == []


def test_nested_functions_are_their_own_scope() -> None:
    source = """\
        import provider

        def outer(self):
            self.engine.start(1)
            def inner():
                self.engine.finish(1)
            return inner
        """
    assert _match(source, FOLLOW) == [("demo-needs-finish", 4, 4)]


def test_unparsable_source_yields_nothing() -> None:
    assert _match("import provider\ndef broken(:\n", FOLLOW, CALLED) == []


@pytest.mark.network
def test_vllm_patterns_fire_on_speculators_0_3_0_and_not_on_0_4_0(released) -> None:
    patterns = load_rulebook([], "vllm").applicable("0.16.0").patterns

    def fired(spec: str) -> set[tuple[str, str, str]]:
        tree = released(spec)
        found = set()
        for file in tree.python_files():
            rel = str(file.relative_to(tree.root))
            for f in match_patterns(file.read_text(), rel, patterns, consumer=tree.name, provider_packages=("vllm",)):
                found.add((f.rule, f.path, f.severity.value))
        return found

    old = fired("speculators==0.3.0")
    generator = "speculators/data_generation/vllm_hidden_states_generator.py"
    # Certain only when the receiver is vLLM's executor, which a text match cannot prove: a warning.
    assert ("vllm-execute-model-needs-sample-tokens", generator, "warning") in old
    assert ("vllm-collective-rpc-unique-reply-rank-single-value", generator, "error") in old
    # get_input_embeddings on the bound base model is an attribute-missing error now (the engine
    # knows the model's classes, tests/test_audit_real_wheels.py), explained by vllm-embed-input-ids.
    assert fired("speculators==0.4.0") == set()


def test_scopes_are_the_module_and_functions_only_and_imports_count_anywhere() -> None:
    # Class bodies and lambdas are no scope; a nested function is its own; an import inside a
    # function still makes the file a provider user.
    source = """\
        def f(self):
            import provider
            self.engine.old_name(1)

            class K:
                x = self.engine.old_name(2)

                def g(self):
                    self.engine.old_name(3)

            h = lambda: self.engine.old_name(4)
        """
    assert _match(source, CALLED) == [("demo-renamed", 3, 4), ("demo-renamed", 9, 12)]
