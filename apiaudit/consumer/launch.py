"""Provider command lines in job files: where a job starts the provider's server.

A `[[launch]]` rule says how the server is started (`prov serve`, `python -m pkg.mod`); this
module finds such command lines, with the arguments written after them, in:

- shell scripts (`.sh`, `.bash`): every simple command (`apiaudit.consumer.shell`);
- YAML and TOML configs: every string value (read as shell text) and every list of strings
  (read as an argv list);
- Python files, on the parse the consumer stage makes anyway: list and tuple displays (argv
  lists: `subprocess.run([...])`, `cmd = [...]; os.execvp(cmd[0], cmd)`) and strings passed to
  a call or assigned to a name (`os.system("...")`, `subprocess.run("...", shell=True)`).

Nothing here looks at the provider: the checks stage judges each `LaunchLine` against the
release (`apiaudit.checks.launch`). A file whose text names none of the rules' commands is not
parsed for them at all.
"""

from __future__ import annotations

import ast
import bisect
import json
import posixpath
import re
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from apiaudit.consumer.positions import char_column
from apiaudit.consumer.records import UNKNOWN, ConsumerFile, LaunchArg, LaunchLine, Site, source_of
from apiaudit.consumer.shell import simple_commands
from apiaudit.infra.astutil import dotted_text
from apiaudit.infra.tomlcompat import tomllib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from apiaudit.recipes.records import LaunchCommand

Commands = Sequence[tuple[str, "LaunchCommand"]]

_PYTHON = re.compile(r"^python(\d+(\.\d+)*)?$")
_INTERPRETER_OPTIONS_WITH_VALUE = ("-X", "-W", "-c")
_JSON_FUNCTIONS = ("json.dumps", "dumps")
_PRINTERS = frozenset({"echo", "printf"})  # a command line shown, not run
SHELL_SUFFIXES = (".sh", ".bash")
YAML_SUFFIXES = (".yaml", ".yml")


def mentions_command(text: str, commands: Commands) -> bool:
    """Whether `text` can hold one of the commands at all: the word each must contain (its
    subcommand, or the module `python -m` runs) written as a word. The one test a file without
    launch lines pays."""
    for _, cmd in commands:
        word = cmd.subcommand or cmd.module
        at = text.find(word)
        while at >= 0:
            end = at + len(word)
            if (at == 0 or not _word_char(text[at - 1])) and (end == len(text) or not _word_char(text[end])):
                return True
            at = text.find(word, end)
    return False


def _word_char(char: str) -> bool:
    return char.isalnum() or char in "_."


def match_command(args: Sequence[LaunchArg], commands: Commands) -> LaunchLine | None:
    """The first provider command in one argv-like sequence (a simple shell command, an argv
    list), with every argument after it; None when it holds none (or only prints it)."""
    if args and args[0].text in _PRINTERS:
        return None
    for i, arg in enumerate(args):
        if not arg.known:
            continue
        base = posixpath.basename(arg.text)
        for name, cmd in commands:
            start = _after_program(args, i, base, cmd)
            if start is None:
                continue
            if cmd.subcommand is not None:
                if start >= len(args) or args[start].text != cmd.subcommand:
                    continue
                start += 1
            written = " ".join(a.text for a in args[i:start])
            return LaunchLine(name, cmd.module, written, arg.site, tuple(args[start:]))
    return None


def _after_program(args: Sequence[LaunchArg], i: int, base: str, cmd: LaunchCommand) -> int | None:
    """Where the arguments after `args[i]` start when it runs `cmd` (its script, or
    ``python [options] -m module``); None when it does not."""
    if cmd.script is not None and base == cmd.script:
        return i + 1
    if not _PYTHON.match(base):
        return None
    j = i + 1
    while j < len(args) and args[j].text.startswith("-") and not args[j].text.startswith("-m"):
        j += 2 if args[j].text in _INTERPRETER_OPTIONS_WITH_VALUE else 1
    if j < len(args) and args[j].text == "-m" and j + 1 < len(args) and args[j + 1].text == cmd.module:
        return j + 2
    if j < len(args) and args[j].text == f"-m{cmd.module}":
        return j + 1
    return None


