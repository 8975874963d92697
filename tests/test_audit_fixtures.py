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

from apiaudit.report.json_format import finding_details

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
        if entry["rule"] == "import-missing" and text.rstrip().endswith("("):
            # a parenthesized multi-line import: Python names its first line, the names follow
            end = next(i for i in range(entry["line"] - 1, len(source)) if ")" in source[i])
            text = " ".join(source[entry["line"] - 1 : end + 1])
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
    told = " ".join([moved[0].message, moved[0].advice or "", *map(str, finding_details(moved[0]).values())])
    assert "engine.net" in told, told


def test_findings_carry_the_consumer_relative_path_and_a_message() -> None:
    for consumer in CONSUMER_TARGETS:
        for f in _scan(consumer, "v2").findings:
            assert (CONSUMER_ROOTS[consumer] / f.path).is_file(), f
            assert f.message.strip(), f


# ---------------------------------------------------------------------------------------------
# Compatibility code read as it runs (issue 8): provider `shim` 0.8.0 / 0.10.0 / 0.11.0 and the
# consumer `compat` (fixtures/consumers/compat), which carries version guards of each form,
# guard helpers and module constants, a string comparison, try/except import chains, feature
# guards, dict splats, provider **kwargs forwarding, string injection and an open __getattr__.
# Every release has its own exact expectation (fixtures/expected/compat-v*.json).
SHIM_VERSIONS = {"v1": "0.8.0", "v2": "0.10.0", "v3": "0.11.0"}
COMPAT_ROOT = FIXTURES / "consumers" / "compat"
COMPAT_KEYS = (*KEYS, "conditional")


@functools.lru_cache(maxsize=None)
def _scan_compat(version: str, provider_version: str | None = None):
    from apiaudit.audit import scan

    return scan(
        consumers=[str(COMPAT_ROOT / "compat")],
        provider=str(PROVIDERS / f"shim_{version}" / "shim"),
        rules_dirs=[PROVIDERS],
        use_index_cache=False,
        provider_version=provider_version,
    )


def _compat_expected(version: str) -> list[dict]:
    return json.loads((FIXTURES / "expected" / f"compat-{version}.json").read_text())


@pytest.mark.parametrize("version", sorted(SHIM_VERSIONS))
def test_compat_findings_are_exactly_the_expected_ones_on_each_release(version: str) -> None:
    report = _scan_compat(version)
    assert report.provider.version == SHIM_VERSIONS[version]  # read from shim/__init__.py's literal
    expected = {tuple(e[k] for k in COMPAT_KEYS) for e in _compat_expected(version)}
    got = {_finding_key(f) + (f.conditional,) for f in report.findings}
    assert got == expected, _diff(expected, got)


@pytest.mark.parametrize("version", sorted(SHIM_VERSIONS))
def test_compat_expected_entries_are_explained_and_point_at_their_lines(version: str) -> None:
    for entry in _compat_expected(version):
        assert set(entry) == {*COMPAT_KEYS, "why"} and entry["why"].strip(), entry
        line = (COMPAT_ROOT / entry["path"]).read_text().splitlines()[entry["line"] - 1]
        # Each reported line carries a comment naming the releases it breaks on.
        assert version in line or entry["rule"] == "cannot-judge", (entry, line)


def test_conditional_findings_name_their_guard_and_do_not_fail_the_run_unless_strict() -> None:
    report = _scan_compat("v2")
    conditional = [f for f in report.findings if f.conditional]
    assert conditional and all(f.guard for f in conditional)
    assert all(not f.conditional for f in report.blocking())
    assert set(conditional) <= set(report.blocking(strict=True))


def test_a_stated_provider_version_decides_the_guards() -> None:
    # shim_v1's code, declared 0.10.0: the version guards now take the 0.10 branches, whose calls
    # do not bind on v1's API (progress= is unknown there).
    report = _scan_compat("v1", provider_version="0.10.0")
    assert report.provider.version == "0.10.0"
    got = {(f.path, f.line, f.rule, f.param) for f in report.findings if f.rule == "unexpected-keyword"}
    assert ("compat/guards.py", 17, "unexpected-keyword", "progress") in got
    assert ("compat/guards.py", 19, "unexpected-keyword", "use_tqdm") not in got


