"""Contract: a real scan's findings feed the fix planner for every fix kind docs/fix.md lists.

No finding here is made by hand: the checks write the facts (positional names, moved-to
modules, recipe ids) and the planner must find them, so a fact one side writes and the
other never reads fails here.
"""

from __future__ import annotations

from pathlib import Path

from apiaudit.audit import rulebook_for, scan
from apiaudit.findings import FixKind
from apiaudit.fixes import plan_fixes
from apiaudit.sources import resolve

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PROVIDER = FIXTURES / "providers" / "engine_v2" / "engine"
RULES = FIXTURES / "fixes" / "rules"


def _plan(consumer: Path, tmp_path: Path, provider: Path = PROVIDER, rules: Path = RULES):
    report = scan([str(consumer)], str(provider), rules_dirs=[rules], cache_dir=tmp_path / "cache", use_index_cache=False)
    book = rulebook_for([rules], resolve(str(provider)))
    return plan_fixes(report.findings, Path(report.consumers[0].root), book)


def _kinds(plan) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for fixed in plan.fixed:
        out.setdefault(fixed.finding.rule, []).append(fixed.description)
    return out


def test_every_fix_kind_runs_from_a_real_scan(tmp_path):
    driver = _plan(FIXTURES / "consumers" / "driver" / "driver", tmp_path)
    jobs = _plan(FIXTURES / "consumers" / "jobs", tmp_path)
    protocol = _plan(FIXTURES / "consumers" / "protocol", tmp_path)
    plugin = _plan(
        FIXTURES / "consumers" / "plugin" / "plugin", tmp_path, FIXTURES / "providers" / "hostlib_v2" / "hostlib", FIXTURES / "providers"
    )
    plans = (driver, jobs, protocol, plugin)
    described = [f.description for plan in plans for f in plan.fixed]
    wanted = {
        FixKind.REMOVE_KEYWORD: "removed keyword",
        FixKind.RENAME_KEYWORD: "renamed keyword max_len to max_model_len",
        FixKind.ADD_KEYWORD: "added max_model_len=4096",
        FixKind.POSITIONAL_TO_KEYWORD: "passed the surplus positional arguments by keyword",
        FixKind.RENAME_ATTRIBUTE: "renamed attribute reset_cache to reset_prefix_cache",
        FixKind.REWRITE_IMPORT: "import get_ip from engine.net",
        FixKind.INSERT_CALL_AFTER: "called .finish(None) after .step(...)",
        FixKind.DROP_SUBSCRIPT: "used the single result: replies[0] -> replies",
        FixKind.ADD_PARAMETER: "accepted external_tokens=None (the provider passes it)",
    }
    assert set(wanted) == set(FixKind) - {FixKind.NONE}, "a fix kind docs/fix.md lists has no contract case"
    missing = {kind.value: text for kind, text in wanted.items() if not any(d.startswith(text) for d in described)}
    assert not missing, (missing, described, [u.reason for plan in plans for u in plan.unfixable])
    # The surplus positional of SamplingParams.from_dict({}, False) became the keyword-only `strict`.
    patched = next(f for f in driver.changed_files if f.path == "driver/gen.py").patched.decode()
    assert "SamplingParams.from_dict({}, strict=False)" in patched
    # The pattern findings' recipes: the inserted call, the dropped [0], the added keyword.
    (job,) = protocol.changed_files
    assert [x.recipe for x in job.fixes] == ["step-then-finish", "gather-single", "generate-no-progress"]
    text = job.patched.decode()
    assert "    llm.step(batch)  # pattern step-needs-finish: llm.finish(None) is inserted after it\n    llm.finish(None)\n" in text
    assert "first = replies  #" in text and 'llm.generate(["hi"], progress=False)' in text
    # The provider's calls into the plugin: each def accepts what the provider now passes.
    connector = next(f for f in plugin.changed_files if f.path == "plugin/connector.py").patched.decode()
    assert "def __init__(self, config, role, cache_config=None):" in connector
    assert "def update_after_alloc(self, request, blocks, external_tokens=None):" in connector
    executor = next(f for f in plugin.changed_files if f.path == "plugin/executor.py").patched.decode()
    assert "def collective_rpc(self, method, timeout=None, args=(), non_block=None):" in executor

