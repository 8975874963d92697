"""Which `if` makes a provider line one configuration's (provider/branches.py)."""

from __future__ import annotations

import ast

import pytest

from apiaudit.provider.branches import branch_guard, parent_map

CASES = [
    # a branch of an if/elif chain whose test is about something else: the configuration's choice
    ("if a:\n    x()\nelif self.fsdp:\n    self.m(1)\n", "elif self.fsdp: (f.py:4)"),
    ("if self.v2:\n    pass\nelse:\n    self.m(1)\n", "else of if self.v2: (f.py:2)"),
    ("if cfg.v2:\n    self.m(1)\nelse:\n    y()\n", "if cfg.v2: (f.py:2)"),
    # a plain `if` without another branch: the feature being used, not a choice
    ("if has_group():\n    self.m(1)\n", None),
    # a test about the receiver itself: its presence, not a configuration
    ("if self.conn is not None:\n    self.conn.m(1)\nelse:\n    y()\n", None),
    ("if isinstance(self, A):\n    self.m(1)\nelse:\n    y()\n", None),
]


@pytest.mark.parametrize(("body", "expected"), CASES)
def test_a_call_in_one_branch_of_a_chain_is_guarded_by_it(body, expected):
    source = "def f(self):\n" + "".join(f"    {line}\n" for line in body.splitlines())  # the body from line 2
    tree = ast.parse(source)
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "m")
    assert branch_guard(call, call.func.value, parent_map(tree), source.splitlines(), "f.py") == expected