def test_fix_skips_conditional_findings_and_splatted_keywords_and_says_why() -> None:
    from apiaudit.fixes.plan import plan_fixes

    report = _scan_compat("v2")
    plan = plan_fixes(report.findings, COMPAT_ROOT)
    reasons = {(u.finding.path, u.finding.line, u.finding.param): u.reason for u in plan.unfixable}
    assert reasons[("compat/features.py", 58, None)].startswith("conditional: runs only if hasattr(layer, 'fused')")
    assert "**dict splat" in reasons[("compat/values.py", 11, "swap_space")]
    # Dead branches emit nothing, so nothing in them is ever edited.
    assert not any(f.finding.path == "compat/guards.py" and f.finding.line == 19 for f in plan.fixed)
    assert all(not fix.finding.conditional for fix in plan.fixed)


# ---------------------------------------------------------------------------------------------
# A run-time failure signatures cannot show (fixtures/runtime/prefix_cache_default): a dataclass
# field's default changed and the call relying on it still binds. A call-without-keyword pattern
# in the fixture's own rules finds it; its added-parameter recipe fixes it.
PREFIX_CACHE = FIXTURES / "runtime" / "prefix_cache_default"


@functools.lru_cache(maxsize=None)
def _scan_prefix_cache(version: str):
    from apiaudit.audit import scan

    return scan(
        consumers=[str(PREFIX_CACHE / "consumers" / "prefill" / "prefill")],
        provider=str(PREFIX_CACHE / "providers" / f"kvcache_{version}" / "kvcache"),
        rules_dirs=[PREFIX_CACHE / "rules"],
        use_index_cache=False,
        provider_version={"v1": "1.0", "v2": "2.0"}[version],
    )


def test_prefix_cache_default_v1_is_clean() -> None:
    assert not [f for f in _scan_prefix_cache("v1").findings if f.severity.value in BLOCKING]


def test_prefix_cache_default_v2_gives_exactly_the_expected_finding() -> None:
    expected = json.loads((PREFIX_CACHE / "expected-v2.json").read_text())
    want = {tuple(entry[k] for k in KEYS) for entry in expected["findings"]}
    got = set(map(_finding_key, _scan_prefix_cache("v2").findings))
    assert got == want, _diff(want, got)
    assert {tuple(entry[k] for k in KEYS) for entry in expected["reported_by_scan_today"]} == want


def test_a_pattern_finding_shows_the_callee_that_exists_not_a_not_found_line() -> None:
    """The callee of a call-without-keyword finding exists (its changed default is the point): the
    finding names its signature and file:line, and the table never says "(not found)" of it."""
    from apiaudit.report import render

    report = _scan_prefix_cache("v2")
    [finding] = [f for f in report.findings if f.rule == "relies-on-changed-default"]
    assert finding.provider_location == "kvcache/config.py:4"  # where its decorator starts, as for every class
    assert finding.signature is not None and finding.signature.startswith("CacheConfig(") and "enable_prefix_caching" in finding.signature
    table = render(report, "table", width=200)
    assert "(not found)" not in table and "(kvcache/config.py:4)" in table


def test_prefix_cache_default_fix_passes_the_keyword_once() -> None:
    from apiaudit.fixes.plan import plan_fixes
    from apiaudit.recipes.loader import load_rulebook

    report = _scan_prefix_cache("v2")
    book = load_rulebook([PREFIX_CACHE / "rules"], "kvcache", include_bundled=False).applicable("2.0")
    root = PREFIX_CACHE / "consumers" / "prefill"
    plan = plan_fixes(report.findings, root, book)
    assert not plan.unfixable, plan.unfixable
    (fixed,) = plan.changed_files
    text = fixed.patched.decode()
    assert "CacheConfig(block_size=16, gpu_memory_utilization=0.5, enable_prefix_caching=False)" in text
    assert text.count("enable_prefix_caching=") == 1
