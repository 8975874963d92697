"""A release's server command line read statically ([[launch]] rules): flags, config classes,
registered names. The fixture provider `launcher` builds its parser the way vLLM does."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from apiaudit.provider.cli import config_shape, read_cli, registered_names
from apiaudit.provider.index import ProviderIndex
from apiaudit.recipes.loader import load_rulebook
from apiaudit.recipes.records import LaunchCommand, LaunchRule

PROVIDERS = Path(__file__).resolve().parents[2] / "fixtures" / "providers"


def launcher(version: str):
    index = ProviderIndex(PROVIDERS / f"launcher_{version}", ("launcher",))
    book = load_rulebook([PROVIDERS], "launcher")
    return index, book


def flags(spec):
    return {flag.options: (flag.negatable, flag.config) for flag in spec.flags}


def test_flags_of_the_fixture_release_come_from_its_source():
    index, book = launcher("v1")
    spec = read_cli(index, book.launches[0])
    assert spec.parser == "launcher.server.make_parser"  # launcher.frontend does not exist: the next one
    assert spec.unread == () and spec.complete
    assert flags(spec) == {
        ("--api-workers",): (False, None),
        # FrontendArgs' fields, looped over field_kwargs(cls): a bool field is negatable
        ("--host",): (False, None),
        ("--port",): (False, None),
        ("--enable-docs",): (True, None),
        ("--model",): (False, None),
        ("--swap-space",): (False, None),
        ("--enforce-eager",): (True, None),  # action=BooleanOptionalAction
        ("--opt-level",): (False, None),
        # **server_kwargs["spec_config"]: ServerConfig.spec_config is SpecConfig | None
        ("--spec-config", "-sc"): (False, "launcher.config.SpecConfig"),
        # type=json.loads says nothing: EngineArgs.transfer_config is TransferConfig | None
        ("--transfer-config",): (False, "launcher.config.TransferConfig"),
    }
    assert spec.hooks == ("launcher/server.py:28",)  # plugins.extend_parser(parser): a plugin hook
    options = spec.options()
    assert {"--no-enable-docs", "--no-enforce-eager", "-h", "--help"} <= set(options)
    assert "--no-port" not in options
    assert read_cli(launcher("v2")[0], book.launches[0]).options().get("--swap-space") is None


def test_config_shapes_fields_literals_and_nesting():
    index, _ = launcher("v1")
    shape = config_shape(index, "launcher.config.SpecConfig")
    assert shape.unknown is None and shape.open is None
    assert {f.name: (f.nested, f.choices, f.raw) for f in shape.fields} == {
        "method": (None, ('"draft"', '"eagle"', '"ngram"'), False),  # Literal[DraftMethod, "ngram"], the alias followed
        "num_tokens": (None, None, False),
        "draft": ("launcher.config.DraftConfig", None, False),
        "target": (None, None, True),  # SkipValidation[DraftConfig]: taken as it is
    }
    assert config_shape(launcher("v2")[0], "launcher.config.SpecConfig").field("method").choices == ('"draft"', '"eagle"')
    assert config_shape(index, "launcher.config.TransferConfig").field("role").choices == ('"producer"', '"consumer"')


def test_registered_names():
    index, book = launcher("v1")
    names = registered_names(index, book.launch_registries[0])
    assert [(r.name, r.class_path, r.location) for r in names.names] == [
        ("FileConnector", "launcher.connectors.FileConnector", "launcher/connectors.py:12"),
        ("SharedConnector", "launcher.connectors.SharedConnector", "launcher/connectors.py:13"),
    ]
    assert [r.name for r in registered_names(launcher("v2")[0], book.launch_registries[0]).names] == ["FileConnector"]


def test_answers_are_memoised_as_plain_values_in_the_index():
    from apiaudit.cache import codec

    index, book = launcher("v1")
    read_cli(index, book.launches[0])
    kept = {k: v for k, v in index.memo.items() if k[0] in ("launch-cli", "launch-config")}
    assert kept and codec.from_json(codec.to_json(kept)) == kept
    assert "launcher/server.py" in index.loader.touched and "launcher/args.py" in index.loader.touched


def write(root: Path, files: dict[str, str]) -> ProviderIndex:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return ProviderIndex(root, ("toy",))


RULE = LaunchRule("server", (LaunchCommand("toy.cli", "toy", "serve"),), ("toy.cli.make_parser",))


@pytest.mark.parametrize(
    "body, unread",
    [
        ("import external\n\ndef make_parser(parser):\n    parser.add_argument('--a')\n    external.add_flags(parser)\n",
         "toy/cli.py:5: the parser is handed to external.add_flags, which apiaudit cannot read"),
        ("NAMES = ['b']\n\ndef make_parser(parser):\n    for n in NAMES:\n        parser.add_argument('--' + n)\n",
         "toy/cli.py:5: an add_argument call builds its option name at run time"),
    ],
)
def test_what_cannot_be_read_makes_the_table_incomplete(tmp_path, body, unread):
    index = write(tmp_path, {"toy/__init__.py": "", "toy/cli.py": body})
    spec = read_cli(index, RULE)
    assert spec.unread == (unread,) and not spec.complete


def test_methods_reached_through_cls_and_super(tmp_path):
    index = write(tmp_path, {
        "toy/__init__.py": "",
        "toy/cli.py": """\
            class Base:
                @classmethod
                def add(cls, parser):
                    parser.add_argument("--base")
                    cls.more(parser)

                @classmethod
                def more(cls, parser):
                    parser.add_argument("--base-more")


            class Child(Base):
                @classmethod
                def add(cls, parser):
                    super().add(parser)
                    parser.add_argument("--child")

                @classmethod
                def more(cls, parser):
                    parser.add_argument("--child-more")


            def make_parser(parser):
                Child.add(parser)
        """,
    })  # fmt: skip
    spec = read_cli(index, RULE)
    assert spec.complete
    assert sorted(o for f in spec.flags for o in f.options) == ["--base", "--child", "--child-more"]


def test_no_parser_in_the_release(tmp_path):
    index = write(tmp_path, {"toy/__init__.py": ""})
    spec = read_cli(index, RULE)
    assert spec.parser is None and spec.unread == ("the release defines none of the parser functions the rules name (toy.cli.make_parser)",)
