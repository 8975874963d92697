"""consumer/patching.py: the shapes of the consumer's own patching code, read from its source."""

import ast

import pytest

from apiaudit.consumer.patching import copies_members


def _class(source: str) -> ast.ClassDef:
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.ClassDef)
    return node


@pytest.mark.parametrize(
    "loop",
    [
        "for name, attr in cls.__dict__.items():",
        "for name, attr in vars(cls).items():",
        "for name, attr in inspect.getmembers(cls):",
        "for name in cls.__dict__:",
    ],
)
def test_a_method_that_sets_each_own_member_on_a_target_copies_members(loop):
    source = f"""
class Patch:
    @classmethod
    def apply(cls):
        {loop}
            if name.startswith("__"):
                continue
            setattr(cls.target, name, getattr(cls, name))
"""
    assert copies_members(_class(source))


@pytest.mark.parametrize(
    "body",
    [
        # sets a fixed name, not the loop's
        "for name, attr in cls.__dict__.items():\n            setattr(cls.target, 'x', attr)",
        # loops over something else
        "for name, attr in cls.table.items():\n            setattr(cls.target, name, attr)",
        # sets nothing
        "for name, attr in vars(cls).items():\n            print(name)",
    ],
)
def test_other_loops_copy_nothing(body):
    source = f"""
class Patch:
    @classmethod
    def apply(cls):
        {body}
"""
    assert not copies_members(_class(source))
