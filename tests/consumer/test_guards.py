"""Three-valued guards: folding versions as Python compares them, and and/or/not of decisions."""

import ast

from apiaudit.consumer import guards as g
from apiaudit.consumer.records import Condition, ConditionKind
from apiaudit.consumer.values import Const, ParsedVersion, ProviderVersion, VersionPart

FOLDER = g.Folder("0.10.0", (3, 11, 0))


def cmp(left, op, right):
    return g.compare(FOLDER, left, op, right)


def test_parsed_versions_compare_as_versions():
    assert cmp(ProviderVersion("version"), ast.GtE(), ParsedVersion("0.9")) == (True, True, False)
    assert cmp(VersionPart("release"), ast.GtE(), Const((0, 10))) == (True, True, False)


def test_text_compares_as_python_compares_strings_and_says_so():
    known, result, as_text = cmp(ProviderVersion("text"), ast.GtE(), Const("0.9"))
    assert known and result is False and as_text  # "0.10.0" >= "0.9" is False in Python
    assert cmp(ProviderVersion("text"), ast.Eq(), Const("0.10.0")) == (True, True, False)  # equality is fine as text


def test_an_unknown_provider_version_decides_nothing():
    folder = g.Folder(None, (3, 11, 0))
    assert g.compare(folder, ProviderVersion("version"), ast.GtE(), ParsedVersion("0.9"))[0] is False
    assert g.compare(folder, Const((3, 11, 0)), ast.GtE(), Const((3, 8)))[:2] == (True, True)


def test_and_or_not_of_decided_and_symbolic_tests():
    cond = Condition(ConditionKind.HAS_ATTR, True, "hasattr(x, 'm')", name="m")
    sym = g.symbolic(cond)
    both = g.conjoin(g.TRUE, sym, "t")
    assert both.if_true.conditions == (cond,) and both.if_false.conditions[0].expect is False
    assert g.conjoin(g.FALSE, sym, "t").if_true.dead
    assert g.disjoin(g.TRUE, sym, "t").if_false.dead
    assert g.negate(g.TRUE) == g.FALSE
    # A disjunction of two symbolic tests on one side cannot be written as conditions: undecided.
    assert g.conjoin(sym, sym, "a and b").if_false.undecided == "not (a and b)"


def test_a_conjunction_of_run_time_tests_runs_both_ways_unconditionally():
    # `not (a and b)` runs when a is false or b is: either way is unconditional, so is the union.
    assert g.conjoin(g.RUNTIME, g.RUNTIME, "a and b") == g.RUNTIME
    cond = Condition(ConditionKind.HAS_ATTR, True, "hasattr(x, 'm')", name="m")
    mixed = g.conjoin(g.RUNTIME, g.symbolic(cond), "a and hasattr(x, 'm')")
    assert mixed.if_false == g.ALWAYS and mixed.if_true.conditions == (cond,)


def test_a_feature_test_kept_in_a_name_is_the_same_probe_where_it_is_tested():
    """`HAS_X = "x" in inspect.signature(f).parameters` then `if HAS_X:` (issue 27, cause 5)."""
    cond = Condition(ConditionKind.HAS_PARAM, True, "'x' in sig.parameters", name="x")
    probe = g.probe_of(g.symbolic(cond))
    assert probe is not None and probe.if_true == (cond,) and probe.if_false[0].expect is False
    assert g.from_probe(probe) == g.symbolic(cond)
    shown = g.from_probe(probe, "has_arg(f, 'x')")
    assert shown.if_true.conditions[0].text == "has_arg(f, 'x')" and shown.if_false.conditions[0].text == "not (has_arg(f, 'x'))"
    # Only a test the checks decide is kept: folded, undecided or run-time tests are not probes.
    assert g.probe_of(g.TRUE) is None and g.probe_of(g.RUNTIME) is None and g.probe_of(g.undecided("t")) is None
    assert g.probe_of(g.conjoin(g.symbolic(cond), g.symbolic(cond), "a and b")) is None  # a disjunction on one side


