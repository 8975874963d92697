"""What a consumer hands the provider to run by name (apiaudit.consumer.plugins): classes named
for a factory, and flags its own CLI adds to the provider's parser."""

from __future__ import annotations

import ast

from apiaudit.consumer.plugins import added_flags, launch_plugin_names, plugin_names
from apiaudit.consumer.records import LaunchArg, LaunchLine, Site

PARSERS = ("prov.cli.make_arg_parser",)


def test_flags_added_to_a_parser_built_with_the_providers_parser_function():
    source = (
        "from prov.cli import make_arg_parser\n"
        "def init(sub):\n"
        "    p = make_arg_parser(sub.add_parser('serve'))\n"
        "    g = p.add_argument_group('own')\n"
        "    g.add_argument('--omni', action='store_true')\n"
        "    p.add_argument('-x', '--stage-id', type=int)\n"
    )
    assert added_flags(ast.parse(source), "pkg.cli", PARSERS) == ("--omni", "--stage-id")


def test_a_parser_of_the_consumers_own_adds_no_provider_flags():
    source = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--omni')\n"
    assert added_flags(ast.parse(source), "pkg.cli", PARSERS) == ()


def test_classes_named_by_registration_and_by_config_keys():
    source = (
        "Factory.register_connector('Mine', 'pkg._conn', 'MyConnector')\n"
        "register_connector('Dyn', name, 'X')\n"  # a module computed at run time: not named
        "CONFIG = {'kv_connector': 'Other', 'kv_connector_module_path': 'pkg.other'}\n"
        "PARTIAL = {'kv_connector': 'Builtin'}\n"
    )
    found = plugin_names(ast.parse(source), [("register_connector", 1, 2)], [("kv_connector_module_path", "kv_connector")])
    assert [(p.module, p.name, p.via, p.site.line) for p in found] == [
        ("pkg._conn", "MyConnector", "register_connector", 1),
        ("pkg.other", "Other", "kv_connector_module_path", 3),
    ]


def test_a_launch_lines_json_names_a_class_by_module():
    arg = LaunchArg('{"kv_connector": "FP8", "kv_connector_module_path": "hs.connectors", "kv_role": "x"}', Site(3, 4))
    line = LaunchLine("server", "prov.cli.main", "prov serve", Site(1, 0), (LaunchArg("--kv-transfer-config", Site(2, 2)), arg))
    found = list(launch_plugin_names([line], [("kv_connector_module_path", "kv_connector")]))
    assert [(p.module, p.name, p.site.line) for p in found] == [("hs.connectors", "FP8", 3)]


def test_the_text_test_before_the_walk_keeps_every_name():
    source = "import fancy\nfancy.register_connector('N', 'pkg.mod', 'Cls')\nd = {'kv_connector_module_path': 'pkg.m', 'kv_connector': 'C'}\n"
    tree = ast.parse(source)
    calls, keys = [("register_connector", 1, 2)], [("kv_connector_module_path", "kv_connector")]
    assert plugin_names(tree, calls, keys, source) == plugin_names(tree, calls, keys) != ()
    assert plugin_names(tree, [("register_other", 1, 2)], [("a", "b")], source) == ()
    assert added_flags(tree, "pkg.cli", PARSERS, source) == added_flags(tree, "pkg.cli", PARSERS) == ()


def test_a_registration_on_another_provider_registry_names_nothing_for_the_rule():
    # rbln 0.10.3: ECConnectorFactory.register_connector(...) names an encoder-cache connector,
    # which KVConnectorFactory (the rule's factory) never builds; an unresolved or consumer-side
    # receiver still counts (a subclass of the factory, a parameter).
    source = (
        "from prov.ec.factory import ECConnectorFactory\n"
        "from prov.kv.factory import KVConnectorFactory as KV\n"
        "from pkg.own import MyFactory\n"
        "ECConnectorFactory.register_connector('E', 'pkg.ec', 'EcConn')\n"
        "KV.register_connector('K', 'pkg.kv', 'KvConn')\n"
        "MyFactory.register_connector('S', 'pkg.sub', 'SubConn')\n"
        "def f(factory):\n"
        "    factory.register_connector('P', 'pkg.param', 'ParamConn')\n"
    )
    calls, keys = [("register_connector", 1, 2)], [("kv_connector_module_path", "kv_connector")]
    factories = [("register_connector", "prov.kv.factory.KVConnectorFactory")]
    found = plugin_names(ast.parse(source), calls, keys, source, factories=factories, file_module="pkg.reg")
    assert [p.name for p in found] == ["KvConn", "SubConn", "ParamConn"]
    assert [p.name for p in plugin_names(ast.parse(source), calls, keys, source)] == ["EcConn", "KvConn", "SubConn", "ParamConn"]
