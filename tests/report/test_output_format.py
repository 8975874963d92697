"""Which format a command writes (`report.format_for_output`): issue 36, items 3 and 5."""

from __future__ import annotations

from pathlib import Path

import pytest

from apiaudit.errors import InputError
from apiaudit.matrix.render import MATRIX_FORMATS
from apiaudit.report import format_for_output


def test_the_table_unless_json_is_asked_for():
    assert format_for_output(None, None) == "table"
    assert format_for_output("json", None) == "json"


@pytest.mark.parametrize(("name", "fmt"), [("r.json", "json"), ("r.SARIF", "sarif"), ("r.txt", "table"), ("r.md", "markdown"),
                                           ("r.xml", "junit"), ("r.log", "table")])  # fmt: skip
def test_the_suffix_names_the_format(name, fmt):
    assert format_for_output(None, Path(name)) == fmt


def test_a_name_without_a_suffix_is_the_default_format():
    # -o /dev/stdout, -o >(gzip > r.gz): the table, as on stdout; the gate's report file is JSON.
    assert format_for_output(None, Path("/dev/stdout")) == "table"
    assert format_for_output(None, Path("/dev/fd/63"), unnamed="json") == "json"


def test_an_unknown_suffix_is_refused_naming_the_known_ones():
    with pytest.raises(InputError) as refused:
        format_for_output(None, Path("r.sarf"))
    message = str(refused.value)
    assert "-o r.sarf: .sarf is no report format's suffix" in message
    assert ".json (json), .sarif (sarif), .txt (table), .md (markdown), .log (table), .xml (junit)" in message


def test_known_suffixes_are_those_the_command_writes():
    with pytest.raises(InputError, match=r"known: \.json \(json\), \.txt \(table\), \.md \(table\), \.log \(table\)\)"):
        format_for_output(None, Path("m.jsn"), formats=MATRIX_FORMATS)
    with pytest.raises(InputError, match="which this command does not write"):
        format_for_output(None, Path("m.sarif"), formats=MATRIX_FORMATS)