def test_a_module_constant_is_read_as_the_release_binds_it():
    """`VERSION = (5, 0, 3, "final", 0)`; a version tuple re-exported from a build-written module;
    a fallback in an import handler does not run; a name bound under a test is not decided."""
    from apiaudit.provider.names import module_constant

    assert module_constant('VERSION = (5, 0, 3, "final", 0)\n', "VERSION", "pkg") == ("literal", "(5, 0, 3, 'final', 0)")
    text = "try:\n    from ._version import __version_tuple__\nexcept Exception:\n    __version_tuple__ = (0, 0, 'dev')\n"
    assert module_constant(text, "__version_tuple__", "pkg") == ("import", "pkg._version.__version_tuple__")
    assert module_constant("__version_tuple__ = version_tuple = (0, 12, 0)\n", "version_tuple", "pkg") == ("literal", "(0, 12, 0)")
    assert module_constant("import sys\nif sys.platform == 'win32':\n    X = 1\nelse:\n    X = 2\n", "X", "pkg") is None
    assert module_constant("X = compute()\n", "X", "pkg") is None
    assert module_constant("if TYPE_CHECKING:\n    X = 1\nX = 2\n", "X", "pkg") == ("literal", "2")


def test_the_none_side_of_a_test_on_a_constructor_argument_carries_its_condition_alone():
    """`param is not None` on an `__init__` parameter defaulting to None: the `is None` side carries
    the ARGUMENT condition negated (the checks decide it dead only where every caller passes a value
    never None); in a union with another side, or kept in a name, it runs as before (ALWAYS)."""
    given = Condition(ConditionKind.ARGUMENT, True, "c is not None", name="c", owner="m.C")
    test = g.argument_given(given, none_test=True)
    (absent,) = test.if_false.conditions
    assert test.if_true.conditions == (given,) and absent.expect is False and absent.text == "c is None"
    assert g.argument_given(given).if_false == g.ALWAYS  # `if c:` may be false for a value that is not None
    runtime = g.RUNTIME
    assert g.conjoin(test, runtime, "t").if_false == g.ALWAYS  # `c is not None and x`: false where x is
    assert g.disjoin(g.negate(test), runtime, "t").if_true == g.ALWAYS  # `c is None or x`
    assert g.conjoin(g.negate(test), runtime, "t").if_true.conditions == (absent,)  # `c is None and x`
    assert g.probe_of(test) is None  # a kept `has = c is not None` decides nothing more than before


def test_a_flag_the_provider_may_fix_runs_both_ways_in_a_union():
    """`if self.flag:` carries a FIXED_VALUE condition on each side; where it meets another test, a
    side that is only such conditions runs as a run-time test's does (ALWAYS), and a test of it
    alone counts as a run-time test (`at_run_time`); it is never a probe kept in a name."""
    from apiaudit.consumer.records import Root, Step
    from apiaudit.consumer.values import Chain

    flag = g.attribute_truth(Chain(Root("self", "m.Runner"), (Step("attr", "flag"),)), lambda: "self.flag")
    assert flag is not None and flag.if_true.conditions[0].kind is ConditionKind.FIXED_VALUE
    assert g.at_run_time(flag) and g.at_run_time(g.RUNTIME) and not g.at_run_time(g.symbolic(Condition(ConditionKind.HAS_ATTR, True, "t")))
    assert g.conjoin(flag, g.RUNTIME, "self.flag and x").if_false == g.ALWAYS
    assert g.disjoin(flag, g.RUNTIME, "self.flag or x").if_true == g.ALWAYS
    assert g.probe_of(flag) is None
    # only an instance's attributes: a module's, or a call's result, are run-time data as before
    assert g.attribute_truth(Chain(Root("symbol", "prov"), (Step("attr", "FLAG"),)), lambda: "prov.FLAG") is None
    assert g.attribute_truth(Chain(Root("self", "m.Runner"), (Step("call", "on"),)), lambda: "self.on()") is None
