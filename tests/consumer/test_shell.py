"""Shell text split into simple commands and words as a shell would, nothing expanded."""

from __future__ import annotations

from apiaudit.consumer.records import UNKNOWN
from apiaudit.consumer.shell import simple_commands


def words(text: str) -> list[list[str]]:
    return [[w.text for w in command] for command in simple_commands(text)]


def test_quotes_escapes_and_continuations():
    text = """prov serve "my model" --cfg '{"a": 1, "b": "x y"}' --n=3 \\
  --path a\\ b --ansi $'tab\\there'
"""
    assert words(text) == [["prov", "serve", "my model", "--cfg", '{"a": 1, "b": "x y"}', "--n=3", "--path", "a b", "--ansi", "tab\there"]]


def test_operators_comments_and_redirections_end_or_leave_commands():
    text = "a 1; b 2 && c 3 || d | e & f # g h\n(i) > out.log 2>&1 < in &>all\nj"
    assert words(text) == [["a", "1"], ["b", "2"], ["c", "3"], ["d"], ["e"], ["f"], ["i"], ["j"]]


def test_expansions_are_known_only_at_run_time():
    text = 'prov serve "$MODEL" ${ARGS} $(cat f) `date` "a-$X-b" $1 "$@" $ plain'
    assert words(text) == [["prov", "serve", UNKNOWN, UNKNOWN, UNKNOWN, UNKNOWN, f"a-{UNKNOWN}-b", UNKNOWN, UNKNOWN, "$", "plain"]]


def test_here_documents_are_skipped():
    text = "cat <<EOF > x\nprov serve --inside\nEOF\nprov serve --after\ncat <<-'END'\n\tprov serve --tab\n\tEND\ndone\n"
    assert words(text) == [["cat"], ["prov", "serve", "--after"], ["cat"], ["done"]]


def test_word_offsets_point_at_the_text():
    text = "x=1 prov serve \\\n  --flag 'v w'\n"
    found = simple_commands(text)[0]
    assert [(w.text, text[w.offset : w.end]) for w in found] == [
        ("x=1", "x=1"), ("prov", "prov"), ("serve", "serve"), ("--flag", "--flag"), ("v w", "'v w'"),
    ]  # fmt: skip
