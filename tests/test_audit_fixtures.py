"""scan() against the fixture provider `engine` (v1 -> v2 drift) and its two consumers.

The consumers were written against v1, so scanning them against v1 must find nothing
blocking; against v2 they must give exactly the findings in fixtures/expected/*.json
(each entry says why in its "why" key). fixtures/README.md lists the shapes exercised.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PROVIDERS = FIXTURES / "providers"
# What is handed to scan(): a package directory, or a folder of loose scripts.
CONSUMER_TARGETS = {
    "driver": FIXTURES / "consumers" / "driver" / "driver",
    "jobs": FIXTURES / "consumers" / "jobs",
}
# Finding paths are relative to these roots (the directory that would be on sys.path).
CONSUMER_ROOTS = {
    "driver": FIXTURES / "consumers" / "driver",
    "jobs": FIXTURES / "consumers" / "jobs",
}
KEYS = ("rule", "severity", "path", "line", "callee", "param")
BLOCKING = {"error", "warning"}


@functools.lru_cache(maxsize=None)
def _scan(consumer: str, version: str):
    from apiaudit.audit import scan

    return scan(
        consumers=[str(CONSUMER_TARGETS[consumer])],
        provider=str(PROVIDERS / f"engine_{version}" / "engine"),
        rules_dirs=[PROVIDERS],
        use_index_cache=False,  # the fixtures are tiny; never read a stale index
    )


def _finding_key(finding) -> tuple:
    severity = getattr(finding.severity, "value", finding.severity)
    return (finding.rule, severity, finding.path, finding.line, finding.callee, finding.param)


def _expected(consumer: str) -> list[dict]:
    return json.loads((FIXTURES / "expected" / f"{consumer}-v2.json").read_text())


def _expected_keys(consumer: str, blocking: bool) -> set[tuple]:
    return {
        tuple(entry[k] for k in KEYS)
        for entry in _expected(consumer)
        if (entry["severity"] in BLOCKING) == blocking
    }


def _got_keys(consumer: str, version: str, blocking: bool) -> set[tuple]:
    return {k for k in map(_finding_key, _scan(consumer, version).findings) if (k[1] in BLOCKING) == blocking}


def _diff(expected: set[tuple], got: set[tuple]) -> str:
    lines = ["missing (expected, not reported):"]
    lines += [f"  {k}" for k in sorted(expected - got, key=str)] or ["  -"]
    lines.append("unexpected (reported, not expected):")
    lines += [f"  {k}" for k in sorted(got - expected, key=str)] or ["  -"]
    return "\n".join(lines)


@pytest.mark.parametrize("consumer", sorted(CONSUMER_TARGETS))
def test_expected_entries_point_at_real_calls(consumer: str) -> None:
    # Guards the evidence itself: every expected entry names a line that holds its callee.
    seen: set[tuple] = set()
    for entry in _expected(consumer):
        assert set(entry) == {*KEYS, "why"} and entry["why"].strip(), entry
        key = tuple(entry[k] for k in KEYS)
        assert key not in seen, f"duplicate expected entry {key}"
        seen.add(key)
        assert (entry["rule"] == "cannot-judge") == (entry["severity"] == "info"), entry
        file_text = (CONSUMER_ROOTS[consumer] / entry["path"]).read_text()
        source = file_text.splitlines()
        assert 1 <= entry["line"] <= len(source), entry
        text = source[entry["line"] - 1]
        # The line names the callee itself, or a local alias of it (`import X as Y`).
        names = {m.group(1) for m in re.finditer(r"\b(\w+) as (\w+)\b", file_text) if m.group(2) in text}
        if "getattr(" not in text:  # a dynamic callee names only its object
            assert entry["callee"].rsplit(".", 1)[-1] in names | {w for w in re.findall(r"\w+", text)}, (entry, text)
        if entry["param"] and entry["rule"] != "missing-required":
            assert f"{entry['param']}=" in text, (entry, text)


@pytest.mark.parametrize("consumer", sorted(CONSUMER_TARGETS))
def test_consumer_is_clean_against_the_version_it_was_written_for(consumer: str) -> None:
    blocking = _got_keys(consumer, "v1", blocking=True)
    assert not blocking, _diff(set(), blocking)


@pytest.mark.parametrize("consumer", sorted(CONSUMER_TARGETS))
def test_v2_errors_and_warnings_are_exactly_the_expected_ones(consumer: str) -> None:
    expected = _expected_keys(consumer, blocking=True)
    got = _got_keys(consumer, "v2", blocking=True)
    assert got == expected, _diff(expected, got)


@pytest.mark.parametrize("consumer", sorted(CONSUMER_TARGETS))
def test_v2_cannot_judge_findings_are_exactly_the_expected_ones(consumer: str) -> None:
    expected = _expected_keys(consumer, blocking=False)
    got = _got_keys(consumer, "v2", blocking=False)
    assert got == expected, _diff(expected, got)


def test_moved_symbol_says_where_it_went() -> None:
    moved = [
        f
        for f in _scan("jobs", "v2").findings
        if f.rule == "import-missing" and f.callee == "engine.utils.get_ip"
    ]
    assert len(moved) == 1, moved
    told = " ".join([moved[0].message, moved[0].advice or "", *(v for _, v in moved[0].details)])
    assert "engine.net" in told, told


def test_findings_carry_the_consumer_relative_path_and_a_message() -> None:
    for consumer in CONSUMER_TARGETS:
        for f in _scan(consumer, "v2").findings:
            assert (CONSUMER_ROOTS[consumer] / f.path).is_file(), f
            assert f.message.strip(), f
