"""scan() is honest where static reading stops: stubs, compiled modules, run-time namespaces,
factory-made callables, placeholder methods and super() through a consumer-side base.

Provider fixtures/providers/stubbed (a `.pyi` declaring a function only through @overload, a
stub beside its `.py`, an extension module listed only in the RECORD and one present as a
file, a `globals()` loop, `sys.modules` shims, a factory, a placeholder `forward`); consumer
fixtures/consumers/honest. Each consumer line's comment says what is expected there.
"""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

EXPECTED = {
    # imports from compiled modules, and a name the stub omits but the .py defines
    ("cannot-judge", "info", "honest/calls.py", 6, "stubbed.fast_sum", None),
    ("cannot-judge", "info", "honest/calls.py", 7, "stubbed._native.Table", None),
    ("cannot-judge", "info", "honest/calls.py", 9, "stubbed.ops.ones", None),
    # the stub's overloads are the interface: a call no overload accepts is an error
    ("unexpected-keyword", "error", "honest/calls.py", 15, "stubbed.ops.zeros", "order"),
    ("attribute-missing", "error", "honest/calls.py", 16, "stubbed.ops.not_there", None),
    ("too-many-positional", "error", "honest/calls.py", 18, "stubbed.ops.DType", None),
    # run-time namespaces
    ("cannot-judge", "info", "honest/calls.py", 24, "stubbed.generated_one", None),
    ("cannot-judge", "info", "honest/calls.py", 25, "stubbed.shims.alpha", None),
    # factory products
    ("cannot-judge", "info", "honest/calls.py", 29, "stubbed.factory.unique", None),
    ("cannot-judge", "info", "honest/calls.py", 30, "stubbed.factory.Ops.unique", None),
    ("cannot-judge", "info", "honest/calls.py", 31, "stubbed.factory.add", None),
    # placeholder methods, functions made methods, super()
    ("cannot-judge", "info", "honest/models.py", 7, "stubbed.nn.Module.forward", None),
    ("too-many-positional", "error", "honest/models.py", 9, "stubbed.nn.Linear.forward", None),
    ("too-many-positional", "error", "honest/models.py", 11, "stubbed.nn._describe", None),
    ("too-many-positional", "error", "honest/models.py", 22, "stubbed.nn.Linear.forward", None),
    # isinstance/hasattr/getattr guards and asserts narrow; an unguarded use is still an error
    ("attribute-missing", "error", "honest/models.py", 31, "stubbed.nn.Linear.bias", None),
    # a sys.modules shim may install the module; a metaclass property is a class attribute
    ("cannot-judge", "info", "honest/models.py", 37, "stubbed.shims.legacy.alpha", None),
}


def test_stubbed_provider_exact_findings(tmp_path):
    from apiaudit.audit import scan

    report = scan(
        [str(FIXTURES / "consumers" / "honest" / "honest")],
        str(FIXTURES / "providers" / "stubbed" / "stubbed"),
        cache_dir=tmp_path,
        use_index_cache=False,
    )
    got = {(f.rule, f.severity.value, f.path, f.line, f.callee, f.param) for f in report.findings}
    assert got == EXPECTED
