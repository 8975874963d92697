"""bench/gpu: the locked wheel stack and the stand-in edits, checked without a GPU or the network."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
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
    small = {p.split("/", 1)[1] for p in chunks if re.match(r"wheels-\d+/", p)}
    assert len(small) == sum(1 for p in chunks if p.startswith("wheels-")), "a wheel in two chunks"
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


def _stack(tmp_path: Path, wheels: dict[str, int]) -> Path:
    """A .gpu-stack with fake wheels of the given sizes in dl/ (sparse: only their sizes matter)."""
    stack = tmp_path / "stack"
    for name, size in wheels.items():
        path = stack / "dl" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as out:
            out.truncate(size)
    return stack


def _chunks(stack: Path, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(BENCH / "gpu-stack.sh"), "chunks"],
        capture_output=True, text=True, timeout=300,
        env={"PATH": os.environ["PATH"], "GPU_STACK_DIR": str(stack), "GPU_STACK_CHUNKS": str(tmp_path / "chunks"), **env},
    )


MIB = 1 << 20


def test_chunks_packs_the_small_wheels_into_folders_that_fit_a_call_beside_the_tree(tmp_path) -> None:
    stack = _stack(tmp_path, {
        "vllm-9.9.9-py3-none-any.whl": 5 * MIB,
        "a-1.0-py3-none-any.whl": 3 * MIB, "b-1.0-py3-none-any.whl": 2 * MIB, "c-1.0-py3-none-any.whl": 2 * MIB,
        "server/d-1.0-py3-none-any.whl": MIB, "speculators-0.9/e-1.0-py3-none-any.whl": MIB,
    })
    result = _chunks(stack, tmp_path, GPU_STACK_PART_BYTES=str(4 * MIB))
    assert result.returncode == 0, result.stderr
    folders = {p.name: sorted(f.relative_to(p).as_posix() for f in p.rglob("*.whl*")) for p in stack.iterdir() if p.name != "dl"}
    # Largest first, each into the first folder with room: 3+1 MiB, 2+2 MiB.
    assert folders["wheels-1"] == ["a-1.0-py3-none-any.whl", "server/d-1.0-py3-none-any.whl"]
    assert folders["wheels-2"] == ["b-1.0-py3-none-any.whl", "c-1.0-py3-none-any.whl"]
    assert folders["trainer-0.9"] == ["e-1.0-py3-none-any.whl"]
    assert [k for k in sorted(folders) if k.startswith("vllm-")] == ["vllm-1", "vllm-2"]
    assert "bytes to spare" in result.stdout
    listed = [line.split()[1] for line in (tmp_path / "chunks").read_text().splitlines()]
    assert "wheels-1/server/d-1.0-py3-none-any.whl" in listed and "vllm-2/vllm-9.9.9-py3-none-any.whl.1" in listed


def test_chunks_fails_where_a_chunk_and_the_tree_exceed_what_a_call_carries(tmp_path) -> None:
    # A 61 MiB part leaves less than the spare 8 MiB of 64 MiB beside a tree of a few MiB.
    stack = _stack(tmp_path, {"vllm-9.9.9-py3-none-any.whl": 61 * MIB, "a-1.0-py3-none-any.whl": MIB})
    result = _chunks(stack, tmp_path, GPU_STACK_PART_BYTES=str(62 * MIB))
    assert result.returncode == 1
    assert "does not fit one call: " in result.stderr and "/vllm-1 (" in result.stderr
    assert "/wheels-1 (" not in result.stderr  # the small chunk fits
    # The same chunk fits where a call carries more.
    assert _chunks(stack, tmp_path, GPU_STACK_PART_BYTES=str(62 * MIB), GPU_STACK_CARRY_LIMIT_BYTES=str(128 * MIB)).returncode == 0


def test_download_reads_the_lock_alone() -> None:
    # Every wheel pip fetches is named by the lock, version and sha256: requirements.in's loose pins
    # (cachetools, uvicorn) would fetch whatever is newest on the day.
    script = (BENCH / "gpu-stack.sh").read_text(encoding="utf-8")
    download = script[script.index("cmd_download() {"):script.index("cmd_update() {")]
    assert "--require-hashes" in download and "locked_requirements" in download and "REQUIREMENTS" not in download
    requirements = subprocess.run(
        ["bash", "-c", f'source <(sed -n "/^locked_requirements()/,/^}}/p" {BENCH / "gpu-stack.sh"}); LOCK={BENCH / "gpu-stack.lock"}; '
         'locked_requirements . cachetools uvicorn; locked_requirements speculators-0.3.0'],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()
    locked = dict(line.split("  ", 1)[::-1] for line in (BENCH / "gpu-stack.lock").read_text().splitlines())
    for line in requirements:
        pin, digest = line.split(" --hash=sha256:")
        name, version = pin.split("==")
        (path,) = [p for p in locked if Path(p).name.startswith(f"{name}-{version}-")]
        assert locked[path] == digest
    assert [line.split("==")[0] for line in requirements] == ["cachetools", "uvicorn", "speculators"]


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
