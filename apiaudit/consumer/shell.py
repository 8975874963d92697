"""Shell text split into simple commands and their words, as a POSIX shell would split them,
without running anything: quotes undone, what only run time knows (`$VAR`, `$(...)`,
backquotes) marked `UNKNOWN`, each word with the offset in the text where it starts.

Enough of the shell for finding command lines in job scripts and config values: words,
single/double/ANSI-C quotes, backslash escapes and line continuations, comments, the
operators that end a simple command (`;`, `&`, `&&`, `|`, `||`, newline, parentheses),
redirections (dropped with their target) and here-documents (skipped). Nothing is expanded.
"""

from __future__ import annotations


from apiaudit.consumer.records import UNKNOWN
from apiaudit.infra.frozen import record

_BLANK = " \t\r"
_ENDS_WORD = _BLANK + "\n;&|()<>"
_SPECIAL_PARAMETERS = "@*#?$!-0123456789"
_ANSI_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "e": "\x1b", "v": "\v", "f": "\f"}


@record
class Word:
    """One word of a simple command: its text with quoting undone, and where it starts."""

    text: str
    offset: int  # into the text `simple_commands` was given
    end: int  # the offset just after it


def simple_commands(text: str) -> list[list[Word]]:
    """Every simple command of `text`, in order, as its words (assignments and all)."""
    return _Lexer(text).run()


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.commands: list[list[Word]] = []
        self.current: list[Word] = []
        self.heredocs: list[tuple[str, bool]] = []  # (delimiter, strip leading tabs) pending at the next newline

    def run(self) -> list[list[Word]]:
        text = self.text
        while self.i < len(text):
            c = text[self.i]
            if c in _BLANK:
                self.i += 1
            elif c == "\\" and text.startswith("\n", self.i + 1):
                self.i += 2  # a line continuation between words
            elif c == "\n":
                self.i += 1
                self.end_command()
                self.skip_heredocs()
            elif c == "#":
                end = text.find("\n", self.i)
                self.i = len(text) if end < 0 else end
            elif c == "&" and text.startswith(">", self.i + 1):
                self.i += 1
                self.redirect()  # `&>file`: stdout and stderr to a file
            elif c in ";&|()":
                self.i += 2 if text[self.i : self.i + 2] in ("&&", "||", ";;", "|&") else 1
                self.end_command()
            elif c in "<>":
                self.redirect()
            else:
                start = self.i
                word = self.word()
                if word.isdigit() and self.i < len(text) and text[self.i] in "<>":
                    self.redirect()  # `2>&1`: the digits name a file descriptor
                    continue
                self.current.append(Word(word, start, self.i))
        self.end_command()
        return self.commands

    def end_command(self) -> None:
        if self.current:
            self.commands.append(self.current)
            self.current = []

    def redirect(self) -> None:
        """A redirection and its target word, dropped; `<<` and `<<-` queue a here-document."""
        text = self.text
        operator = ""
        while self.i < len(text) and text[self.i] in "<>&|-" and len(operator) < 3:
            operator += text[self.i]
            self.i += 1
        if operator.startswith("<<<"):
            operator = "<<<"
        while self.i < len(text) and text[self.i] in _BLANK:
            self.i += 1
        if self.i >= len(text) or text[self.i] in "\n;&|()":
            return
        target = self.word()
        if operator in ("<<", "<<-"):
            self.heredocs.append((target, operator == "<<-"))

    def skip_heredocs(self) -> None:
        """After the line holding `<<DELIM`, the here-document's lines up to DELIM are not commands."""
        text = self.text
        while self.heredocs:
            delimiter, strip_tabs = self.heredocs.pop(0)
            while self.i < len(text):
                end = text.find("\n", self.i)
                line = text[self.i : (len(text) if end < 0 else end)]
                self.i = len(text) if end < 0 else end + 1
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break

    def word(self) -> str:
        text = self.text
        out: list[str] = []
        while self.i < len(text):
            c = text[self.i]
            if c in _ENDS_WORD:
                break
            if c == "\\":
                if text.startswith("\n", self.i + 1):
                    self.i += 2
                    continue
                out.append(text[self.i + 1 : self.i + 2])
                self.i += 2
            elif c == "'":
                end = text.find("'", self.i + 1)
                end = len(text) if end < 0 else end
                out.append(text[self.i + 1 : end])
                self.i = end + 1
            elif c == '"':
                self.i += 1
                out.append(self.double_quoted())
            elif c == "$" and text.startswith("'", self.i + 1):
                self.i += 2
                out.append(self.ansi_quoted())
            else:
                out.append(self.ordinary(c))
        return "".join(out)

    def double_quoted(self) -> str:
        text = self.text
        out: list[str] = []
        while self.i < len(text):
            c = text[self.i]
            if c == '"':
                self.i += 1
                break
            if c == "\\" and self.i + 1 < len(text) and text[self.i + 1] in '$`"\\\n':
                if text[self.i + 1] != "\n":
                    out.append(text[self.i + 1])
                self.i += 2
            else:
                out.append(self.ordinary(c))
        return "".join(out)

    def ordinary(self, c: str) -> str:
        """An expansion (`UNKNOWN`), or the character `c` as it is."""
        if c == "$" or c == "`":
            return self.expansion()
        self.i += 1
        return c

    def ansi_quoted(self) -> str:
        text = self.text
        out: list[str] = []
        while self.i < len(text) and text[self.i] != "'":
            if text[self.i] == "\\" and self.i + 1 < len(text):
                out.append(_ANSI_ESCAPES.get(text[self.i + 1], "\\" + text[self.i + 1]))
                self.i += 2
            else:
                out.append(text[self.i])
                self.i += 1
        self.i += 1
        return "".join(out)

    def expansion(self) -> str:
        """`$name`, `${...}`, `$(...)`, `$((...))` or a backquoted command: known only at run time."""
        text = self.text
        if text[self.i] == "`":
            end = self.i + 1
            while end < len(text) and text[end] != "`":
                end += 2 if text[end] == "\\" else 1
            self.i = end + 1
            return UNKNOWN
        nxt = text[self.i + 1 : self.i + 2]
        if nxt == "(" or nxt == "{":
            self.i = self.closing(self.i + 1, nxt, ")" if nxt == "(" else "}")
            return UNKNOWN
        if nxt and (nxt.isalnum() or nxt == "_"):
            self.i += 1
            while self.i < len(text) and (text[self.i].isalnum() or text[self.i] == "_"):
                self.i += 1
            return UNKNOWN
        if nxt and nxt in _SPECIAL_PARAMETERS:
            self.i += 2
            return UNKNOWN
        self.i += 1
        return "$"

    def closing(self, start: int, opening: str, closing: str) -> int:
        """The offset after the bracket closing the one at `start` (quotes inside skipped)."""
        text = self.text
        depth = 0
        i = start
        while i < len(text):
            c = text[i]
            if c == "\\":
                i += 2
                continue
            if c == "'" or c == '"':
                end = text.find(c, i + 1)
                i = len(text) if end < 0 else end + 1
                continue
            if c == opening:
                depth += 1
            elif c == closing:
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        return len(text)


__all__ = ["Word", "simple_commands"]
