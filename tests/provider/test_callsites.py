"""The provider's own calls (provider/callsites.py)."""

from __future__ import annotations

import ast


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


def test_instance_calls_read_in_part_are_the_calls_a_whole_reading_finds(tmp_path, monkeypatch):
    """find_instance_calls parses the definitions naming a wanted class, then those naming an
    attribute one may hold (a subclass calling the attribute its base stores: kept); a class
    naming neither is never parsed, and the calls found are those of a whole parse."""
    from apiaudit.provider import callsites
    from apiaudit.provider.index import ProviderIndex

    layers = "".join(f"class Layer{i}:\n    def forward(self, x):\n        return self.norm(x)\n\n\n" for i in range(3))
    _write(tmp_path, {
        "prov/__init__.py": "",
        "prov/inner.py": "class InnerModel:\n    def forward(self, x, y=None):\n        return x\n",
        "prov/outer.py": (
            "from prov.inner import InnerModel\n\n\n" + layers
            + "class Outer:\n"
            "    def __init__(self):\n"
            "        self.model = InnerModel()\n"
            "    def forward(self, x):\n"
            "        return self.model(x)\n\n\n"
            "class Derived(Outer):\n"
            "    def forward(self, x):\n"
            "        return self.model(x, y=x)\n"
        ),
    })  # fmt: skip
    wanted = ["prov.inner.InnerModel"]

    def found(index):
        return [(c.location, c.positional, c.keywords) for c in callsites.find_instance_calls(index, wanted)]

    parsed: list[str] = []
    real_parse = ast.parse
    monkeypatch.setattr(callsites.ast, "parse", lambda text, *a, **k: parsed.append(text) or real_parse(text, *a, **k))
    in_part = found(ProviderIndex(tmp_path, ("prov",)))
    assert in_part == [("prov/outer.py:23", 1, ()), ("prov/outer.py:28", 1, ("y",))]
    assert not any("class Layer" in text for text in parsed)
    monkeypatch.setattr(callsites, "_partial_tree", lambda *a, **k: None)  # whole parses
    assert found(ProviderIndex(tmp_path, ("prov",))) == in_part


def test_a_class_statement_is_read_from_its_own_module_and_a_probe_builds_no_definitions_map(tmp_path):
    """defines_class reads the module's own text (no map of the release's names, no visit); a
    name missing from a module says where else it is defined only when asked (`moved_to`)."""
    from apiaudit.provider.index import ProviderIndex
    from apiaudit.provider.records import Missing

    _write(tmp_path, {
        "prov/__init__.py": "class Root:\n    class Nested:\n        pass\n",
        "prov/a.py": "import os\nclass Kept:\n    pass\nif os.name:\n    class Conditional:\n        pass\n",
        "prov/b.py": "def helper():\n    pass\n",
        "prov/c.pyi": "class OnlyStubbed: ...\n",
        "other/d.py": "class Elsewhere:\n    pass\n",
    })  # fmt: skip
    index = ProviderIndex(tmp_path, ("prov",))
    assert index.defines_class("prov.Root") and index.defines_class("prov.a.Kept")
    assert not index.defines_class("prov.Nested") and not index.defines_class("prov.a.Conditional")
    assert not index.defines_class("prov.c.OnlyStubbed") and not index.defines_class("other.d.Elsewhere")
    missing = index.resolve("prov.b.helper_gone")
    gone = index.resolve("prov.b.Kept")
    assert isinstance(missing, Missing) and isinstance(gone, Missing)
    assert index._definitions is None and index.loader._sources is None  # no file read but the ones asked about
    assert index.moved_to(gone) == ("prov.a.Kept",) and index.moved_to(missing) == ()
    assert [name for name, _ in ProviderIndex(tmp_path, ("prov",)).definitions().items() if name == "<class>Kept"] == ["<class>Kept"]


