"""Small ast readings (apiaudit/infra/astutil.py): `unparse` writes exactly what `ast.unparse` does."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import apiaudit
from apiaudit.infra.astutil import _plain_text, breadth_first, child_nodes, unparse

_FORMS = [
    "a", "a.b.c", "f()", "a.b(c, d.e)", "f(*args, **kwargs)", "f(x, key=y, **{'k': 1})", "f(1, True, None, x=-1)",
    "f(1.5)", "f('s')", "f(\"it's\")", "f('a\\\\b')", "f('\\n')", "f(\"\")", "f('é')", "f('\\x00')", "f(...)",
    "(1).real", "a[0].b(c)", "f(x for x in y)", "f(g(h(i)), j=k(l))", "f(*g(), **h())", "f(a)(b)", "(a + b).c",
    "f(lambda: 0)", "obj.method(0x10, -0)", "f(*a.b)", "f(b'x')", "f(u'x')", "f(f'{x}')", "a[0]", "a['k'].b[c](d)[e.f]",
    "a[1:2]", "a[b, c]", "a[()]", "a[-1]", "a[...]", "a[*b]",
]  # fmt: skip


@pytest.mark.parametrize("text", _FORMS)
def test_each_form_as_ast_unparse_writes_it(text):
    node = ast.parse(text, mode="eval").body
    assert unparse(node) == ast.unparse(node)


def test_every_call_site_of_real_code_reads_the_same():
    """apiaudit's own source and a few standard library modules: every name, attribute and call."""
    files = sorted(Path(apiaudit.__file__).parent.rglob("*.py")) + [Path(inspect.getfile(m)) for m in (ast, inspect, pytest)]
    written = plain = 0
    for path in files:
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
                text = _plain_text(node)
                if text is not None:
                    plain += 1
                    assert text == ast.unparse(node), (path, node.lineno)
                written += 1
    assert plain > written // 2  # the direct path is the one taken most


def test_statements_breadth_first_gives_ast_walks_statements_in_its_order():
    tree = ast.parse(
        "def f(x):\n"
        "    if x:\n"
        "        a = [y for y in x]\n"
        "    else:\n"
        "        def g():\n"
        "            b = 1\n"
        "    try:\n"
        "        c = 2\n"
        "    except E:\n"
        "        d = 3\n"
        "    finally:\n"
        "        e = 4\n"
    )
    from apiaudit.infra.astutil import statements_breadth_first

    walked = [n for n in ast.walk(tree) if isinstance(n, (ast.stmt, ast.excepthandler, ast.Module))]
    assert list(statements_breadth_first(tree)) == walked


def test_own_statements_stop_at_the_functions_and_classes_a_body_defines():
    from apiaudit.infra.astutil import own_statements

    tree = ast.parse(
        "if a:\n"
        "    def f():\n"
        "        return inner\n"
        "else:\n"
        "    class C:\n"
        "        x = 1\n"
        "match v:\n"
        "    case 1:\n"
        "        return out\n"
    )
    kinds = sorted(type(s).__name__ for s in own_statements(tree.body))
    assert kinds == ["ClassDef", "FunctionDef", "If", "Match", "Return", "match_case"]  # clauses too, as for handlers


@pytest.mark.parametrize(
    ("line", "stores"),
    [
        ("self.flag = 1", True), ("self.flag: bool = 1", True), ("self.flag += 1", True), ("self.flag //= 2", True),
        ("self.flag, self.other = a, b", True), ("(self.flag, x) = y", True), ("for self.flag in items:", True),
        ("self.flag == 1", False), ("if self.flag and x:", False), ("f(self.flag) == 2", False), ("y = self.flag", False),
        ("x.flagship = 1", False), ("self.flag_x = 1", False), ("flag = 1", False),
    ],
)  # fmt: skip
def test_the_text_of_a_store_of_an_attribute(line, stores):
    import re

    from apiaudit.infra.astutil import attribute_store_text

    assert bool(re.search(attribute_store_text("flag"), line)) is stores


def test_child_nodes_are_ast_iter_child_nodes_in_order():
    tree = ast.parse("f(a, *b, k=c, **d)[1:2] + {x: y for x in z if x} - (lambda q=1: q)(await w)\nclass C(B, metaclass=M): pass\n", mode="exec")
    for node in ast.walk(tree):
        assert child_nodes(node) == list(ast.iter_child_nodes(node))


def test_breadth_first_is_ast_walk_in_its_order():
    source = Path(inspect.getfile(apiaudit)).with_name("engine.py").read_text()
    for tree in (ast.parse(source), ast.parse("f(a, *b, k=c)[1:2] + {x: y for x in z}\nclass C(B, metaclass=M): pass\n"), ast.Name("x")):
        assert [id(n) for n in breadth_first(tree)] == [id(n) for n in ast.walk(tree)]
