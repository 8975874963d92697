"""The provider's own calls (provider/callsites.py): which `if` makes a call one configuration's."""

from __future__ import annotations

import ast

import pytest

from apiaudit.provider.callsites import parent_map, branch_guard

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


# --------------------------------------------------------------- reading cost (bench/scan.py)
# The lookups read receivers from the text where the text tells, and ask the index (which
# visits modules with Griffe) only where it does not: same calls, fewer modules visited.


def _write(root, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_class_reexported_by_its_package_is_read_from_the_text(tmp_path):
    from apiaudit.provider.index import ProviderIndex

    _write(tmp_path, {
        "prov/__init__.py": "",
        "prov/layers/__init__.py": "from prov.layers.big import Big\nfrom .small import Small as Small\n__all__ = ['Big']\n",
        "prov/layers/big.py": "class Big:\n    def forward(self, x):\n        return x\n",
        "prov/layers/small.py": "class Small:\n    pass\n",
        "prov/cond/__init__.py": "try:\n    from prov.layers.big import Big\nexcept ImportError:\n    Big = None\n",
        "prov/star/__init__.py": "from prov.layers.big import Big\nfrom prov.layers.small import *\n",
    })  # fmt: skip
    index = ProviderIndex(tmp_path, ("prov",))
    assert index.reexported_class("prov.layers.Big") == "prov.layers.big.Big"
    assert index.reexported_class("prov.layers.Small") == "prov.layers.small.Small"
    assert index.reexported_class("prov.layers.big.Big") == "prov.layers.big.Big"
    # bound under a condition, or possibly rebound by a star import: the index decides
    assert index.reexported_class("prov.cond.Big") is None
    assert index.reexported_class("prov.star.Big") is None
    assert index.loader._modules == {}  # no module visited


def test_an_init_store_no_reading_can_type_leaves_the_receiver_unknown_without_a_visit(tmp_path):
    from apiaudit.provider.callsites import find_calls
    from apiaudit.provider.index import ProviderIndex

    _write(tmp_path, {
        "prov/__init__.py": "",
        "prov/pool.py": "class Pool:\n    def reset(self):\n        pass\n",
        "prov/runner.py": (
            "from concurrent.futures import ThreadPoolExecutor\n"
            "from prov.pool import Pool\n"
            "class Runner:\n"
            "    budget: Pool\n"
            "    def __init__(self, pools, on):\n"
            "        self.pool = pools[0]\n"
            "        self.executor = ThreadPoolExecutor(1)\n"
            "        self.budget = Pool() if on else None\n"
            "        self.made = Pool()\n"
            "    def reset(self):\n"
            "        self.pool.reset()\n"
            "        self.executor.reset()\n"
            "        self.budget.reset()\n"
            "        self.made.reset()\n"
        ),
    })  # fmt: skip
    index = ProviderIndex(tmp_path, ("prov",))
    calls = find_calls(index, ["reset"])["reset"]
    # the class annotation types `budget`; `made` is a Pool; `pool` and `executor` are unknown
    assert [(c.location, c.receiver) for c in calls] == [
        ("prov/runner.py:13", "prov.pool.Pool"),
        ("prov/runner.py:14", "prov.pool.Pool"),
    ]
    assert "prov.runner" not in index.loader._modules


def test_calls_of_instances_are_read_only_for_attributes_a_class_naming_them_stores(tmp_path):
    from apiaudit.provider.callsites import _held_attributes

    text = (
        "class Outer:\n"
        "    def __init__(self):\n"
        "        self.model = self._init_model()\n"
        "        self.head = Head()\n"
        "    def _init_model(self):\n"
        "        return LlamaModel()\n"
        "    class Inner:\n"
        "        norm: LlamaModel\n"
        "class Other:\n"
        "    def __init__(self):\n"
        "        self.cache = {}\n"
    )
    tree = ast.parse(text)
    assert _held_attributes(tree, text.splitlines(), {"LlamaModel"}) == {"model", "head", "norm"}
    assert _held_attributes(tree, text.splitlines(), {"Qwen2Model"}) == frozenset()


def test_a_declared_union_leaves_the_receiver_unknown_without_a_visit(tmp_path):
    from apiaudit.provider.callsites import find_calls
    from apiaudit.provider.index import ProviderIndex

    _write(tmp_path, {
        "prov/__init__.py": "",
        "prov/pool.py": "class Pool:\n    def reset(self):\n        pass\n\n\nclass Other:\n    def reset(self):\n        pass\n",
        "prov/runner.py": (
            "from prov.pool import Other, Pool\n"
            "class Runner:\n"
            "    either: Pool | Other\n"
            "    def __init__(self):\n"
            "        self.maybe: 'Pool | None' = None\n"
            "    def reset(self):\n"
            "        self.either.reset()\n"
            "        self.maybe.reset()\n"
        ),
    })  # fmt: skip
    index = ProviderIndex(tmp_path, ("prov",))
    assert [(c.location, c.receiver) for c in find_calls(index, ["reset", "other"])["reset"]] == [("prov/runner.py:8", "prov.pool.Pool")]
    assert "prov.runner" not in index.loader._modules


def test_the_part_every_class_name_shares_is_searched_first():
    from apiaudit.provider.callsites import _common_part

    assert _common_part({"LlamaModel", "Qwen2Model", "MiMoModel"}) == "Model"
    assert _common_part({"LlamaForCausalLM", "MistralForCausalLM"}) == "ForCausalLM"
    assert _common_part({"Engine", "Scheduler"}) == "" and _common_part(set()) == ""


def test_only_the_definitions_naming_a_method_are_parsed_and_the_rest_keep_their_names():
    import ast
    import textwrap

    from apiaudit.provider.callsites import _partial_tree

    text = textwrap.dedent('''\
        import os
        from pkg import Thing

        @decorate(
            option=1,
        )
        def calls(x):
            return x.forward(1)

        class Quiet(Thing):
            def method(self):
                return 1

        try:
            import fast
        except ImportError:
            fast = None
        else:
            pass
    ''')
    tree = _partial_tree(text, lambda block: ".forward(" in block)
    full = ast.parse(text)
    assert [type(n).__name__ for n in tree.body] == [type(n).__name__ for n in full.body]
    assert ast.dump(tree.body[2], include_attributes=True) == ast.dump(full.body[2], include_attributes=True)  # kept whole
    quiet = tree.body[3]
    assert quiet.name == "Quiet" and isinstance(quiet.body[0], ast.Pass)  # its name only
    assert ast.dump(tree.body[4], include_attributes=True) == ast.dump(full.body[4], include_attributes=True)  # try/except/else
    # nothing left out, or a split inside a string or brackets, or a lone CR: parsed whole instead
    assert _partial_tree(text, lambda block: True) is None
    assert _partial_tree('x = """\nclass Inside:\n"""\ndef f():\n    pass\n', lambda block: False) is None
    assert _partial_tree("call(\nargument)\ndef f():\n    pass\n", lambda block: False) is None
    assert _partial_tree("import os\rdef f():\n    pass\n", lambda block: False) is None