def test_a_loop_over_a_typed_collection_types_its_element(tmp_path):
    """`for proc in self.processors: proc.apply(logits)` where the class annotates
    `processors: list[LogitsProcessor]` (or a parameter `procs: Sequence[...]`, `tuple[X, ...]`):
    each element is a LogitsProcessor, so a plugin's override is judged against the call; an
    untyped collection, or a tuple of several classes, types nothing."""
    from apiaudit.provider.callsites import find_calls
    from apiaudit.provider.index import ProviderIndex

    _write(tmp_path, {
        "prov/__init__.py": "",
        "prov/procs.py": "class LogitsProcessor:\n    def apply(self, logits):\n        return logits\n",
        "prov/sampler.py": (
            "from collections.abc import Sequence\n"
            "from prov.procs import LogitsProcessor\n"
            "class Sampler:\n"
            "    processors: list[LogitsProcessor]\n"
            "    def run(self, logits, extra: Sequence[LogitsProcessor], pair: tuple[LogitsProcessor, int], anything):\n"
            "        for proc in self.processors:\n"
            "            logits = proc.apply(logits)\n"
            "        for proc2 in extra:\n"
            "            logits = proc2.apply(logits, True)\n"
            "        for item in pair:\n"
            "            item.apply(logits, 1, 2)\n"
            "        for other in anything:\n"
            "            other.apply(logits, 1, 2, 3)\n"
            "        return logits\n"
        ),
    })  # fmt: skip
    index = ProviderIndex(tmp_path, ("prov",))
    calls = find_calls(index, ["apply"])["apply"]
    assert sorted((c.location, c.receiver, c.positional) for c in calls) == [
        ("prov/sampler.py:7", "prov.procs.LogitsProcessor", 1),
        ("prov/sampler.py:9", "prov.procs.LogitsProcessor", 2),
    ]


def test_a_call_and_a_reference_record_the_method_they_are_in_and_the_attribute_held(tmp_path):
    """What reaches an override depends on where the provider calls it: the method the call is
    in (whatever its receiver) and, for `self.X.m(...)`, the attribute X (checks/contracts.py)."""
    from apiaudit.provider.callsites import find_calls, find_references
    from apiaudit.provider.index import ProviderIndex

    _write(tmp_path, {
        "prov/__init__.py": "",
        "prov/pool.py": "class Pool:\n    def reset(self):\n        pass\n",
        "prov/runner.py": (
            "from prov.pool import Pool\n"
            "class Runner:\n"
            "    def __init__(self):\n"
            "        self.pool = Pool()\n"
            "    def step(self):\n"
            "        self.pool.reset()\n"
            "def drain(pool: Pool):\n"
            "    pool.reset()\n"
        ),
    })  # fmt: skip
    index = ProviderIndex(tmp_path, ("prov",))
    calls = find_calls(index, ["reset"])["reset"]
    assert [(c.location, c.enclosing, c.holder) for c in calls] == [
        ("prov/runner.py:6", "prov.runner.Runner.step", "pool"),
        ("prov/runner.py:8", "prov.runner.drain", None),
    ]
    refs = find_references(index, ["reset"])["reset"]
    assert [(r.location, r.enclosing) for r in refs] == [("prov/runner.py:6", "prov.runner.Runner.step"), ("prov/runner.py:8", "prov.runner.drain")]


def test_self_uses_say_where_a_method_handed_on_as_a_value_goes(tmp_path):
    """Issue 38, F11: `self.name` in a method, called or a value, and where it goes: stored into
    an attribute of `self` (directly, or as a branch of a conditional expression, or as a call's
    result), returned, or elsewhere (an argument, a local, a nested function's return: no fate)."""
    from apiaudit.provider.index import ProviderIndex
    from apiaudit.provider.records import SelfUse

    _write(tmp_path, {
        "prov/__init__.py": "",
        "prov/op.py": (
            "class Op:\n"
            "    def __init__(self, fast):\n"
            "        self._fn = self.pick()\n"
            "        self._alt = self.go_fast if fast else self.go\n"
            "    def pick(self):\n"
            "        if self.flag:\n"
            "            return self.go_fast\n"
            "        return wrap(self.go)\n"
            "    def later(self):\n"
            "        f = self.go_fast\n"
            "        return lambda: self.go_fast\n"
        ),
    })  # fmt: skip
    index = ProviderIndex(tmp_path, ("prov",))
    uses = index.self_uses(["go_fast", "go", "pick"])
    assert sorted(uses["go_fast"], key=lambda u: u.location) == [
        SelfUse("prov/op.py:10", "prov.op.Op", "later", False),  # a local
        SelfUse("prov/op.py:11", "prov.op.Op", "later", False),  # a lambda's value
        SelfUse("prov/op.py:4", "prov.op.Op", "__init__", False, stored="_alt"),
        SelfUse("prov/op.py:7", "prov.op.Op", "pick", False, returned=True),
    ]
    assert sorted(uses["go"], key=lambda u: u.location) == [
        SelfUse("prov/op.py:4", "prov.op.Op", "__init__", False, stored="_alt"),
        SelfUse("prov/op.py:8", "prov.op.Op", "pick", False),  # an argument
    ]
    assert uses["pick"] == (SelfUse("prov/op.py:3", "prov.op.Op", "__init__", True, stored="_fn"),)


