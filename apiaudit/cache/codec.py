"""The one format of apiaudit's memo caches: data only (JSON), verified by a content hash.

A cache file is never executable: it holds JSON that `decode` turns back into plain values
(None, bool, int, float, str, tuple, list, dict, set, frozenset) and instances of the frozen
dataclasses and enums *registered here*. A type name in a file only ever selects one of the
registered classes; nothing is imported or called by name, so whoever can write the cache can
at worst make an entry fail its check (it is then rebuilt), never run code.

Layout of a file: one header line, then the payload.

    {"apiaudit-cache": 1, "kind": "provider-index", "sha256": "<sha256 of the payload bytes>"}
    <payload: the encoded value as JSON>

A dataclass is written by position, `{"$C": ["module:Class", field1, field2, ...]}`, its
trailing fields left out where they hold their defaults (most of a consumer cache's objects
are small: positions, steps, arguments); `{"$c": ..., "f": {name: value}}` is still read.

An entry whose header, hash, JSON or types do not check out raises `CacheFormatError`;
callers rebuild it with one line on stderr.

Registering a new value type: a stage that caches values of its own frozen dataclasses or
enums registers the module that defines them, once, at import time, e.g. at the end of
that module or in the cache that stores them:

    from apiaudit.cache import codec
    cachefmt.register_module(sys.modules[__name__])   # every frozen dataclass and Enum defined there
    cachefmt.register(MyValue)                        # or one class

`environment_key()` names the Python and Griffe versions; every cache key includes it.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import itertools
import json
import os
import sys
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterator

from apiaudit.infra.atomic import atomic_write
from apiaudit.infra.frozen import values_getter
from apiaudit.infra.gcpause import paused_gc

FORMAT = 1
_HEADER_KEY = "apiaudit-cache"
_TYPES: dict[str, type] = {}
# Registered dataclass -> (its type name, a getter of its field values in order, the default of
# each: _NO_DEFAULT where it has none).
_NO_DEFAULT = object()
_FIELDS: dict[type, tuple[str, Callable[[Any], tuple], tuple[Any, ...]]] = {}
# Registered dataclass's name -> (the class, how many fields it needs, how many it has).
_BY_POSITION: dict[str, tuple[type, int, int]] = {}


class CacheFormatError(ValueError):
    """A cache file that is not a valid, untampered entry (rebuild it), or a value that cannot be stored."""


def _type_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def register(*classes: type) -> None:
    """Allow values of these frozen dataclasses or enums in cache files."""
    for cls in classes:
        is_enum = isinstance(cls, type) and issubclass(cls, enum.Enum)
        is_frozen = dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
        if not (is_enum or is_frozen):
            raise TypeError(f"{cls!r} is neither a frozen dataclass nor an Enum")
        if not is_enum and any(not f.init for f in dataclasses.fields(cls)):
            raise TypeError(f"{cls!r} has fields outside __init__; it cannot be rebuilt from data")
        if not is_enum and any(f.kw_only for f in dataclasses.fields(cls)):
            raise TypeError(f"{cls!r} has keyword-only fields; it cannot be rebuilt by position")
        shadowed = _TYPES.get(_type_name(cls))
        _FIELDS.pop(shadowed, None)  # type: ignore[arg-type]  # one class per name, as decoding reads it
        _TYPES[_type_name(cls)] = cls
        if not is_enum:
            fields = dataclasses.fields(cls)
            defaults = tuple(_NO_DEFAULT if f.default is dataclasses.MISSING else f.default for f in fields)
            _FIELDS[cls] = (_type_name(cls), values_getter([f.name for f in fields]), defaults)
            # A field with a default_factory is never left out: it counts as needed.
            needed = sum(1 for f in fields if f.default is dataclasses.MISSING)
            _BY_POSITION[_type_name(cls)] = (cls, needed, len(fields))


def register_module(module: ModuleType) -> None:
    """Register every frozen dataclass and Enum defined in `module` (not those it imports)."""
    for value in vars(module).values():
        if not isinstance(value, type) or value.__module__ != module.__name__:
            continue
        if issubclass(value, enum.Enum) or (
            dataclasses.is_dataclass(value) and value.__dataclass_params__.frozen  # type: ignore[attr-defined]
        ):
            register(value)


def environment_key() -> str:
    """The interpreter and Griffe versions: a cache written under others is not read."""
    python = f"{sys.implementation.name}-{'.'.join(map(str, sys.version_info[:3]))}"
    return f"{python}/griffe-{_griffe_version()}"


def _griffe_version() -> str:
    """The installed Griffe's version, from the `griffe-X.dist-info` folder beside it when there
    is exactly one (what `importlib.metadata` reads, without importing it: a warm scan asks this
    first), else from `importlib.metadata`."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("griffe")  # finds the package; imports none of it
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        found = list(Path(spec.origin).parent.parent.glob("griffe-*.dist-info"))
        if len(found) == 1:
            return found[0].name[len("griffe-") : -len(".dist-info")]
    try:
        from importlib.metadata import version

        return version("griffe")
    except Exception:  # noqa: BLE001 - no griffe metadata: still a stable key
        return "unknown"


