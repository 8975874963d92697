from __future__ import annotations

import json
import re
from dataclasses import replace

from apiaudit.findings import Severity
from apiaudit.report import render

WIDE = 220
LONG_SOURCE = (
    "engine = LLMEngine.from_engine_args(EngineArgs(model=model_path, tensor_parallel_size=tp, "
    "speculative_config=spec_cfg, some_extremely_long_keyword_argument_name_without_any_spaces_at_all=value))"
)


def _squash(text: str) -> str:
    return "".join(text.split())


def test_header_names_consumers_and_provider_with_versions(report):
    first_line = render(report, "table", width=WIDE).splitlines()[0]
    assert "speculators 0.3.0" in first_line and "vllm 0.10.1" in first_line
    assert "jobs" in first_line


def test_findings_are_grouped_under_one_heading_per_file(report):
    out = render(report, "table", width=WIDE, show_unresolved=True)
    lines = out.splitlines()
    expected_files = sorted({(f.consumer, f.path) for f in report.findings})
    headings = [i for i, line in enumerate(lines) if any(line == f"{c}: {p}" for c, p in expected_files)]
    assert len(headings) == len(expected_files)  # each file heads exactly one group
    for f in report.findings:
        heading = lines.index(f"{f.consumer}: {f.path}")
        following = [h for h in headings if h > heading]
        section = "\n".join(lines[heading: following[0] if following else len(lines)])
        assert f.message in section, f"{f.message!r} is not under the heading of {f.path}"
        assert re.search(rf"\b{f.line}:{f.column + 1}\b", section)


def test_single_consumer_headings_are_bare_paths(report):
    speculators_only = replace(
        report,
        consumers=report.consumers[:1],
        findings=tuple(f for f in report.findings if f.consumer == "speculators"),
    )
    lines = render(speculators_only, "table", width=WIDE).splitlines()
    assert "speculators/convert/eagle.py" in lines
    assert "speculators/data_generation/generator.py" in lines


def test_rows_show_source_signature_location_and_advice(report):
    out = render(report, "table", width=WIDE)
    keyword = next(f for f in report.findings if f.param == "disable_log_requests")
    assert keyword.source in out
    assert keyword.signature in out and "vllm/engine/arg_utils.py:301" in out
    assert keyword.advice in out
    assert "unexpected-keyword" in out and "error" in out


def test_cannot_judge_hidden_by_default_but_counted(report):
    hidden = render(report, "table", width=WIDE)
    unresolved = [f for f in report.findings if f.rule == "cannot-judge"]
    for f in unresolved:
        assert f.message not in hidden
    summary = hidden.strip().splitlines()[-1]
    assert "2 errors, 2 warnings, 2 cannot judge (--show-unresolved to list) in 41 files, 0.42 s" == summary

    shown = render(report, "table", width=WIDE, show_unresolved=True)
    for f in unresolved:
        assert f.message in shown
    assert "2 cannot judge in 41 files" in shown.strip().splitlines()[-1]


def test_empty_report_says_so_and_still_summarises(make_report):
    out = render(make_report(findings=(), files_scanned=1, duration_s=0.0), "table", width=WIDE)
    assert "No findings." in out
    assert out.strip().splitlines()[-1] == "0 errors, 0 warnings, 0 cannot judge in 1 file, 0.00 s"


def test_only_unresolved_findings_is_not_called_clean(make_report, make_finding):
    report = make_report(findings=(make_finding(rule="cannot-judge", severity=Severity.INFO, message="unbound"),))
    out = render(report, "table", width=WIDE)
    assert "No findings." not in out and "unbound" not in out
    assert "1 cannot judge (--show-unresolved to list)" in out


def test_long_lines_wrap_within_the_width(make_report, make_finding):
    finding = make_finding(source=LONG_SOURCE, signature="EngineArgs(" + ", ".join(f"p{i}: int = {i}" for i in range(40)) + ")")
    report = make_report(findings=(finding,))
    for width in (60, 100):
        out = render(report, "table", width=width, verbose=True)  # the whole signature, as --verbose shows it
        assert max(len(line) for line in out.splitlines()) <= width
        assert _squash(LONG_SOURCE) in _squash(out)  # folded, never cut off
        assert _squash(finding.signature) in _squash(out)


def test_plain_output_has_no_escape_codes_and_color_adds_them(report):
    assert "\x1b[" not in render(report, "table")
    assert "\x1b[" in render(report, "table", color=True)


def test_markup_like_text_is_printed_literally(make_report, make_finding):
    finding = make_finding(source="x = cfg[bold]['a'][/bold]", message="[red]not markup[/red]")
    out = render(make_report(findings=(finding,)), "table", width=WIDE)
    assert "cfg[bold]['a'][/bold]" in out and "[red]not markup[/red]" in out


