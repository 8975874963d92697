"""What an import binds: provider symbols, re-exports, values other consumer modules export."""

import ast

from apiaudit.consumer.imports import ImportContext, module_imports
from apiaudit.consumer.records import ConsumerOptions, Root
from apiaudit.consumer.values import Chain, Const, ConsumerRef, ProviderVersion


def test_import_values():
    options = ConsumerOptions(
        provider_packages=("prov",),
        reexports=(("cons.compat.P", "prov.core.P"),),
        shared_values=(("cons.flags.NEW", Const(True)),),
        python_version=(3, 11, 0),
    )
    ctx = ImportContext("cons.sub.mod", False, options)
    assert ctx.absolute("x", 2) == "cons.x" and ctx.absolute(None, 1) == "cons.sub"
    assert ctx.value_for("prov.core.P") == Chain(Root("symbol", "prov.core.P"))
    assert ctx.value_for("prov.__version__") == ProviderVersion("text")
    assert ctx.value_for("cons.compat.P") == Chain(Root("symbol", "prov.core.P"))
    assert ctx.value_for("cons.flags.NEW") == Const(True)
    assert ctx.value_for("sys.version_info") == Const((3, 11, 0))
    assert ctx.value_for("cons.other") == ConsumerRef("cons.other")


def test_module_imports_follow_if_and_try_but_not_type_checking():
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "try:\n    from prov import A\nexcept ImportError:\n    A = None\n"
        "if TYPE_CHECKING:\n    from prov import T\n"
        "import prov.x as px\n"
    )
    found = module_imports(tree, "cons.m", False)
    assert found["cons.m.A"] == "prov.A" and found["cons.m.px"] == "prov.x" and "cons.m.T" not in found
