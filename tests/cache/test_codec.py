"""The data-only cache format: every value the caches hold round-trips; nothing else is accepted."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import types

import pytest

from apiaudit.cache import codec
from apiaudit.consumer import records as consumer_records
from apiaudit.provider import records as provider_records

codec.register_module(provider_records)
codec.register_module(consumer_records)

SITE = consumer_records.Site(3, 4, 3, 20)
PARAM = provider_records.Param("b", provider_records.ParamKind.KEYWORD_ONLY, True, "int", "1")
SIGNATURE = provider_records.Signature((PARAM,), "def __init__", provider_records.Extra.IGNORE, "pkg/mod.py:3")
SYMBOL = provider_records.Symbol("pkg.mod.C", provider_records.SymbolKind.CLASS, "pkg/mod.py:1")
CALL = provider_records.CallInfo(SYMBOL, (SIGNATURE, SIGNATURE), fallback=None, returns=SYMBOL)
ROOT = consumer_records.Root("symbol", "pkg.mod.C")
STEP = consumer_records.Step("call", None, consumer_records.CallShape((consumer_records.Arg("keyword", "b", SITE),)))
FILE = consumer_records.ConsumerFile(
    path="job.py",
    module="job",
    uses=(consumer_records.Use(ROOT, (STEP,), SITE, "<module>", "C(b=1)"),),
    classes=(consumer_records.ClassFacts("job.K", ("pkg.mod.C",), (), frozenset({"run", "x"}), SITE),),
    method_bindings=(consumer_records.MethodBinding("job.f", (ROOT, (STEP,)), SITE),),
    source="from pkg.mod import C\nC(b=1)\n",
)


@pytest.mark.parametrize(
    "value",
    [
        None, True, 0, 1.5, "text", (), ("a", ("b", None)), ["x", 1], {("call", "a.b", None): CALL},
        frozenset({"a", "b"}), {1, 2}, provider_records.ParamKind.VAR_KEYWORD, PARAM, SIGNATURE, CALL,
        provider_records.Found(SYMBOL), provider_records.Missing("pkg.x", SYMBOL, "x"),
        provider_records.Unknown("pkg.z", "module __getattr__"), FILE,
        {"key": "k", "entries": {"job.py": ("sha", {"job.C": "pkg.mod.C"}, "variant", FILE)}},
    ],
)  # fmt: skip
def test_values_round_trip_with_their_types(value):
    again = codec.loads("test", codec.dumps("test", value))
    assert again == value
    assert type(again) is type(value)


def test_str_enums_come_back_as_enums_not_strings():
    again = codec.loads("test", codec.dumps("test", (provider_records.ParamKind.KEYWORD_ONLY,)))
    assert again[0] is provider_records.ParamKind.KEYWORD_ONLY


def test_an_unregistered_value_cannot_be_stored():
    @dataclasses.dataclass(frozen=True)
    class Stranger:
        x: int

    with pytest.raises(codec.CacheFormatError, match="unregistered"):
        codec.dumps("test", (Stranger(1),))
    with pytest.raises(codec.CacheFormatError):
        codec.dumps("test", object())


def test_only_frozen_dataclasses_and_enums_register():
    @dataclasses.dataclass
    class Mutable:
        x: int

    with pytest.raises(TypeError):
        codec.register(Mutable)
    with pytest.raises(TypeError):
        codec.register(dict)


def test_a_new_module_of_values_only_registers_itself():
    # What another stage does to cache values of its own: define them, register the module.
    module = types.ModuleType("apiaudit_test_values")
    sys.modules[module.__name__] = module
    try:
        exec(
            "import dataclasses, enum\n"
            "class Mood(enum.Enum):\n    CALM = 'calm'\n"
            "@dataclasses.dataclass(frozen=True)\nclass Memo:\n    mood: Mood\n    names: tuple\n",
            module.__dict__,
        )
        with pytest.raises(codec.CacheFormatError):
            codec.dumps("test", module.Memo(module.Mood.CALM, ("a",)))
        codec.register_module(module)
        value = module.Memo(module.Mood.CALM, ("a",))
        assert codec.loads("test", codec.dumps("test", value)) == value
    finally:
        del sys.modules[module.__name__]


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\x80\x04K\x01.",  # a pickle
        b'{"apiaudit-cache": 1, "kind": "test", "sha256": "0"}\n[]',
        b'{"apiaudit-cache": 99, "kind": "test", "sha256": "0"}\n[]',
        b"{}\n[]",
    ],
)
def test_anything_but_a_valid_entry_is_refused(raw):
    with pytest.raises(codec.CacheFormatError):
        codec.loads("test", raw)


def test_an_entry_of_another_kind_is_refused():
    with pytest.raises(codec.CacheFormatError, match="entry"):
        codec.loads("provider-index", codec.dumps("consumer-files", 1))


def test_a_forged_enum_member_or_field_set_is_refused():
    good = codec.dumps("test", PARAM).decode()
    named = '{"$c":"apiaudit.provider.records:Param","f":{"name":"b","kind":{"$e":"apiaudit.provider.records:ParamKind","v":"keyword-only"},"has_default":true,"annotatio_":"int","default":"1"}}'
    forgeries = (
        good.replace('"keyword-only"', '"no-such-kind"'),
        good.replace('"1"]}', '"1","extra"]}'),  # one field more than the class has
        good.replace(',{"$e":"apiaudit.provider.records:ParamKind","v":"keyword-only"},true,"int","1"]}', "]}"),  # no kind (it has no default)
        good.partition("\n")[0] + "\n" + named,  # the named form with a field name it does not have
    )
    for forged in forgeries:
        header, _, payload = forged.partition("\n")
        head = json.loads(header)
        head["sha256"] = hashlib.sha256(payload.encode()).hexdigest()
        with pytest.raises(codec.CacheFormatError):
            codec.loads("test", (json.dumps(head) + "\n" + payload).encode())


def test_environment_key_names_python_and_griffe():
    key = codec.environment_key()
    assert key.startswith(sys.implementation.name) and "/griffe-" in key


def test_a_dataclass_is_stored_by_position_its_default_tail_left_out():
    payload = codec.dumps("test", consumer_records.Site(3, 4)).partition(b"\n")[2]
    assert json.loads(payload) == {"$C": ["apiaudit.consumer.records:Site", 3, 4]}
    # A value equal to the default but of another type is kept (0 is not False).
    step = consumer_records.Step("call", None, None, 0)
    assert codec.loads("test", codec.dumps("test", step)).check == 0
    assert type(codec.loads("test", codec.dumps("test", step)).check) is int


def test_the_named_form_is_still_read():
    named = {"$c": "apiaudit.consumer.records:Site", "f": {"line": 3, "column": 4, "end_line": None, "end_column": None}}
    payload = json.dumps(named).encode()
    head = json.dumps({"apiaudit-cache": 1, "kind": "test", "sha256": hashlib.sha256(payload).hexdigest()}).encode()
    assert codec.loads("test", head + b"\n" + payload) == consumer_records.Site(3, 4)
    assert codec.decode(named) == consumer_records.Site(3, 4)


def test_a_file_is_written_mapping_by_mapping_and_item_by_item_as_one_encoding_would_write_it():
    values = (
        {"a": {"b": FILE, ("x", 1): CALL}, "c": []}, {}, {"k": {}}, FILE, [1, {"a": 2}], {1: {2: {3: PARAM}}},
        {"report": {"findings": [{"rule": "r", "line": 3}, {"rule": "s", "at": [1, (2, 3)]}], "notices": []}}, [[], [[]]],
    )  # fmt: skip
    for value in values:
        whole = json.dumps(codec.encode(value), separators=(",", ":"), ensure_ascii=False).encode()
        assert codec.dumps("test", value).partition(b"\n")[2] == whole
        assert codec.loads("test", codec.dumps("test", value)) == value


def test_a_value_encoded_beforehand_is_written_as_the_value_itself():
    value = {"entries": {"a.py": ("sha", ({"m.x": "engine.x"}, {}), "v1", None, False), "b.py": (1, 2.5, None)}}
    ahead = {"entries": {k: codec.Encoded(codec.to_json(v)) for k, v in value["entries"].items()}}
    assert codec.dumps("kind", ahead) == codec.dumps("kind", value)
    assert codec.loads("kind", codec.dumps("kind", ahead)) == value


def test_a_value_encoded_beforehand_may_stand_for_a_tuples_item():
    entry = ("sha", ({"m.x": "engine.x"}, {}), "v1", FILE, True)
    ahead = entry[:3] + (codec.Encoded(codec.to_json(FILE)),) + entry[4:]
    assert codec.dumps("kind", {"a.py": ahead}) == codec.dumps("kind", {"a.py": entry})
    assert codec.dumps("kind", ahead) == codec.dumps("kind", entry)


def test_json_text_comes_back_as_its_value_and_nothing_else_does():
    for value in (FILE, CALL, (1, "a", None), {"k": frozenset({1, 2})}):
        assert codec.from_json(codec.to_json(value)) == value
    for text in ("{", '{"$C": ["os:system", "ls"]}', '{"$x": 1}', "[" * 100_000):
        with pytest.raises(codec.CacheFormatError):
            codec.from_json(text)
    packed = codec.Encoded.packed(codec.to_json(FILE))
    assert codec.from_json(packed.json) == FILE
    with pytest.raises(codec.CacheFormatError):
        codec.Encoded(packed.text[:-4]).json  # noqa: B018 - the property raises


def test_a_streamed_write_is_what_dumps_gives_and_an_unstorable_value_leaves_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(codec, "_BATCH", 8)  # many batches
    path = tmp_path / "entry.json"
    value = {"entries": {f"f{i}.py": ("sha", i, None) for i in range(50)}}
    codec.write(path, "kind", value)
    assert path.read_bytes() == codec.dumps("kind", value)
    assert codec.read(path, "kind") == value
    with pytest.raises(codec.CacheFormatError):
        codec.write(path, "kind", {"entries": {"a": 1, "b": object()}})  # fails half way through
    assert path.read_bytes() == codec.dumps("kind", value)
    assert [p.name for p in tmp_path.iterdir()] == ["entry.json"]  # no temporary file left behind


@pytest.mark.parametrize("text", ["\ud800", "a\udc00b", "\ud83d\ude00", "\udfff\ud800", "😀\ud800"])
def test_any_str_python_can_hold_round_trips(text):
    """A lone surrogate (a consumer's `"\\ud800"` literal) is a `str` like any other: written,
    packed and read back as itself, halves side by side never joined into one character."""
    value = (text, {text: [text]}, frozenset({text}), FILE.__class__(path="s.py", module="s", source=text))
    assert codec.loads("test", codec.dumps("test", value)) == value
    assert codec.from_json(codec.Encoded.packed(codec.to_json(value)).json) == value