def test_attribute_stores_on_objects_other_than_a_methods_own_self(tmp_path):
    """Issue 37, N17: `x.name = v` in any function, with the class `x`'s annotation names and the
    other attributes the function reads on `x`, in line order; a method's own `self` (the
    extension's business) and a comparison (`x.name == v`) are no such store, and a nested
    function's store is its own (its parameter, not the outer function's object)."""
    from apiaudit.provider.index import ProviderIndex
    from apiaudit.provider.records import ProviderStore

    _write(tmp_path, {
        "prov/__init__.py": "",
        "prov/nodes.py": "class Node:\n    must_be_first = False\n",
        "prov/parse.py": (
            "from prov.nodes import Node\n\n\n"
            "class Parser:\n"
            "    def add(self, node, token):\n"
            "        if node.must_be_first:\n            pass\n"
            "        node.origin = token\n"
            "        self.origin = token\n"
            "        def later(other):\n            other.origin = 1\n\n"
            "    def same(self, node):\n        return node.origin == self.origin\n\n\n"
            "def mark(node: Node, origin):\n    node.origin: str = origin\n"
        ),
    })  # fmt: skip
    index = ProviderIndex(tmp_path, ("prov",))
    assert index.attribute_stores(["origin"]) == {
        "origin": (
            ProviderStore("prov/parse.py:8", None, ("must_be_first",)),
            ProviderStore("prov/parse.py:11", None, ()),
            ProviderStore("prov/parse.py:18", "prov.nodes.Node", ()),
        )
    }


def test_every_binding_of_an_attribute_name_is_read_with_what_it_stores(tmp_path):
    """`find_attribute_values`: stores on any object (`self` too), `setattr` by name, class bodies;
    each a literal, a built provider class or other; the reading stops at the first other one, and
    reads the module it is told the attribute lives in first."""
    from apiaudit.provider.callsites import find_attribute_values
    from apiaudit.provider.index import ProviderIndex

    _write(tmp_path, {
        "prov/__init__.py": "",
        "prov/parts.py": "class Part:\n    pass\n",
        "prov/a.py": (
            "from prov.parts import Part\n"
            "class Holder:\n"
            "    flag = False\n"
            "    def __init__(self):\n"
            "        self.flag = False\n"
            "        self.part = Part()\n"
            "        self.part: Part\n"
            "    def reset(self, other):\n"
            "        other.flag = 0\n"
            "        setattr(other, 'part', Part())\n"
            "        self.part = None\n"
            "        self.flag == True\n"
        ),
        "prov/b.py": (
            "def make(Part):\n"
            "    holder.part = Part()\n"  # a parameter named like the class: not a class built
        ),
        "prov/c.py": (
            "class Other:\n"
            "    def __init__(self, on):\n"
            "        self.flag, self.count = on, 0\n"
            "    @property\n"
            "    def count(self):\n"
            "        return 1\n"
        ),
    })  # fmt: skip
    index = ProviderIndex(tmp_path, ("prov",))
    flags = find_attribute_values(index, "flag", "prov.a")
    # a class body's, `self`'s and another object's; `self.flag == True` stores nothing
    assert {(s.location, s.stored, s.value) for s in flags[:-1]} == {
        ("prov/a.py:3", "literal", "False"), ("prov/a.py:5", "literal", "False"), ("prov/a.py:9", "literal", "0"),
    }  # fmt: skip
    assert (flags[-1].location, flags[-1].stored) == ("prov/c.py:3", "other")  # a tuple target: not read
    parts = find_attribute_values(index, "part", "prov.a")
    assert {(s.location, s.stored, s.value) for s in parts} == {
        ("prov/a.py:6", "built", "prov.parts.Part"), ("prov/a.py:10", "built", "prov.parts.Part"),
        ("prov/a.py:11", "literal", "None"), ("prov/b.py:2", "other", ""),
    }  # fmt: skip
    assert [s.location for s in find_attribute_values(index, "part", "prov.b")] == ["prov/b.py:2"]  # read first: stops there
    assert find_attribute_values(index, "count")[-1].stored == "other"  # a property, a tuple target
    assert find_attribute_values(index, "nothing") == ()
    # Kept in the index cache
    from apiaudit.cache import codec
    from apiaudit.provider import cache as _index_cache  # noqa: F401 - registers the index records with the codec

    assert codec.from_json(codec.to_json(parts)) == parts
