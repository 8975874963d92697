"""Every fix kind on fixture files: the patched text is exactly fixtures/fixes/expected/<file>,
it compiles, and fixing the fixed text again changes nothing."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest
from fix_helpers import EXPECTED, FIXTURES, locate, make_finding

from apiaudit.evidence import BindingFacts, ImportFacts, PatternFacts, RecipeFacts
from apiaudit.findings import Finding, Severity
from apiaudit.fixes import plan_fixes
from apiaudit.recipes import Recipe
from apiaudit.recipes.changes import (
    AddedParameter,
    MovedSymbol,
    RenamedAttribute,
    RenamedParameter,
)

BUILD = "provider.api.build"
MAKE = "provider.api.make"

RECIPES = (
    Recipe(id="build-renamed-num-blocks", symbol=BUILD, versions=">=2", rationale="renamed in 2.0",
           change=RenamedParameter(old="num_blocks", new="block_count")),
    Recipe(id="build-mode", symbol=BUILD, versions=">=2", rationale="required in 2.0",
           change=AddedParameter(param="mode", value="Mode.FAST", imports=("from provider.modes import Mode",))),
    Recipe(id="config-encoder", symbol="provider.api.SchedulerConfig", versions=">=2", rationale="required in 2.0",
           change=AddedParameter(param="is_encoder_decoder", value="False")),
    Recipe(id="scheduler-block-size", symbol="provider.api.Scheduler", versions=">=2", rationale="required in 2.0",
           change=AddedParameter(param="block_size", value="{in_scope:block_size}")),
    Recipe(id="cdiv-moved", symbol="provider.utils.cdiv", versions=">=2", rationale="moved in 2.0",
           change=MovedSymbol(module="provider.utils.math")),
    Recipe(id="old-name-moved", symbol="provider.old.OldName", versions=">=2", rationale="moved and renamed in 2.0",
           change=MovedSymbol(module="provider.new", new="NewName")),
    Recipe(id="embed-renamed", symbol="provider.models.Model", versions=">=2", rationale="renamed in 2.0",
           change=RenamedAttribute(old="get_input_embeddings", new="embed_input_ids")),
)  # fmt: skip


class Spec:
    """Where a finding sits: `needle` (its `occurrence`-th appearance) in the original text, and
    `after` / `after_occurrence` in the patched text when the fix changed the needle itself."""

    def __init__(self, needle, rule, occurrence=1, after=None, after_occurrence=None, **fields):
        self.needle, self.rule, self.occurrence, self.fields = needle, rule, occurrence, fields
        self.after, self.after_occurrence = after or needle, after_occurrence or occurrence

    def finding(self, path: str, text: str, patched: bool = False) -> Finding:
        needle, occurrence = (self.after, self.after_occurrence) if patched else (self.needle, self.occurrence)
        line, column = locate(text, needle, occurrence)
        base = dict(rule=self.rule, severity=Severity.ERROR, consumer="fixture", path=path, line=line, column=column,
                    callee=None, param=None, message=f"{self.rule} (built by hand)")  # fmt: skip
        return Finding(**{**base, **self.fields})


POSITIONAL = BindingFacts(positional_names=("first", "second", "third"), max_positional=1)
CASES: dict[str, list[Spec]] = {
    "remove_keyword.py": [Spec("build(", "unexpected-keyword", n, callee=BUILD, param="legacy") for n in range(1, 6)]
    + [Spec("make(", "unexpected-keyword", callee=MAKE, param="legacy")],
    "rename_keyword.py": [Spec("build(", "unexpected-keyword", n, callee=BUILD, param="num_blocks") for n in (1, 2)],
    "add_keyword.py": [Spec("build(", "missing-required", n, callee=BUILD, param="mode") for n in range(1, 6)]
    + [Spec("make(", "missing-required", callee=MAKE, param="mode", recipe=RecipeFacts("r", value='"slow"'))],
    "positional_to_keyword.py": [
        Spec("build(", "too-many-positional", n, callee=BUILD, facts=POSITIONAL) for n in (1, 2)
    ],
    "rename_attribute.py": [
        Spec("self.get_input_embeddings", "x-get-input-embeddings-renamed", after="self.embed_input_ids",
             severity=Severity.WARNING, facts=PatternFacts("x"), recipe=RecipeFacts("embed-renamed"))
    ],
    "rewrite_import.py": [
        Spec("from provider.utils import get_open_port", "import-missing", after="from provider.utils.network",
             param="get_open_port", facts=ImportFacts("provider.utils", moved_to="provider.utils.network")),
        Spec("cdiv", "import-missing", param="cdiv", facts=ImportFacts("provider.utils")),
        Spec("from provider.utils import (", "import-missing", param="round_up",
             facts=ImportFacts("provider.utils", moved_to="provider.utils.math")),
        Spec("from provider.old import", "import-missing", after="from provider.new import",
             callee="provider.old.OldName"),
    ],
    "missing_required.py": [
        Spec("SchedulerConfig(", "missing-required", callee="provider.api.SchedulerConfig", param="is_encoder_decoder"),
        Spec("Scheduler(", "missing-required", callee="provider.api.Scheduler.__init__", param="block_size"),
        Spec("make(1", "missing-required", callee=MAKE, param="timeout"),
        Spec("make(size", "missing-required", callee=MAKE, param="page_size"),
        Spec("make(2)", "missing-required", callee=MAKE, param="max_seqs"),
        Spec("make(3)", "missing-required", callee=MAKE, param="nowhere"),
        Spec("make(4", "missing-required", callee=MAKE, param="policy", recipe=RecipeFacts("r", value="'lru'")),
    ],
}  # fmt: skip


def findings_for(path: str, text: str | None = None, patched: bool = False) -> list[Finding]:
    text = (FIXTURES / path).read_text() if text is None else text
    return [spec.finding(path, text, patched) for spec in CASES[path]]


def _plan(path: str, findings: list[Finding], file: Path | None = None):
    return plan_fixes(findings, {path: file or FIXTURES / path}, RECIPES)


@pytest.mark.parametrize("path", sorted(CASES))
def test_patched_text_is_exactly_the_expected_file(path: str) -> None:
    plan = _plan(path, findings_for(path))
    (file_fix,) = plan.files
    assert file_fix.patched.decode() == (EXPECTED / path).read_text()
    compile(file_fix.patched, path, "exec")


@pytest.mark.parametrize("path", sorted(CASES))
def test_fixing_fixed_code_changes_nothing(path: str, tmp_path: Path) -> None:
    patched = tmp_path / path
    patched.write_bytes(_plan(path, findings_for(path)).files[0].patched)
    second = _plan(path, findings_for(path, patched.read_text(), patched=True), patched)
    assert [f.changed for f in second.files] in ([], [False])
    assert second.fixed == ()


def test_keyword_removal_on_the_last_line_keeps_trailing_comma_and_other_comments() -> None:
    plan = _plan("remove_keyword.py", findings_for("remove_keyword.py")[:1])
    text = plan.files[0].patched.decode()
    assert (
        "    return build(\n"
        "        first=1,  # keep this comment\n"
        "        second=2,\n"
        "        # an own-line comment before the closing paren stays\n"
        "    )\n"
    ) in text
    assert "legacy=" not in text.split("def middle_single_line")[0]
    assert "the removed argument's own comment" not in text


def test_only_the_touched_lines_change() -> None:
    original = (FIXTURES / "remove_keyword.py").read_text().splitlines()
    patched = _plan("remove_keyword.py", findings_for("remove_keyword.py")).files[0].patched.decode().splitlines()
    diff = list(difflib.ndiff(original, patched))
    removed = [line[2:] for line in diff if line.startswith("- ")]
    added = [line[2:] for line in diff if line.startswith("+ ")]
    # the removed arguments, and the lines whose comma or closing paren moved with them
    assert all("legacy" in line or line in ("        first=1,", "    return build(first=1,") for line in removed)
    assert set(added) <= {"        first=1", "    return build(first=1)", "    return build(1, third=3)", "    return make()"}


def test_missing_parameter_lists_candidates_when_several_fit() -> None:
    plan = _plan("missing_required.py", findings_for("missing_required.py"))
    unfixable = {u.finding.param: u for u in plan.unfixable}
    assert set(unfixable) == {"max_seqs", "nowhere"}
    assert sorted(c.split(" ")[0] for c in unfixable["max_seqs"].candidates) == ["DEFAULT_MAX_SEQS", "MAX_SEQS", "max_seqs"]
    assert unfixable["nowhere"].candidates == ()
    described = {f.finding.param: f.description for f in plan.fixed}
    assert "VLLM_BLOCK_SIZE (module constant)" in described["block_size"]
    assert "cache_config.page_size (attribute of a config object in scope)" in described["page_size"]
    assert "timeout (same-named variable)" in described["timeout"]


def test_a_call_that_is_not_there_is_reported_not_guessed() -> None:
    finding = make_finding("remove_keyword.py", "build(", "unexpected-keyword", callee=BUILD, param="legacy")
    moved = Finding(**{**finding.__dict__, "column": finding.column + 1})
    plan = _plan("remove_keyword.py", [moved])
    assert not plan.files[0].changed
    (item,) = plan.unfixable
    assert "no call starts at" in item.reason


def test_character_columns_after_non_ascii_text(tmp_path: Path) -> None:
    source = 'def f():\n    s = "é"; return build(a=1, legacy=2)\n'
    path = tmp_path / "accents.py"
    path.write_text(source, encoding="utf-8")
    line_text = source.splitlines()[1]
    finding = Finding("unexpected-keyword", Severity.ERROR, "c", "accents.py", 2, line_text.index("build("), BUILD, "legacy", "m")
    plan = plan_fixes([finding], tmp_path, RECIPES)
    assert plan.files[0].patched.decode() == 'def f():\n    s = "é"; return build(a=1)\n'


def test_windows_line_endings_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "crlf.py"
    path.write_bytes(b"x = build(\r\n    a=1,\r\n    legacy=2,\r\n)\r\ny = make(\r\n    a=1,\r\n)\r\n")
    findings = [
        Finding("unexpected-keyword", Severity.ERROR, "c", "crlf.py", 1, 4, BUILD, "legacy", "m"),
        Finding("missing-required", Severity.ERROR, "c", "crlf.py", 5, 4, MAKE, "mode", "m", recipe=RecipeFacts("r", value="1")),
    ]
    patched = plan_fixes(findings, tmp_path, RECIPES).files[0].patched
    assert patched == b"x = build(\r\n    a=1,\r\n)\r\ny = make(\r\n    a=1,\r\n    mode=1,\r\n)\r\n"


def test_deeply_nested_valid_code_is_unfixable_not_a_crash(tmp_path: Path) -> None:
    # A 500-term sum is valid Python that LibCST's recursive walk cannot rewrite.
    terms = " + ".join(["1"] * 500)
    (tmp_path / "deep.py").write_text(f"x = {terms}\nbuild(a=1, legacy=2)\n")
    finding = Finding("unexpected-keyword", Severity.ERROR, "c", "deep.py", 2, 0, BUILD, "legacy", "m")
    plan = plan_fixes([finding], tmp_path, RECIPES)
    assert not plan.changed_files
    (item,) = plan.unfixable
    assert "nested too deeply" in item.reason
