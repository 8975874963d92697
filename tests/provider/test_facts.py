"""Facts static binding needs: run-time namespaces and placeholder bodies."""

from __future__ import annotations

import ast

import pytest

from apiaudit.provider.facts import dynamic_namespace, only_raises_not_implemented


@pytest.mark.parametrize(
    "code",
    [
        "for n in names:\n    globals()[n] = f(n)",
        "globals().update(table)",
        "vars()['x'] = 1",
        "import sys\nsetattr(sys.modules[__name__], 'x', 1)",
        "import sys\nsys.modules['pkg.old'] = sys.modules[__name__]",
        "def _init():\n    globals()['late'] = 1\n\n_init()",
        "def _make():\n    g = globals()\n    for n in names:\n        g[n] = f(n)\n\n_make()",
        "import sys\nm = sys.modules[__name__]\nsetattr(m, 'cuda', object())",
    ],
)
def test_dynamic_namespaces(code):
    assert dynamic_namespace(ast.parse(code)) is not None


@pytest.mark.parametrize(
    "code",
    [
        # a helper that runs only when someone calls it binds nothing at import time
        "import sys\ndef import_from_path(name, mod):\n    sys.modules[name] = mod",
        "class Lazy:\n    def _load(self):\n        globals()['x'] = 1",
        "x = globals()['y']",
        "import sys\nmod = sys.modules[__name__]",
        "d = {}\nd['k'] = 1",
    ],
)
def test_static_namespaces(code):
    assert dynamic_namespace(ast.parse(code)) is None


def _func(code: str) -> ast.FunctionDef:
    return ast.parse(code).body[0]


def test_placeholder_bodies():
    assert only_raises_not_implemented(_func("def f(self):\n    '''doc'''\n    raise NotImplementedError('x')"))
    assert only_raises_not_implemented(_func("def f(self):\n    raise NotImplementedError"))
    assert not only_raises_not_implemented(_func("def f(self):\n    x = 1\n    raise NotImplementedError"))
    assert not only_raises_not_implemented(_func("def f(self):\n    raise ValueError"))
