"""Guard helpers of several statements, folded at calls with literal arguments (consumer/helpers.py).

Evidence: fixtures/consumers/helpers, a consumer whose helpers have each shape real
compatibility code writes (trl's `is_vllm_available(min_version=...)` reading the version
through another helper; a tuple result; a default argument; helpers that must not fold).
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from apiaudit.consumer import collect
from apiaudit.consumer import helpers as h
from apiaudit.consumer.records import ConsumerOptions
from apiaudit.consumer.values import UNBOUND, UNKNOWN, Const, ProviderVersion
from apiaudit.sources.local import resolve_path
from tests.consumer.test_visitor import files_of

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "consumers" / "helpers" / "helpers"

OPTIONS = ConsumerOptions(
    provider_packages=("shim",),
    provider_distribution="shim",
    python_version=(3, 11, 0),
)

ALWAYS = {"any_release", "with_new_torch", "from_environment"}  # on every release, unconditional
UNDECIDED = {"by_loop"}  # the helper reads the release but does not fold: conditional

EXPECTED = {
    "0.8.0": ALWAYS | {"before_0_10"},
    "0.10.0": ALWAYS | {"from_0_10", "minor_from_10", "minor_from_10_unpacked", "from_0_9_before_0_11", "from_min_default"},
    "0.11.0": ALWAYS | {"from_0_10", "minor_from_10", "minor_from_10_unpacked", "from_0_11", "from_min_default"},
}


def _uses(options: ConsumerOptions, cache_dir: Path | None = None) -> dict[str, bool]:
    """shim names used in uses.py -> whether the use is conditional."""
    files = {f.path: f for f in collect(resolve_path(str(FIXTURE)), options, cache_dir=cache_dir)}
    uses = files["helpers/uses.py"].uses
    # `shim.__version__` itself is a use too (a release without it raises there), not a helper's.
    return {
        u.steps[0].name: u.live.conditional
        for u in uses
        if u.root.name == "shim" and u.steps and u.steps[0].name and u.steps[0].name != "__version__"
    }


@pytest.mark.parametrize("version", sorted(EXPECTED))
def test_each_helper_shape_folds_on_the_audited_release_exactly(version):
    uses = _uses(replace(OPTIONS, provider_version=version))
    assert set(uses) == EXPECTED[version] | UNDECIDED
    assert {name for name, conditional in uses.items() if conditional} == UNDECIDED


def test_an_unknown_release_leaves_every_release_guard_undecided():
    uses = _uses(replace(OPTIONS, provider_version=None))
    every = set().union(*EXPECTED.values()) | UNDECIDED | {"minor_from_10_unpacked"}
    assert set(uses) == every
    # Run-time tests stay unconditional; every test of the release is undecided, none decided.
    assert {name for name, conditional in uses.items() if not conditional} == ALWAYS


def test_helpers_travel_through_the_consumer_cache_as_data(tmp_path):
    options = replace(OPTIONS, provider_version="0.10.0")
    cold = _uses(options, cache_dir=tmp_path)
    assert cold == _uses(options, cache_dir=tmp_path)
    assert set(cold) == EXPECTED["0.10.0"] | UNDECIDED


def _names(file) -> set[str]:
    """shim names used (`shim.__version__`, read by the helpers, is a use of its own)."""
    return {u.steps[0].name for u in file.uses if u.root.name == "shim" and u.steps} - {"__version__"}


def test_a_helper_called_with_a_run_time_argument_is_not_folded(tmp_path):
    f = files_of(tmp_path, replace(OPTIONS, provider_version="0.10.0"), a="""
        import sys
        import shim
        from packaging.version import Version
        def at_least(v):
            installed = Version(shim.__version__)
            return installed >= Version(v)
        if at_least(sys.argv[1]):
            shim.maybe()
        if at_least("0.9"):
            shim.surely()
        else:
            shim.never()
    """)["cons/a.py"]
    assert _names(f) == {"maybe", "surely"}
    assert [u.live.conditional for u in f.uses if u.steps[0].name == "maybe"] == [True]


def test_helpers_deeper_than_the_bound_are_not_folded(tmp_path):
    f = files_of(tmp_path, replace(OPTIONS, provider_version="0.10.0"), a="""
        import shim
        def d0():
            v = shim.__version__
            return v == "0.10.0"
        def d1():
            r = d0()
            return r
        def d2():
            r = d1()
            return r
        def d3():
            r = d2()
            return r
        if d2():
            shim.three_deep()
        else:
            shim.three_deep_never()
        if d3():
            shim.four_deep()
    """)["cons/a.py"]
    assert _names(f) == {"three_deep", "four_deep"}
    assert [u.live.conditional for u in f.uses if u.steps[0].name == "four_deep"] == [True]


def test_a_generator_or_a_decorated_function_is_not_folded(tmp_path):
    f = files_of(tmp_path, replace(OPTIONS, provider_version="0.10.0"), a="""
        import functools
        import shim
        def gen():
            if shim.__version__ == "0.10.0":
                return False
            yield 1
        def wrap(f):
            return f
        @wrap
        def wrapped():
            v = shim.__version__
            return v == "0.9.0"
        @functools.lru_cache
        def cached():
            v = shim.__version__
            return v == "0.9.0"
        if gen():
            shim.generator_object_is_true()
        if wrapped():
            shim.decorated()
        if cached():
            shim.cached_never()
    """)["cons/a.py"]
    assert _names(f) == {"generator_object_is_true", "decorated"}
    # both read the release: undecided, not decided (the reads of shim.__version__ themselves run)
    assert all(u.live.conditional for u in f.uses if u.steps[0].name != "__version__")


def test_only_bodies_of_statements_it_follows_are_helpers():
    def shape(text: str) -> bool:
        return h.is_body_helper(ast.parse(textwrap.dedent(text)).body[0])  # type: ignore[arg-type]

    assert shape("""
        def f(a):
            x = a
            if x:
                return 1
            try:
                y = 2
            except KeyError:
                raise
            return y
    """)
    assert not shape("def f():\n    for i in range(3):\n        return i\n")
    assert not shape("def f():\n    with open('x'):\n        return 1\n")
    assert not shape("def f():\n    x = 1\n")  # returns nothing
    assert not shape("async def f():\n    x = 1\n    return x\n")
    assert not shape("def f():\n" + "    x = 1\n" * h.MAX_BODY_STATEMENTS + "    return x\n")
    generator = "def f(a):\n    x = yield a\n    return x\n"
    assert not shape(generator)
    # where the module's text has no `yield` or `await`, the body is not searched for one
    assert h.is_body_helper(ast.parse(generator).body[0], may_suspend=False)  # type: ignore[arg-type]


def test_paths_meeting_join_their_locals():
    assert h.join_states(None, {"a": Const(1)}) == {"a": Const(1)}
    joined = h.join_states({"a": Const(1), "b": Const(2)}, {"a": Const(1)})
    assert joined == {"a": Const(1), "b": UNKNOWN}
    assert h.join_states({"v": ProviderVersion("text")}, {"v": ProviderVersion("text")}) == {"v": ProviderVersion("text")}
    assert h.join_states({"a": UNBOUND}, {"a": UNBOUND}) == {"a": UNBOUND}


def test_a_handler_for_a_distribution_not_installed_does_not_run_for_the_provider(tmp_path):
    """verl's `get_version`: `try: return version(pkg) except PackageNotFoundError: return None`.
    The audited provider is installed, so the handler never runs for it and the guards on the
    result fold; for another distribution, or a handler catching more, they do not."""
    f = files_of(tmp_path, replace(OPTIONS, provider_version="0.10.0"), a="""
        from importlib.metadata import PackageNotFoundError, version
        import shim
        def get_version(pkg):
            try:
                return version(pkg)
            except PackageNotFoundError:
                return None
        def loose_version(pkg):
            try:
                return version(pkg)
            except Exception:
                return None
        name = "shim"
        if get_version(name) == "0.10.0":
            shim.decided()
        elif get_version(name) == "0.8.0":
            shim.never()
        if get_version("torch") == "2.0":
            shim.other_distribution()
        if loose_version("shim") == "0.10.0":
            shim.catches_more()
    """)["cons/a.py"]
    used = {u.steps[0].name: u.live.conditional for u in f.uses if u.steps[0].name != "__version__"}
    # decided: `never` is dead; the others are not folded (their branches run, whatever they say)
    assert used.keys() == {"decided", "other_distribution", "catches_more"} and used["decided"] is False


@pytest.mark.parametrize(
    ("source", "tests"),
    [
        ('if not hasattr(C, "m"):\n    raise RuntimeError("x")', ["not hasattr(C, 'm')"]),
        ('sig = inspect.signature(f)\nif "x" not in sig.parameters:\n    log("no x")\n    raise TypeError', ["'x' not in sig.parameters"]),
        ("if a:\n    raise E\nif b:\n    raise E", ["a", "b"]),
        ("if a:\n    raise E\nreturn 1", None),  # returns a value: a guard helper, not a check
        ("if a:\n    raise E\nelse:\n    pass", None),  # an else arm: not a check
        ("if a:\n    return None\n    raise E", None),  # an arm that returns
        ("if a:\n    warn()", None),  # an arm that goes on
        ("x = 1", None),  # no test
    ],
)
def test_a_requirement_check_is_raising_tests_only(source, tests):
    """`helpers.raising_tests`: a function whose statements are `if <test>: ... raise` (locals
    before) returns only where no test holds; anything else is not a requirement check."""
    found = h.raising_tests(ast.parse(source).body)
    assert (None if found is None else [ast.unparse(t) for t in found]) == tests
