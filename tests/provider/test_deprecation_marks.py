"""What a provider definition's own source says about its deprecation (`provider.deprecation_marks`)."""

from __future__ import annotations

import ast

from apiaudit.provider.deprecation_marks import marks_of, may_warn, module_imports


def test_marks_resolve_decorators_through_the_module_imports_and_read_the_body():
    source = (
        "from typing_extensions import deprecated\n"
        "from .util import deprecate_kwargs as dk\n"
        "import warnings\n"
        "@deprecated('use g')\n"
        "def f(): pass\n"
        "@dk('old', additional_message='say new')\n"
        "def g(new=None, old=None):\n"
        "    if old is not None:\n        warnings.warn('old is deprecated', DeprecationWarning)\n"
        "@property\n"
        "def h(): pass\n"
    )
    tree = ast.parse(source)
    imports = module_imports(tree, "pkg.mod", False)
    f, g, h = (n for n in tree.body if isinstance(n, ast.FunctionDef))
    marks = marks_of(f, imports, "pkg.mod", may_warn(source))
    assert [(d.target, d.message) for d in marks.decorators] == [("typing_extensions.deprecated", "use g")]
    marks = marks_of(g, imports, "pkg.mod", may_warn(source))
    assert [(d.target, d.strings, d.keyword_string) for d in marks.decorators] == [("pkg.util.deprecate_kwargs", ("old",), "say new")]
    assert marks.keywords == (("old", "old is deprecated"),) and marks.warns and marks.whole is None
    assert not marks_of(h, imports, "pkg.mod", may_warn(source))  # @property deprecates nothing


def test_every_decorator_but_a_builtin_is_marked_with_its_call_arguments_in_order():
    source = (
        "from .keywords import rename, traced\n"
        "@rename('tokenizer', VERSION, new='processing_class', strict=True)\n"
        "@traced\n"
        "@staticmethod\n"
        "def f(processing_class=None): pass\n"
        "@rename(*NAMES)\n"
        "def g(): pass\n"
    )
    tree = ast.parse(source)
    imports = module_imports(tree, "pkg.mod", False)
    f, g = (n for n in tree.body if isinstance(n, ast.FunctionDef))
    renamed, traced = marks_of(f, imports, "pkg.mod", may_warn(source)).decorators
    assert (renamed.target, renamed.is_call, renamed.positional, renamed.keywords) == (
        "pkg.keywords.rename", True, ("tokenizer", None), (("new", "processing_class"), ("strict", None))
    )
    assert (renamed.strings, renamed.keyword_string) == (("tokenizer",), "processing_class")
    assert (traced.target, traced.is_call) == ("pkg.keywords.traced", False)  # `@staticmethod`: not marked
    [unpacked] = marks_of(g, imports, "pkg.mod", may_warn(source)).decorators
    assert unpacked.unpacks


def test_a_module_that_names_no_deprecation_category_has_no_body_marks():
    source = "def f(x=None):\n    if x is not None:\n        warn('x', UserWarning)\n"
    tree = ast.parse(source)
    assert not may_warn(source)
    assert not marks_of(tree.body[0], {}, "m", may_warn(source))


def test_only_tests_of_a_keyword_being_passed_deprecate_it():
    import ast

    from apiaudit.provider.deprecation_marks import _function_facts

    source = (
        "def f(self, mode='fast', seed=None, **kwargs):\n"
        "    if mode == 'slow':\n        warnings.warn('slow mode is deprecated', DeprecationWarning)\n"
        "    if seed is not None and kwargs.get('old') is not None:\n        warnings.warn('x', FutureWarning)\n"
    )
    whole, keywords = _function_facts(ast.parse(source).body[0])
    assert whole is None and set(keywords) == {"seed", "old"}