# ------------------------------------------------------------------------------ values


# What JSON holds as it is (exact types: a subclass, an Enum's among them, takes the long way).
_PLAIN = frozenset({str, int, bool, float, type(None)})


def encode(value: Any) -> Any:
    """`value` as JSON-ready data; CacheFormatError for anything but plain and registered values."""
    # By exact type first, and plain items without a call (a large cache holds millions of values).
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is tuple:
        return {"$t": [item if type(item) in _PLAIN else encode(item) for item in value]}
    dataclass_fields = _FIELDS.get(kind)
    if dataclass_fields is not None:
        name, getter, defaults = dataclass_fields
        values = getter(value)
        kept = len(values)
        while kept:
            last, default = values[kept - 1], defaults[kept - 1]
            # The same type too: a 0 stored where the default is False must come back as 0.
            if default is _NO_DEFAULT or type(last) is not type(default) or last != default:
                break
            kept -= 1
        return {"$C": [name, *[v if type(v) in _PLAIN else encode(v) for v in values[:kept]]]}
    return _encode_other(value)


def _encode_other(value: Any) -> Any:
    if isinstance(value, enum.Enum):  # before str/int: a str-valued Enum must come back as itself
        name = _type_name(type(value))
        if _TYPES.get(name) is not type(value):
            raise CacheFormatError(f"unregistered enum {name}")
        return {"$e": name, "v": encode(value.value)}
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return {"$t": [encode(item) for item in value]}
    if isinstance(value, list):
        return {"$l": [encode(item) for item in value]}
    if isinstance(value, dict):
        return {"$d": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, (set, frozenset)):
        items = sorted((encode(item) for item in value), key=lambda item: json.dumps(item, sort_keys=True))
        return {"$fs" if isinstance(value, frozenset) else "$s": items}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = _type_name(type(value))
        raise CacheFormatError(f"unregistered type {name}")
    raise CacheFormatError(f"cannot store a {type(value).__name__} in a cache file")


def _positional(items: Any) -> Any:
    """The dataclass a `$C` list names, rebuilt from its leading fields (the rest take their defaults)."""
    # The hot path of a warm scan (one call per stored object): checks kept to a few lookups.
    if type(items) is not list or not items or type(items[0]) is not str:
        raise CacheFormatError("a malformed positional value")
    shape = _BY_POSITION.get(items[0])
    if shape is None:
        raise CacheFormatError(f"an unregistered type {items[0]!r}")
    cls, needed, total = shape
    if not needed <= len(items) - 1 <= total:
        raise CacheFormatError(f"the fields of {items[0]} do not match")
    try:
        return cls(*items[1:])
    except TypeError as exc:
        raise CacheFormatError(f"cannot rebuild {items[0]}: {exc}") from None


