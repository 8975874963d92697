"""Binding follows CPython's rules; each case is what `inspect.signature(f).bind(...)` would say."""

from __future__ import annotations

import inspect

import pytest

from apiaudit.checks.binding import bind, bind_any
from apiaudit.consumer.records import Arg, CallShape, Site
from apiaudit.provider.records import Extra, KeywordAlias, Param, ParamKind, Signature

P = ParamKind


def sig(*params, extra=Extra.FORBID):
    return Signature(tuple(params), origin="def f", extra=extra)


def call(positional=0, keywords=(), star=False, starstar=False):
    args = [Arg("positional", None, Site(1, 0)) for _ in range(positional)]
    if star:
        args.append(Arg("star", None, Site(1, 0)))
    args += [Arg("keyword", k, Site(2, 4)) for k in keywords]
    if starstar:
        args.append(Arg("starstar", None, Site(1, 0)))
    return CallShape(tuple(args))


def rules(binding):
    return sorted((p.rule, p.param) for p in binding.problems)


A = Param("a", P.POSITIONAL_OR_KEYWORD)
B_DEFAULT = Param("b", P.POSITIONAL_OR_KEYWORD, has_default=True, default="1")
K_ONLY = Param("k", P.KEYWORD_ONLY)
POS_ONLY = Param("x", P.POSITIONAL_ONLY)
VARARGS = Param("args", P.VAR_POSITIONAL)
VARKW = Param("kwargs", P.VAR_KEYWORD)


def _python_says(params_src: str, call_src: str) -> bool:
    namespace: dict = {}
    exec(f"def f({params_src}): pass", namespace)
    try:
        eval(f"inspect.signature(f).bind({call_src})", {"inspect": inspect, "f": namespace["f"]})
        return True
    except TypeError:
        return False


@pytest.mark.parametrize(
    "params, params_src, shape, call_src, expected",
    [
        ((A, B_DEFAULT), "a, b=1", call(1), "1", []),
        ((A, B_DEFAULT), "a, b=1", call(0), "", [("missing-required", "a")]),
        ((A, B_DEFAULT), "a, b=1", call(3), "1, 2, 3", [("too-many-positional", None)]),
        ((A,), "a", call(1, ["zz"]), "1, zz=2", [("unexpected-keyword", "zz")]),
        ((A,), "a", call(1, ["a"]), "1, a=2", [("duplicate-argument", "a")]),
        ((POS_ONLY,), "x, /", call(0, ["x"]), "x=1", [("positional-only-by-keyword", "x")]),
        ((POS_ONLY, VARKW), "x, /, **kwargs", call(1, ["x"]), "1, x=2", []),
        ((A, K_ONLY), "a, *, k", call(1), "1", [("missing-required", "k")]),
        ((A, VARARGS, VARKW), "a, *args, **kwargs", call(5, ["q"]), "1,2,3,4,5, q=1", []),
    ],
)
def test_bind_agrees_with_python(params, params_src, shape, call_src, expected):
    binding = bind(sig(*params), shape, "f")
    assert rules(binding) == expected
    assert (not expected) == _python_says(params_src, call_src)


def test_splats_make_missing_parameters_uncertain_but_bad_keywords_still_errors():
    binding = bind(sig(A, K_ONLY), call(0, ["zz"], starstar=True), "f")
    assert rules(binding) == [("unexpected-keyword", "zz")]
    assert binding.uncertain


def test_extra_ignore_is_a_warning_and_allow_is_fine():
    ignored = bind(sig(A, extra=Extra.IGNORE), call(1, ["zz"]), "Model")
    assert [(p.rule, p.severity) for p in ignored.problems] == [("unexpected-keyword", "warning")]
    assert bind(sig(A, extra=Extra.ALLOW), call(1, ["zz"]), "Model").problems == ()


def test_a_call_fitting_any_overload_is_fine_else_runtime_decides():
    int_overload = sig(Param("x", P.POSITIONAL_OR_KEYWORD))
    str_overload = sig(Param("s", P.KEYWORD_ONLY))
    impl = sig(Param("x", P.POSITIONAL_OR_KEYWORD, has_default=True), Param("s", P.KEYWORD_ONLY, has_default=True))
    assert bind_any((int_overload, str_overload), impl, call(0, ["s"]), "f").problems == ()
    assert rules(bind_any((int_overload, str_overload), impl, call(0, ["nope"]), "f")) == [("unexpected-keyword", "nope")]


# --- call-without-keyword patterns: matched on the resolved callee (apiaudit/checks/chains.py) ---

def test_a_keyword_a_decorator_renames_fills_the_parameter_it_is_renamed_to():
    new = Param("processing_class", P.POSITIONAL_OR_KEYWORD)
    renamed = Signature((A, new), origin="def f", aliases=(KeywordAlias("tokenizer", "processing_class", "pkg.deco"),))
    assert rules(bind(renamed, call(1, ["tokenizer"]), "f")) == []  # not unexpected, and nothing missing
    assert rules(bind(renamed, call(1, ["tokenizer", "processing_class"]), "f")) == []  # the decorator decides
    assert rules(bind(renamed, call(1, ["tokenize"]), "f")) == [("missing-required", "processing_class"), ("unexpected-keyword", "tokenize")]
    assert rules(bind(renamed, call(2, ["tokenizer"]), "f")) == [("duplicate-argument", "tokenizer")]  # filled by position too


def test_a_keyword_a_decorator_may_rewrite_unread_is_undecided_not_an_error():
    rewritten = Signature((A, K_ONLY), origin="def f", rewritten_by="pkg.normalize")
    binding = bind(rewritten, call(1, ["K"]), "f")
    assert binding.problems == ()  # `k` missing too: the rewrite may fill it
    assert binding.uncertain == "the decorator pkg.normalize may rewrite keywords: whether f() takes 'K' cannot be read"
    assert bind(rewritten, call(1, ["k"]), "f") == bind(sig(A, K_ONLY), call(1, ["k"]), "f")  # what it takes is judged as ever
    assert rules(bind(rewritten, call(3, ["K"]), "f")) == [("too-many-positional", None)]


def test_call_without_keyword_follows_imports_and_skips_splats_and_lookalikes(tmp_path) -> None:
    from pathlib import Path

    from apiaudit.audit import scan

    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "runtime" / "prefix_cache_default"
    job = tmp_path / "job"
    job.mkdir()
    (job / "run.py").write_text(
        "import kvcache.config as cfg\n"
        "from kvcache.config import CacheConfig as CC\n"
        "\n"
        "\n"
        "class CacheConfig:  # the consumer's own class of the same name\n"
        "    pass\n"
        "\n"
        "\n"
        "def go(opts):\n"
        "    a = cfg.CacheConfig(block_size=8)  # found: module attribute\n"
        "    b = CC()  # found: aliased import\n"
        "    c = CC(**opts)  # not found: the splat may pass it\n"
        "    d = CC(enable_prefix_caching=False)  # not found: passed\n"
        "    e = CacheConfig()  # not found: not the provider's\n"
        "    return a, b, c, d, e\n"
    )
    report = scan(consumers=[str(job)], provider=str(fixture / "providers" / "kvcache_v2" / "kvcache"),
                  rules_dirs=[fixture / "rules"], use_index_cache=False, provider_version="2.0")  # fmt: skip
    found = sorted((f.line, f.callee, f.param) for f in report.findings if f.rule == "relies-on-changed-default")
    assert found == [(10, "kvcache.config.CacheConfig", "enable_prefix_caching"), (11, "kvcache.config.CacheConfig", "enable_prefix_caching")]
