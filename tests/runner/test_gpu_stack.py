"""bench/gpu: the locked wheel stack and the stand-in edits, checked without a GPU or the network."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

BENCH = Path(__file__).resolve().parents[2] / "bench" / "gpu"
SHA_LINE = re.compile(r"^[0-9a-f]{64}  (?P<path>\S+\.whl(?:\.\d)?)$")


def _lock_entries(name: str) -> list[str]:
    lines = (BENCH / name).read_text(encoding="utf-8").splitlines()
    paths = []
    for line in lines:
        match = SHA_LINE.match(line)
        assert match, f"{name}: not a sha256sum line: {line!r}"
        paths.append(match["path"])
    return paths


def _hand_fixes():
    spec = importlib.util.spec_from_file_location("hand_fixes", BENCH / "hand_fixes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_pin_is_locked_at_its_version_and_one_version_each() -> None:
    locked: dict[str, str] = {}
    for path in _lock_entries("gpu-stack.lock"):
        name, version, *_ = parse_wheel_filename(Path(path).name)
        key = f"{path.split('/')[0]}/{canonicalize_name(name)}" if "/" in path else canonicalize_name(name)
        assert key not in locked, f"two versions of {key} in one install target"
        locked[key] = str(version)
    for line in (BENCH / "requirements.in").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        assert name in locked, f"{name} is required but not locked"
        assert requirement.specifier.contains(locked[name], prereleases=True), f"{name} {locked[name]} not {requirement}"
    assert {"speculators-0.4.0/speculators", "speculators-0.3.0/speculators"} <= set(locked)


def test_the_chunks_hold_every_wheel_and_the_parts_of_the_large_one() -> None:
    chunks = _lock_entries("gpu-stack.chunks")
    small = {p.removeprefix("wheels/") for p in chunks if p.startswith("wheels/")}
    trainer = {p.removeprefix("trainer-0.9/") for p in chunks if p.startswith("trainer-0.9/")}
    parts = sorted(p for p in chunks if p.startswith("vllm-"))
    locked = set(_lock_entries("gpu-stack.lock"))
    # speculators 0.9's trainer target travels as a chunk of its own (it does not fit beside the small wheels).
    assert small == {p for p in locked if not p.startswith(("vllm-", "speculators-0.9/"))}
    assert {f"speculators-0.9/{name}" for name in trainer} == {p for p in locked if p.startswith("speculators-0.9/")}
    assert len(parts) >= 2
    wheel = {Path(p).name.rsplit(".", 1)[0] for p in parts}
    assert len(wheel) == 1 and wheel <= locked
    # Part N of the wheel is in folder vllm-(N+1): one folder per device call.
    assert [p.split("/")[0] for p in parts] == [f"vllm-{n + 1}" for n in range(len(parts))]
    assert [p.rsplit(".", 1)[1] for p in parts] == [str(n) for n in range(len(parts))]


def test_the_stand_in_edits_add_the_follow_up_call_and_drop_the_index() -> None:
    source = (
        "def run(self, out):\n"
        "    self.executor.execute_model(out)\n"
        "    replies = self.executor.collective_rpc(\n"
        "        'get_states',\n"
        "        unique_reply_rank=0,\n"
        "    )\n"
        "    states = replies[0]\n"
        "    kept = self.executor.collective_rpc('other')\n"
        "    first = kept[0]\n"
    )
    fixed, done = _hand_fixes().fix_text(source)
    assert "    self.executor.execute_model(out)\n    self.executor.sample_tokens(None)\n" in fixed
    assert "    states = replies\n" in fixed
    assert "    first = kept[0]\n" in fixed  # no unique_reply_rank: a list of replies, indexed rightly
    assert len(done) == 2


def test_an_assigned_execute_model_result_is_left_alone() -> None:
    source = "def run(self, out):\n    result = self.executor.execute_model(out)\n    self.executor.sample_tokens(result)\n"
    fixed, done = _hand_fixes().fix_text(source)
    assert fixed == source and done == []


def test_a_cache_config_without_the_keyword_gets_prefix_caching_off() -> None:
    source = (
        "def config(size):\n"
        "    cache_config = CacheConfig(\n"
        "        block_size=size,\n"
        "    )\n"
        "    other = CacheConfig(\n"
        "        enable_prefix_caching=True,\n"
        "    )\n"
    )
    fixed, done = _hand_fixes().fix_text(source)
    assert "    cache_config = CacheConfig(\n        enable_prefix_caching=False,\n        block_size=size,\n" in fixed
    assert fixed.count("enable_prefix_caching") == 2 and len(done) == 1