# --------------------------------------------------------------------- positions
class _Lines:
    """Offsets in a text as (line, column) sites, 1-based lines and 0-based character columns."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def site(self, offset: int, end: int | None = None) -> Site:
        line = bisect.bisect_right(self.starts, offset) - 1
        if end is None:
            return Site(line + 1, offset - self.starts[line])
        last = bisect.bisect_right(self.starts, max(end, offset)) - 1
        return Site(line + 1, offset - self.starts[line], last + 1, max(end, offset) - self.starts[last])

    def offset(self, site: Site) -> int:
        line = min(max(site.line - 1, 0), len(self.starts) - 1)
        return self.starts[line] + site.column


def _relocated(words: Iterable[tuple[str, int]], raw: str, base: int, lines: _Lines) -> list[LaunchArg]:
    """Words of a value whose text differs from its source (YAML, TOML, a Python string), placed
    where each is written: its text searched in the value's source `raw` (at `base`), in order;
    one not found there (escaped in the source) takes the place of the one before it. Each
    reaches to the end of the value (what is written inside it is searched there)."""
    out: list[LaunchArg] = []
    cursor, last = 0, base
    for text, _ in words:
        probe = text.split(UNKNOWN, 1)[0][:24]
        found = raw.find(probe, cursor) if probe else -1
        if found >= 0:
            last = base + found
            cursor = found + len(probe)
        out.append(LaunchArg(text, lines.site(last, base + len(raw))))
    return out


def _shell_lines(text: str, commands: Commands, place) -> Iterator[LaunchLine]:
    for words in simple_commands(text):
        found = match_command(place(words), commands)
        if found is not None:
            yield found


# ------------------------------------------------------------------- job files
def job_file(root: Path, path: Path, commands: Commands) -> ConsumerFile:
    """A shell script or YAML/TOML config read for its provider command lines only."""
    rel = path.relative_to(root).as_posix()
    try:
        text = source_of(path.read_bytes())
    except OSError as exc:
        return ConsumerFile(path=rel, module="", error=str(exc), error_site=Site(1, 0))
    if not commands or not mentions_command(text, commands):
        return ConsumerFile(path=rel, module="", source=text)
    if path.suffix in YAML_SUFFIXES:
        found = _yaml_lines(text, commands)
    elif path.suffix == ".toml":
        found = _toml_lines(text, commands)
    else:
        found = None
    if found is None:  # shell, or a config that does not parse: its text read as shell
        found = list(shell_text_lines(text, commands))
    return ConsumerFile(path=rel, module="", source=text, launch_lines=tuple(found))


def shell_text_lines(text: str, commands: Commands) -> Iterator[LaunchLine]:
    """The command lines of a shell script."""
    lines = _Lines(text)
    yield from _shell_lines(text, commands, lambda words: [LaunchArg(w.text, lines.site(w.offset, w.end)) for w in words])


def _value_lines(value: str, raw: str, base: int, lines: _Lines, commands: Commands) -> Iterator[LaunchLine]:
    """The command lines of one string value (shell text) whose source is `raw` at `base`."""
    if not mentions_command(value, commands):
        return
    yield from _shell_lines(value, commands, lambda words: _relocated(((w.text, w.offset) for w in words), raw, base, lines))


def _yaml_lines(text: str, commands: Commands) -> list[LaunchLine] | None:
    import yaml

    try:
        documents = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError:
        return None
    lines = _Lines(text)
    found: list[LaunchLine] = []

    def raw_of(node: Any) -> tuple[str, int]:
        return text[node.start_mark.index : node.end_mark.index], node.start_mark.index

    def visit(node: Any) -> None:
        if isinstance(node, yaml.MappingNode):
            for _, value in node.value:
                visit(value)
        elif isinstance(node, yaml.SequenceNode):
            items = node.value
            if items and all(isinstance(i, yaml.ScalarNode) for i in items):
                argv = [LaunchArg(i.value, _scalar_site(i, lines)) for i in items]
                line = match_command(argv, commands)
                if line is not None:
                    found.append(line)
                    return
            for item in items:
                visit(item)
        elif isinstance(node, yaml.ScalarNode) and node.tag.endswith(":str") and isinstance(node.value, str):
            found.extend(_value_lines(node.value, *raw_of(node), lines, commands))

    for document in documents:
        if document is not None:
            visit(document)
    return found


def _scalar_site(node: Any, lines: _Lines) -> Site:
    quoted = 1 if node.style in ("'", '"') else 0
    return lines.site(node.start_mark.index + quoted)


def _toml_lines(text: str, commands: Commands) -> list[LaunchLine] | None:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    lines = _Lines(text)
    found: list[LaunchLine] = []
    cursor = [0]

    def place(words: list[str]) -> list[LaunchArg]:
        # TOML keeps no positions: each word is found in the file's text after the last one placed,
        # within the lines the value can span.
        start = text.find(words[0], cursor[0]) if words and words[0] else -1
        if start < 0 and words and words[0]:
            start = max(text.find(words[0]), 0)
        start = max(start, 0)
        span = sum(len(w) + 3 for w in words) * 2 + 16  # escapes and quotes at most double it
        end = text.find("\n", start + span)
        return _relocated(((w, 0) for w in words), text[start : len(text) if end < 0 else end], start, lines)

    def visit(value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                visit(item)
        elif isinstance(value, list):
            if value and all(isinstance(v, str) for v in value):
                argv = place(value)
                line = match_command(argv, commands)
                if line is not None:
                    found.append(line)
                    cursor[0] = lines.offset(argv[-1].site)
                    return
            for item in value:
                visit(item)
        elif isinstance(value, str) and mentions_command(value, commands):
            for words in simple_commands(value):
                line = match_command(place([w.text for w in words]), commands)
                if line is not None:
                    found.append(line)
                    last = line.args[-1].site if line.args else line.site
                    cursor[0] = lines.offset(last)

    visit(data)
    return found


# ---------------------------------------------------------------------- Python
def python_lines(syntax: ast.Module, source: str, commands: Commands) -> tuple[LaunchLine, ...]:
    """The command lines a Python file writes as argv lists or shell strings."""
    if not commands or not mentions_command(source, commands):
        return ()
    return tuple(_PythonLaunches(source, commands).run(syntax))


# Keywords whose string is text for a person (a parser's usage line, a help text), not a command
# anything runs: `ArgumentParser(usage="prov serve --omni ...")` launches nothing.
_TEXT_KEYWORDS = frozenset({"usage", "description", "epilog", "help"})


class _PythonLaunches:
    """One walk over a module: argv list displays, and strings a call receives or a name holds."""

    def __init__(self, source: str, commands: Commands) -> None:
        self.source = source
        self.lines = _Lines(source)
        self.commands = commands
        self.found: list[LaunchLine] = []
        # Per scope (the module, then each function): name -> the displays assigned to it, by line.
        self.scopes: list[dict[str, list[tuple[int, ast.expr]]]] = []

    def run(self, syntax: ast.Module) -> list[LaunchLine]:
        self.scope(syntax)
        return self.found

    def scope(self, node: ast.AST) -> None:
        assigned: dict[str, list[tuple[int, ast.expr]]] = {}
        for child in _own_nodes(node):
            if isinstance(child, ast.Assign) and len(child.targets) == 1 and isinstance(child.targets[0], ast.Name):
                assigned.setdefault(child.targets[0].id, []).append((child.lineno, child.value))
        self.scopes.append(assigned)
        for child in _own_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                self.scope(child)
            elif isinstance(child, (ast.List, ast.Tuple)):
                self.display(child)
            elif isinstance(child, ast.Call):
                for value in [*child.args, *(k.value for k in child.keywords if k.arg not in _TEXT_KEYWORDS)]:
                    self.string(value)
            elif isinstance(child, (ast.Assign, ast.AnnAssign)) and child.value is not None:
                self.string(child.value)
        self.scopes.pop()

    def display(self, node: ast.List | ast.Tuple) -> None:
        if len(node.elts) < 2:
            return
        argv = [self.argument(e) for e in node.elts]
        line = match_command(argv, self.commands)
        if line is not None:
            self.found.append(line)
            return
        for element in node.elts:
            self.string(element)  # ["bash", "-c", "prov serve ..."]

    def string(self, node: ast.expr) -> None:
        text = _string_value(node)
        if text is None or not mentions_command(text, self.commands):
            return
        first = next((line for line in text.splitlines() if line.strip()), "")
        if not any(_shell_lines(first, self.commands, lambda words: [LaunchArg(w.text, Site(1, w.offset)) for w in words])):
            return  # prose that quotes a command (a help text's example), not a command the code runs
        site = self.site(node)
        start = self.lines.offset(site)
        end = self.lines.offset(Site(site.end_line or site.line, site.end_column or site.column))
        self.found.extend(_value_lines(text, self.source[start:end], start, self.lines, self.commands))

    def site(self, node: ast.expr) -> Site:
        """Where `node` is written, in characters (`ast` counts columns in UTF-8 bytes)."""
        end_line = node.end_lineno or node.lineno
        return Site(
            node.lineno, self.column(node.lineno, node.col_offset), end_line, self.column(end_line, node.end_col_offset or 0)
        )

    def column(self, line: int, byte_offset: int) -> int:
        start = self.lines.starts[line - 1] if 0 < line <= len(self.lines.starts) else 0
        end = self.source.find("\n", start)
        return char_column(self.source[start : len(self.source) if end < 0 else end], byte_offset)

    def argument(self, node: ast.expr) -> LaunchArg:
        site = self.site(node)
        if isinstance(node, ast.Attribute) and dotted_text(node) == "sys.executable":
            return LaunchArg("python", site)
        text = _string_value(node)
        if text is not None:
            return LaunchArg(text, site)
        if isinstance(node, ast.Call) and dotted_text(node.func) in _JSON_FUNCTIONS and len(node.args) == 1:
            display = self.display_of(node.args[0], node.lineno)
            value = self.value(display, node.lineno, 0) if display is not None else UNKNOWN
            if display is not None and value is not UNKNOWN:
                try:
                    # Sited where its keys are written: the display (maybe assigned above).
                    return LaunchArg(json.dumps(value), self.site(display))
                except (TypeError, ValueError):
                    pass
        return LaunchArg(UNKNOWN, site)

    def display_of(self, node: ast.expr, line: int) -> ast.expr | None:
        """The dict/list display `node` is, or the one a name holds (assigned earlier in the scope)."""
        if isinstance(node, ast.Name):
            bound = self.bound(node.id, line)
            return bound if isinstance(bound, (ast.Dict, ast.List, ast.Tuple)) else None
        return node if isinstance(node, (ast.Dict, ast.List, ast.Tuple)) else None

    def value(self, node: ast.expr, line: int, depth: int) -> Any:
        """A display's value, with `UNKNOWN` where only run time knows (a name bound to a
        display earlier in the scope is followed)."""
        if depth > 8:
            return UNKNOWN
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            operand = node.operand.value
            return -operand if isinstance(operand, (int, float)) and not isinstance(operand, bool) else UNKNOWN
        if isinstance(node, ast.Dict):
            out: dict[str, Any] = {}
            for key, item in zip(node.keys, node.values):
                if key is None:  # **other: keys not known here, the ones written still are
                    continue
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                    return UNKNOWN
                out[key.value] = self.value(item, line, depth + 1)
            return out
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.value(e, line, depth + 1) for e in node.elts]
        if isinstance(node, ast.Name):
            bound = self.bound(node.id, line)
            return self.value(bound, line, depth + 1) if bound is not None else UNKNOWN
        return UNKNOWN

    def bound(self, name: str, line: int) -> ast.expr | None:
        """The display last assigned to `name` before `line`, in the innermost scope assigning it."""
        for assigned in reversed(self.scopes):
            if name in assigned:
                before = [value for at, value in assigned[name] if at < line]
                return before[-1] if before else None
        return None


def _own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes inside `node` that belong to its scope (a nested function's body does not)."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop(0)
        yield child
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack[0:0] = list(ast.iter_child_nodes(child))
        elif isinstance(child, ast.ClassDef):
            stack[0:0] = list(child.body)


def _string_value(node: ast.expr) -> str | None:
    """A string literal's text, or an f-string's with `UNKNOWN` for each `{...}`; None otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for part in node.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                parts.append(part.value)
            else:
                parts.append(UNKNOWN)
        return "".join(parts)
    return None


__all__ = ["job_file", "match_command", "mentions_command", "python_lines", "shell_text_lines"]