def test_a_word_longer_than_the_line_breaks_after_a_dot_or_slash():
    from apiaudit.report.table import dotted_breaks

    def lines(text: str, width: int) -> list[str]:
        cuts = [0, *dotted_breaks(text, width), len(text)]
        return [text[a:b].rstrip() for a, b in zip(cuts, cuts[1:])]

    name = "vllm.model_executor.models.llama_eagle.LlamaModel.start_layer (not found)"
    assert lines(name, 40) == ["vllm.model_executor.models.llama_eagle.", "LlamaModel.start_layer (not found)"]
    assert lines("see vllm/model_executor/models/afmoe.py:379 here", 30) == ["see vllm/model_executor/", "models/afmoe.py:379 here"]
    assert lines("short words wrap at spaces as ever", 12) == ["short words", "wrap at", "spaces as", "ever"]
    # A part with no dot longer than the line is still folded, never lost.
    assert "".join(lines("a.abcdefghijklmnopqrstuvwxyz", 10)) == "a.abcdefghijklmnopqrstuvwxyz"
    assert all(len(line) <= 10 for line in lines("a.abcdefghijklmnopqrstuvwxyz", 10))


def test_not_found_is_said_only_of_what_the_rule_says_is_missing(report):
    """A callee with no location is not proof that it is missing: only the rules of a missing
    module, name, attribute or worker method say "(not found)"."""
    from apiaudit.findings import MISSING_CALLEE_RULES

    base = replace(report.findings[0], callee="prov.mod.Thing", provider_location=None, signature=None, source=None)
    for rule, missing in (("attribute-missing", True), ("import-missing", True), ("deprecated-use", False),
                          ("cannot-judge", False), ("vllm-cache-config-prefix-caching-default", False)):  # fmt: skip
        assert (rule in MISSING_CALLEE_RULES) is missing
        one = replace(report, findings=(replace(base, rule=rule),))
        table = render(one, "table", width=WIDE, show_unresolved=True)
        assert ("prov.mod.Thing (not found)" in table) is missing, (rule, table)
        assert "prov.mod.Thing" in table


def test_summary_counts_what_the_table_lists_and_names_the_unreachable_beside(report):
    # Issue 36, item 4: a table listing 4 errors said "168 errors" (the modules nothing imports counted in).
    errors = [f for f in report.findings if f.severity is Severity.ERROR and f.rule != "cannot-judge"]
    dead = tuple(replace(f, path=f"{f.consumer}/unused_{i}.py", unreachable=True, conditional=True) for i, f in enumerate(errors * 2))
    report = replace(report, findings=report.findings + dead)
    listed = len(errors)
    summary = render(report, "table", width=WIDE).splitlines()[-1]
    assert summary.startswith(f"{listed} errors ({len(dead)} more in modules imported by nothing: --show-unreachable), ")
    every = render(report, "table", width=WIDE, show_unreachable=True).splitlines()[-1]
    assert every.startswith(f"{listed + len(dead)} errors, ")
    markdown = render(report, "markdown")
    assert f"{listed} errors ({len(dead)} more in modules imported by nothing: --show-unreachable), " in markdown


def test_a_long_signature_shows_the_parameter_in_question_and_its_neighbours(make_report, make_finding):
    # Issue 36, item 13: one EngineArgs(...) of ~100 parameters filled ~100 wrapped lines.
    names = [f"option_number_{i}" for i in range(100)]
    signature = "EngineArgs(" + ", ".join(f"{n}: dict[str, int] | None = None" for n in names) + ")"
    finding = make_finding(param="option_number_50", rule="missing-required", signature=signature,
                           provider_location="vllm/engine/arg_utils.py:301")  # fmt: skip
    report = make_report(findings=(finding,))
    short = render(report, "table", width=120)
    cell = _squash(short)
    assert _squash("EngineArgs(..., option_number_49: dict[str, int] | None = None, option_number_50: dict[str, int] | None = None, "
                   "option_number_51: dict[str, int] | None = None, ...)  (vllm/engine/arg_utils.py:301)") in cell  # fmt: skip
    assert "option_number_52" not in short and len(short.splitlines()) < 20
    whole = render(report, "table", width=120, verbose=True)
    assert all(n in whole for n in names) and len(whole.splitlines()) > 60
    assert json.loads(render(report, "json"))["findings"][0]["signature"] == signature


def test_a_short_signature_is_shown_whole(report):
    out = _squash(render(report, "table", width=WIDE))
    assert all(_squash(f.signature) in out for f in report.findings if f.signature and f.rule != "cannot-judge")