def decode(data: Any) -> Any:
    """The value `encode` made `data` from; CacheFormatError for anything else."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if not isinstance(data, dict) or len(data) not in (1, 2):
        raise CacheFormatError("not an encoded value")
    if "$t" in data:
        return tuple(decode(item) for item in _items(data["$t"]))
    if "$l" in data:
        return [decode(item) for item in _items(data["$l"])]
    if "$d" in data:
        pairs = _items(data["$d"])
        if not all(isinstance(pair, list) and len(pair) == 2 for pair in pairs):
            raise CacheFormatError("a malformed mapping")
        return {decode(k): decode(v) for k, v in pairs}
    if "$fs" in data:
        return frozenset(decode(item) for item in _items(data["$fs"]))
    if "$s" in data:
        return {decode(item) for item in _items(data["$s"])}
    if "$C" in data:
        items = _items(data["$C"])
        return _positional(items[:1] + [decode(item) for item in items[1:]])
    if "$e" in data:
        cls = _registered(data["$e"])
        if not issubclass(cls, enum.Enum):
            raise CacheFormatError(f"{data['$e']} is not an enum")
        try:
            return cls(decode(data.get("v")))
        except ValueError:
            raise CacheFormatError(f"no such {data['$e']} member") from None
    if "$c" in data:
        cls = _registered(data["$c"])
        fields = data.get("f")
        names = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else None
        if names is None or not isinstance(fields, dict) or sorted(fields) != sorted(names):
            raise CacheFormatError(f"the fields of {data['$c']} do not match")
        try:
            return cls(**{name: decode(fields[name]) for name in names})
        except TypeError as exc:
            raise CacheFormatError(f"cannot rebuild {data['$c']}: {exc}") from None
    raise CacheFormatError("an unknown tag")


def _items(value: Any) -> list:
    if not isinstance(value, list):
        raise CacheFormatError("a malformed sequence")
    return value


def _registered(name: Any) -> type:
    cls = _TYPES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise CacheFormatError(f"an unregistered type {name!r}")
    return cls


# ------------------------------------------------------------------------------- files


@dataclasses.dataclass(frozen=True)
class Encoded:
    """A value already written as JSON text by `to_json` (where it was at hand: in the process
    that made it, or another sharing a large cache's encoding), standing for a mapping's value or
    a tuple's item in what `dumps` writes; written as it is. Never stored as such.

    `text` is the JSON text, or (`Encoded.packed`) its UTF-8 bytes compressed: a large cache's
    entries are held that way until written (a tenth of the memory)."""

    text: str | bytes

    @staticmethod
    def packed(text: str) -> Encoded:
        return Encoded(zlib.compress(_utf8(text), 1))

    @property
    def json(self) -> str:
        """The JSON text; CacheFormatError where packed bytes do not unpack."""
        if isinstance(self.text, str):
            return self.text
        try:
            return zlib.decompress(self.text).decode("utf-8", "surrogatepass")
        except (zlib.error, UnicodeDecodeError):
            raise CacheFormatError("packed JSON text that does not unpack") from None


def to_json(value: Any) -> str:
    """`value`'s JSON text in a payload (`Encoded` holds it); CacheFormatError as for `encode`."""
    return _json(encode(value))


def from_json(text: str) -> Any:
    """The value `to_json` wrote; CacheFormatError for anything else."""
    return _decoded(text, "not a valid encoded value")


def _decoded(data: str | bytes, invalid: str) -> Any:
    """The value in JSON `data`, rebuilt as the parser closes each object (innermost first, in
    one pass); CacheFormatError (`invalid`, and why) for anything else."""
    try:
        with paused_gc():
            return json.loads(data, object_hook=_rebuild)
    except CacheFormatError:
        raise
    except (ValueError, TypeError, RecursionError) as exc:
        raise CacheFormatError(f"{invalid} ({type(exc).__name__})") from None


def _payload_chunks(value: Any) -> Iterator[str]:
    """The payload's JSON text, mapping by mapping: what `json.dumps(encode(value))` writes, without
    holding the encoded form of a whole large cache (a consumer cache's) at once."""
    kind = type(value)
    if kind is Encoded:
        yield value.json
    elif kind is list or (kind is tuple and any(type(item) is Encoded for item in value)):
        # Item by item: a list (a stored report's findings: ~30 MB encoded at once for 4,000),
        # or a tuple holding encoded items.
        yield '{"$l":[' if kind is list else '{"$t":['
        for number, item in enumerate(value):
            if number:
                yield ","
            yield from _payload_chunks(item)
        yield "]}"
    elif isinstance(value, dict) and not isinstance(value, enum.Enum):
        yield '{"$d":['
        for number, (key, item) in enumerate(value.items()):
            yield ("[" if number == 0 else ",[") + _json(encode(key)) + ","
            yield from _payload_chunks(item)
            yield "]"
        yield "]}"
    else:
        yield _json(encode(value))


def _json(data: Any) -> str:
    return _ENCODER.encode(data)


def _utf8(text: str) -> bytes:
    """JSON text as a file's bytes: UTF-8, a lone surrogate a `str` may hold (`"\\ud800"` in a
    consumer's string literal) written as its three bytes ("surrogatepass"), which `json.loads`
    of bytes reads back as the same code point. Escaping it instead (`\\ud800`) would not come
    back the same where two such halves stand side by side: the parser joins them into one."""
    return text.encode("utf-8", "surrogatepass")


# `encode` builds a fresh tree, which holds no cycle (a cycle would have recursed without end
# there): the encoder's check for one would only cost a fifth of its time.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False)


def _header(kind: str, sha256: str) -> bytes:
    return json.dumps({_HEADER_KEY: FORMAT, "kind": kind, "sha256": sha256}).encode("utf-8") + b"\n"


def dumps(kind: str, value: Any) -> bytes:
    """The bytes of a cache file holding `value`."""
    with paused_gc():
        payload = _utf8("".join(_payload_chunks(value)))
    return _header(kind, hashlib.sha256(payload).hexdigest()) + payload


_BATCH = 1 << 20


def _payload_bytes(value: Any, digest: Any) -> Iterator[bytes]:
    """`dumps`'s payload in batches of about a megabyte, each added to `digest` as it goes."""
    with paused_gc():
        pending: list[str] = []
        size = 0
        for chunk in _payload_chunks(value):
            pending.append(chunk)
            size += len(chunk)
            if size >= _BATCH:
                data = _utf8("".join(pending))
                digest.update(data)
                yield data
                pending, size = [], 0
        data = _utf8("".join(pending))
        digest.update(data)
        yield data


def loads(kind: str, raw: bytes) -> Any:
    """The value in a cache file's bytes; CacheFormatError unless its header and hash check out."""
    head, newline, payload = raw.partition(b"\n")
    try:
        header = json.loads(head)
    except ValueError:
        raise CacheFormatError("no cache header") from None
    if not newline or not isinstance(header, dict) or header.get(_HEADER_KEY) != FORMAT:
        raise CacheFormatError("not an apiaudit cache file of this format")
    if header.get("kind") != kind:
        raise CacheFormatError(f"a {header.get('kind')!r} entry, not {kind!r}")
    if header.get("sha256") != hashlib.sha256(payload).hexdigest():
        raise CacheFormatError("its content does not match its hash")
    return _decoded(payload, "its content is not a valid entry")


_SHARED_LENGTH = 200  # characters: a longer text is taken to be its own value


def _shared(items: Any) -> list:
    """A record's fields, each short text one shared object per value (`sys.intern`): the parser
    makes a new string for every occurrence, and a 1,000-file consumer's records hold 400,000
    strings of 56,000 values (22 MB more than the values). A long text (a file's source) is its
    own value. Tuples' items are left as parsed: sharing them too cost a consumer cache's decode
    twice as much for little more."""
    intern = sys.intern
    return [intern(item) if type(item) is str and len(item) <= _SHARED_LENGTH else item for item in _items(items)]


def _rebuild(obj: dict) -> Any:
    """One JSON object, its members already rebuilt: a tagged value, or a dataclass's field map."""
    if len(obj) == 1:
        ((tag, items),) = obj.items()
        if tag == "$C":
            return _positional(_shared(items))
        if tag == "$t":
            return tuple(_items(items))
        if tag == "$l":
            return _items(items)
        if tag == "$d":
            pairs = _items(items)
            if not all(isinstance(pair, list) and len(pair) == 2 for pair in pairs):
                raise CacheFormatError("a malformed mapping")
            return {k: v for k, v in pairs}
        if tag == "$fs":
            return frozenset(_items(items))
        if tag == "$s":
            return set(_items(items))
    if len(obj) == 2 and "$e" in obj and "v" in obj:
        cls = _registered(obj["$e"])
        if not issubclass(cls, enum.Enum):
            raise CacheFormatError(f"{obj['$e']} is not an enum")
        try:
            return cls(obj["v"])
        except ValueError:
            raise CacheFormatError(f"no such {obj['$e']} member") from None
    if len(obj) == 2 and "$c" in obj and "f" in obj:
        cls = _registered(obj["$c"])
        fields = obj["f"]
        names = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else None
        if names is None or not isinstance(fields, dict) or sorted(fields) != sorted(names):
            raise CacheFormatError(f"the fields of {obj['$c']} do not match")
        try:
            return cls(**fields)
        except TypeError as exc:
            raise CacheFormatError(f"cannot rebuild {obj['$c']}: {exc}") from None
    if any(key.startswith("$") for key in obj):
        raise CacheFormatError("an unknown tag")
    return obj  # a dataclass's field map (field names never start with "$")


def read(path: Path, kind: str) -> Any:
    """The value in cache file `path`: OSError when absent or unreadable, CacheFormatError when invalid."""
    return loads(kind, Path(path).read_bytes())


MISSING = object()  # what `read_or_discard` gives for no usable entry


def read_or_discard(path: Path, kind: str, what: str, instead: str = "rebuilding it") -> Any:
    """The value in cache file `path`, or `MISSING` when there is none. An entry that fails its
    check is removed with one line on stderr (`what` names the cache, `instead` what happens)."""
    try:
        return read(path, kind)
    except FileNotFoundError:
        return MISSING
    except (OSError, CacheFormatError) as exc:
        print(f"apiaudit: the {what} {Path(path).name} failed its check ({exc}); {instead}", file=sys.stderr)
        Path(path).unlink(missing_ok=True)
        return MISSING


def file_stat(path: str | Path) -> tuple[int, int] | None:
    """(size, mtime in ns) of a file, the fast check of a file a cache entry read; None when absent.
    (`os.stat` on the path as given: called once per provider file a scan read, kept cheap.)"""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def write(path: Path, kind: str, value: Any) -> None:
    """Write cache file `path` atomically: the bytes `dumps` gives, streamed (a large cache is never
    held whole); on CacheFormatError for an unstorable value the file is left as it was."""
    digest = hashlib.sha256()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    # The header's place is kept by one of the same length (a sha256 is always 64 hex digits).
    chunks = itertools.chain([_header(kind, "0" * 64)], _payload_bytes(value, digest))
    atomic_write(Path(path), chunks, head=lambda: _header(kind, digest.hexdigest()))