"""Decorators that rewrite keywords (`provider.keyword_rewrites`, issue 37 cause 8): a wrapper that
renames a keyword makes the old one valid; one whose rewrites are not read makes a keyword it
may take `cannot-judge`; a transparent one changes nothing."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from apiaudit.audit import scan
from apiaudit.policy.config import Settings
from apiaudit.provider.deprecation_marks import DecoratorMark
from apiaudit.provider.keyword_rewrites import apply, argument_values, read
from apiaudit.provider.records import KeywordAlias, Param, ParamKind, Rename, RewrittenKey

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CONSUMER = FIXTURES / "consumers" / "decoruse" / "decoruse"
PROVIDER = FIXTURES / "providers" / "decorlib" / "decorlib"

P = ParamKind
FACTORY = (
    Param("previous", P.POSITIONAL_OR_KEYWORD),
    Param("since", P.POSITIONAL_OR_KEYWORD),
    Param("current", P.POSITIONAL_OR_KEYWORD, has_default=True, default="None"),
    Param("strict", P.POSITIONAL_OR_KEYWORD, has_default=True, default="False"),
)


def _read(source: str):
    node = ast.parse(textwrap.dedent(source)).body[0]
    assert isinstance(node, ast.FunctionDef)
    return read(node, "pkg.deco", FACTORY)


def test_a_factory_whose_wrapper_moves_a_key_names_the_rename_by_its_own_parameters():
    rewrites = _read('''
        def renamed_keyword(previous, since, current=None, strict=False):
            def wrapper(fn):
                def inner(*args, **kwargs):
                    if previous in kwargs and current in kwargs:
                        kwargs.pop(previous)  # both given: part of the rename
                    elif previous in kwargs:
                        kwargs[current] = kwargs.pop(previous)
                    return fn(*args, **kwargs)
                return inner
            return wrapper
    ''')
    assert rewrites is not None and rewrites.opaque is None
    assert rewrites.renames == (Rename(RewrittenKey("previous", "parameter"), RewrittenKey("current", "parameter")),)


def test_literal_keys_and_setdefault_are_renames_too():
    rewrites = _read('''
        def deco(fn):
            def inner(*a, **kw):
                kw["size"] = kw.pop("length")
                kw.setdefault("width", kw.pop("w", None))
                return fn(*a, **kw)
            return inner
    ''')
    assert rewrites is not None and rewrites.opaque is None
    assert [(r.old.name, r.new.name) for r in rewrites.renames] == [("length", "size"), ("w", "width")]


@pytest.mark.parametrize(
    "body, unread",
    [
        ("for old, new in TABLE.items():\n    kw[new] = kw.pop(old)", "kw[new] = kw.pop(old)"),  # keys from a table
        ("for name in DROPPED:\n    kw.pop(name, None)", "kw.pop(name, None)"),  # a key dropped that cannot be named
        ("for name in DROPPED:\n    del kw[name]", "del kw[name]"),
        ("kw[MODE] = 'fast'", "kw[MODE] = 'fast'"),  # a key written that cannot be named
        ("kw.update(DEFAULTS)", "kw.update(DEFAULTS)"),
        ("kw = dict(kw, mode='fast')", "kw = dict(kw, mode='fast')"),  # rebound
    ],
)
def test_other_rewrites_are_opaque_with_their_text(body, unread):
    source = "def deco(fn):\n    def inner(*a, **kw):\n" + textwrap.indent(body, " " * 8) + "\n        return fn(*a, **kw)\n    return inner\n"
    rewrites = _read(source)
    assert rewrites is not None and rewrites.opaque == unread


def test_a_key_the_wrapper_takes_out_itself_is_consumed_and_one_it_sets_changes_nothing():
    rewrites = _read('''
        def deco(fn):
            def inner(*a, **kw):
                verbose = kw.pop("verbose", False)
                del kw["trace"]
                kw["mode"] = "fast"
                kw.setdefault("device", "cpu")
                return fn(*a, **kw)
            return inner
    ''')
    assert rewrites is not None and (rewrites.renames, rewrites.opaque) == ((), None)
    assert rewrites.consumed == (RewrittenKey("verbose", "literal"), RewrittenKey("trace", "literal"))
    params = (Param("text", P.POSITIONAL_OR_KEYWORD), Param("trace", P.KEYWORD_ONLY, True, default="False"))
    # `trace` is the function's own parameter: binding judges it as ever
    assert apply(DecoratorMark("pkg.deco", False), rewrites, params) == ((KeywordAlias("verbose", None, "pkg.deco"),), False)
    assert _read('''
        def deco(fn):
            def inner(*a, **kw):
                kw["mode"] = "fast"
                return fn(*a, **kw)
            return inner
    ''') is None


def test_a_wrapper_calling_on_with_another_mapping_is_opaque():
    rewrites = _read('''
        def deco(fn):
            def inner(*a, **kw):
                fixed = {RENAMES.get(k, k): v for k, v in kw.items()}
                return fn(*a, **fixed)
            return inner
    ''')
    assert rewrites is not None and rewrites.opaque == "fn(*a, **fixed)"


def test_a_transparent_wrapper_rewrites_nothing():
    assert _read('''
        def traced(fn):
            @wraps(fn)
            def inner(*args, **kwargs):
                print(sorted(kwargs), kwargs.get("x"))
                with config.patch(**OPTIONS):  # another call, another mapping: not the keywords
                    return fn(*args, **kwargs)
            return inner
    ''') is None


def test_the_decorator_call_binds_to_the_factory_parameters_as_python_binds_them():
    mark = DecoratorMark("pkg.deco", True, ("tokenizer", "2.0"), (("current", "processing_class"),))
    assert argument_values(mark, FACTORY) == {"previous": "tokenizer", "since": "2.0", "current": "processing_class"}
    # not given: a None default names nothing; given something else than a literal: absent
    assert argument_values(DecoratorMark("pkg.deco", True, ("n", None)), FACTORY) == {"previous": "n", "current": None}
    assert argument_values(DecoratorMark("pkg.deco", True, ("n",), unpacks=True), FACTORY) == {}


def test_apply_gives_an_alias_only_to_a_parameter_the_function_takes():
    rename = Rename(RewrittenKey("previous", "parameter"), RewrittenKey("current", "parameter"))
    rewrites = _read('''
        def renamed_keyword(previous, since, current=None, strict=False):
            def wrapper(fn):
                def inner(*args, **kwargs):
                    kwargs[current] = kwargs.pop(previous)
                    return fn(*args, **kwargs)
                return inner
            return wrapper
    ''')
    assert rewrites is not None and rewrites.renames == (rename,)
    params = (Param("model", P.POSITIONAL_OR_KEYWORD), Param("processing_class", P.POSITIONAL_OR_KEYWORD, True, default="None"))
    named = DecoratorMark("pkg.deco", True, ("tokenizer", "2.0"), (("current", "processing_class"),))
    assert apply(named, rewrites, params) == ((KeywordAlias("tokenizer", "processing_class", "pkg.deco"),), False)
    # no new name: the old keyword reaches the function as written
    assert apply(DecoratorMark("pkg.deco", True, ("n", "2.0")), rewrites, params) == ((), False)
    # a new name the call does not spell as a literal: which keyword it takes is not read
    assert apply(DecoratorMark("pkg.deco", True, ("tokenizer", "2.0", None)), rewrites, params) == ((), True)


def test_fixture_each_decorator_kind_exactly(tmp_path):
    report = scan([str(CONSUMER)], str(PROVIDER), cache_dir=tmp_path, settings=Settings())
    found = {(f.line, f.rule, f.severity.value, f.param) for f in report.findings}
    assert found == {
        (5, "deprecated-use", "warning", "tokenizer"),  # Trainer(model, tokenizer=tok): renamed, no error
        (7, "unexpected-keyword", "error", "tokenizr"),  # no rename names it
        (12, "deprecated-use", "warning", "n"),  # no new name: sample() takes n itself
        (15, "cannot-judge", "info", None),  # the decorator rewrites keywords from a table: never an error
        (17, "unexpected-keyword", "error", "lowercase"),  # a transparent decorator changes nothing
        (20, "unexpected-keyword", "error", "loud"),  # the wrapper takes `verbose` out, nothing else
    }
    [renamed] = [f for f in report.findings if f.line == 5]
    assert renamed.message == "Trainer(): the keyword 'tokenizer' is deprecated: renamed to 'processing_class'"
    [unread] = [f for f in report.findings if f.rule == "cannot-judge"]
    assert "the decorator decorlib.keywords.normalize_keywords may rewrite keywords: whether generate() takes 'MaxTokens'" in unread.message


@pytest.mark.network
def test_real_transformers_trainer_takes_tokenizer_while_its_init_renames_it(tmp_path, released, release_cache, monkeypatch):
    monkeypatch.setenv("APIAUDIT_CONFIG", "none")
    job = tmp_path / "jobs"
    job.mkdir()
    (job / "train.py").write_text(
        "from transformers import Trainer\n\n\n"
        "def build(model, tok, args):\n"
        "    old = Trainer(model=model, args=args, tokenizer=tok)\n"
        "    new = Trainer(model=model, args=args, processing_class=tok)\n"
        "    return old, new\n"
    )
    for version in ("4.46.0", "4.57.6", "5.0.0"):
        released(f"transformers=={version}")
        report = scan([str(job)], f"transformers=={version}", cache_dir=release_cache, settings=Settings())
        found = {(f.line, f.rule, f.severity.value, f.param) for f in report.findings}
        if version == "5.0.0":  # the decorator is gone from Trainer.__init__, and so is the keyword
            assert (5, "unexpected-keyword", "error", "tokenizer") in found
        else:
            assert found == {(5, "deprecated-use", "warning", "tokenizer")}, version
        assert not any(f.line == 6 for f in report.findings)
