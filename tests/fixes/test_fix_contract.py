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
RULES = """\
[provider]
name = "engine"

[[recipe]]
id = "llm-max-len-renamed"
symbol = "engine.entry.LLM"
versions = ""
change = "renamed-parameter"
old = "max_len"
new = "max_model_len"
rationale = "renamed in v2"

[[recipe]]
id = "llm-reset-cache-renamed"
symbol = "engine.entry.LLM"
versions = ""
change = "renamed-attribute"
old = "reset_cache"
new = "reset_prefix_cache"
rationale = "renamed in v2"

[[recipe]]
id = "sched-config-max-model-len"
symbol = "engine.config.scheduler.SchedConfig"
versions = ""
change = "added-parameter"
param = "max_model_len"
value = "4096"
rationale = "required in v2"
"""


def _plan(consumer: Path, tmp_path: Path):
    rules = tmp_path / "rules"
    rules.mkdir(exist_ok=True)
    (rules / "engine.toml").write_text(RULES)
    report = scan([str(consumer)], str(PROVIDER), rules_dirs=[rules], cache_dir=tmp_path / "cache", use_index_cache=False)
    book = rulebook_for([rules], resolve(str(PROVIDER)))
    return plan_fixes(report.findings, Path(report.consumers[0].root), book)


def _kinds(plan) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for fixed in plan.fixed:
        out.setdefault(fixed.finding.rule, []).append(fixed.description)
    return out


def test_every_fix_kind_runs_from_a_real_scan(tmp_path):
    driver = _plan(FIXTURES / "consumers" / "driver" / "driver", tmp_path)
    jobs = _plan(FIXTURES / "consumers" / "jobs", tmp_path)
    described = [f.description for f in driver.fixed + jobs.fixed]
    wanted = {
        FixKind.REMOVE_KEYWORD: "removed keyword",
        FixKind.RENAME_KEYWORD: "renamed keyword max_len to max_model_len",
        FixKind.ADD_KEYWORD: "added max_model_len=4096",
        FixKind.POSITIONAL_TO_KEYWORD: "passed the surplus positional arguments by keyword",
        FixKind.RENAME_ATTRIBUTE: "renamed attribute reset_cache to reset_prefix_cache",
        FixKind.REWRITE_IMPORT: "import get_ip from engine.net",
    }
    missing = {kind.value: text for kind, text in wanted.items() if not any(d.startswith(text) for d in described)}
    assert not missing, (missing, described, [u.reason for u in driver.unfixable + jobs.unfixable])
    # The surplus positional of SamplingParams.from_dict({}, False) became the keyword-only `strict`.
    patched = next(f for f in driver.changed_files if f.path == "driver/gen.py").patched.decode()
    assert "SamplingParams.from_dict({}, strict=False)" in patched
