"""The launch audit: a provider command line (`LaunchLine`, found by the consumer stage in a job
script) judged against the release it will start, before anything starts.

- `launch-flag-unknown`: a `--flag` the release's parser does not define (its `--no-` forms,
  short options, unique abbreviations and the rule's spellings accepted);
- `launch-config-key-unknown`: a key of a JSON-valued flag (or of a config nested in it) that is
  not a field of the config class the release builds from it;
- `launch-config-value-unknown`: a value outside the `Literal[...]` its field allows, or a name
  the release does not register (a `[[launch_registry]]` rule);
- `launch-entry-unknown`: a `python -m` module (or a script's entry module) the release lacks.

Each is an error only when the release's own definitions were read whole; where they were not
(a parser handed to code the index cannot read, a config class whose fields cannot be read, a
value computed at run time) the line is `cannot-judge`, saying why. Plugins a line names (a
connector class, registered or out of tree) are handed on as `PluginUse`s: the plugin-contract
checks take them from there.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from apiaudit.checks.context import source_text
from apiaudit.consumer.records import UNKNOWN, ConsumerFile, LaunchArg, LaunchLine, Site
from apiaudit.evidence import LaunchFacts
from apiaudit.findings import ENGINE_RULES, Finding, Severity
from apiaudit.infra.frozen import record
from apiaudit.provider.cli import CliSpec, FlagSpec, config_shape, json_text, read_cli, registered_names
from apiaudit.recipes.records import LaunchRegistryRule, LaunchRule

TYPE_CHECKING = False
if TYPE_CHECKING:
    from apiaudit.provider.index import ProviderIndex

FLAG_UNKNOWN = "launch-flag-unknown"
KEY_UNKNOWN = "launch-config-key-unknown"
VALUE_UNKNOWN = "launch-config-value-unknown"
ENTRY_UNKNOWN = "launch-entry-unknown"
RULES = frozenset({FLAG_UNKNOWN, KEY_UNKNOWN, VALUE_UNKNOWN, ENTRY_UNKNOWN})
CANNOT_JUDGE = "cannot-judge"

_NUMBER = re.compile(r"^-\d+(\.\d+)?([eE][-+]?\d+)?$")


class LaunchTarget:
    """The release launch lines start, and what its rules say its command line is. Its index is
    opened on the first line checked (`index`): a scan whose files hold none reads nothing of it."""

    def __init__(
        self,
        name: str,
        version: str | None,
        launches: tuple[LaunchRule, ...],
        registries: tuple[LaunchRegistryRule, ...],
        open_index: Callable[[], ProviderIndex],
    ) -> None:
        self.name = name
        self.version = version
        self.launches = launches
        self.registries = registries
        self._open = open_index
        self._index: ProviderIndex | str | None = None

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}" if self.version else self.name

    @property
    def opened(self) -> ProviderIndex | None:
        """The index, if a line opened it (so that its cache can be saved)."""
        return None if isinstance(self._index, str) else self._index

    def index(self) -> ProviderIndex | str:
        """The release's index, or why it cannot be read."""
        if self._index is None:
            try:
                self._index = self._open()
            except Exception as exc:  # noqa: BLE001 - an InputError or a broken release: said on the line
                self._index = str(exc) or type(exc).__name__
        return self._index

    def rule(self, name: str) -> LaunchRule | None:
        return next((r for r in self.launches if r.name == name), None)


@record
class PluginUse:
    """A plugin a launch line names (`what`: "KV connector"), for the plugin-contract checks:
    the class the release registers under `name`, or (`external`) the class `name` of the
    out-of-tree module the line's `plugin_key` names."""

    what: str
    name: str
    class_path: str | None
    external: bool
    flag: str
    key: str
    path: str
    site: Site


@dataclass
class LaunchResult:
    findings: list[Finding] = field(default_factory=list)
    plugins: list[PluginUse] = field(default_factory=list)


def launch_findings(target: LaunchTarget, file: ConsumerFile, consumer: str, own_flags: frozenset[str] = frozenset()) -> LaunchResult:
    """Every launch rule's findings (and the plugins named) for one file's launch lines.
    `own_flags`: the flags the consumer's own CLI adds to the provider's parser (a consumer that
    builds its command on the provider's parser runs its lines with those flags known)."""
    result = LaunchResult()
    for line in file.launch_lines:
        rule = target.rule(line.launch)
        if rule is not None:
            _LineCheck(target, rule, file, consumer, line, result, own_flags).run()
    return result


class _LineCheck:
    def __init__(self, target: LaunchTarget, rule: LaunchRule, file: ConsumerFile, consumer: str, line: LaunchLine, out: LaunchResult,
                 own_flags: frozenset[str] = frozenset()):  # fmt: skip
        self.target, self.rule, self.file, self.consumer, self.line, self.out = target, rule, file, consumer, line, out
        self.own_flags = own_flags

    # ------------------------------------------------------------------ findings
    def finding(self, rule: str, site: Site, message: str, *, param: str | None, callee: str | None = None,
                location: str | None = None, advice: str | None = None, facts: LaunchFacts | None = None,
                severity: Severity | None = None) -> None:  # fmt: skip
        info = ENGINE_RULES[rule]
        self.out.findings.append(
            Finding(
                rule=rule, severity=severity or info.severity, consumer=self.consumer, path=self.file.path,
                line=site.line, column=site.column, callee=callee, param=param, message=message,
                provider_location=location, source=source_text(self.file.lines, Site(site.line, site.column)),
                advice=advice if advice is not None else info.advice_for(param), facts=facts,
            )  # fmt: skip
        )

    def cannot_judge(self, site: Site, reason: str, *, param: str | None = None, callee: str | None = None) -> None:
        self.finding(CANNOT_JUDGE, site, f"cannot judge `{self.line.command}`: {reason}", param=param, callee=callee)

    # ---------------------------------------------------------------------- run
    def run(self) -> None:
        index = self.target.index()
        if isinstance(index, str):
            self.cannot_judge(self.line.site, f"{self.target.name} cannot be read ({index})")
            return
        self.index = index
        if not index.module_exists(self.line.module):
            self.finding(
                ENTRY_UNKNOWN, self.line.site,
                f"`{self.line.command}` runs module {self.line.module}, which {self.target.label} does not have",
                param=self.line.module, callee=self.line.module,
                facts=LaunchFacts(self.rule.name, self.line.command, module=self.line.module),
            )  # fmt: skip
        self.spec = read_cli(index, self.rule)
        if self.spec.parser is None:
            self.cannot_judge(self.line.site, self.spec.unread[0] if self.spec.unread else "its parser cannot be read")
            return
        self.options = self.spec.options()
        self.flags()

    def flags(self) -> None:
        args = self.line.args
        for i, arg in enumerate(args):
            text = arg.text
            if text == "--":
                return  # what follows is positional
            if not arg.known or not text.startswith("-") or text == "-" or _NUMBER.match(text):
                continue  # a value, a positional argument, or computed at run time
            following = args[i + 1] if i + 1 < len(args) and not args[i + 1].text.startswith("--") else None
            self.flag(arg, following)

    def flag(self, arg: LaunchArg, following: LaunchArg | None) -> None:
        """Judge one option argument (`following`: the argument after it, its value if it takes one)."""
        text = arg.text
        for short, long in self.rule.short_options:
            if short in self.options or not text.startswith(short):
                continue
            if text != short:  # `-O3`, `-O=3`
                self.known_flag(arg, long, text, LaunchArg(text[len(short) :].lstrip("="), arg.site), "")
                return
            if following is not None and not following.text.startswith("-"):  # `-O 3`
                self.known_flag(arg, long, text, following, "")
                return
        if not text.startswith("--"):
            self.short(arg, following)
            return
        written, eq, inline = text.partition("=")
        name = written
        if self.rule.underscores:
            head, dot, rest = name[2:].partition(".")
            name = "--" + head.replace("_", "-") + dot + rest
        keys = ""
        if self.rule.dotted_keys and "." in name:
            name, _, keys = name.partition(".")
            keys = keys.rstrip("+")
        self.known_flag(arg, name, written, LaunchArg(inline, arg.site) if eq else following, keys)

    def known_flag(self, arg: LaunchArg, name: str, written: str, value: LaunchArg | None, keys: str) -> None:
        """Judge flag `name`; when it takes JSON, its value too."""
        flag = self.options.get(name)
        if flag is None:
            candidates = sorted({o for o in self.options if o.startswith(name) and o.startswith("--")})
            matches = {id(self.options[o]) for o in candidates}
            if len(matches) == 1 and name.startswith("--") and len(name) > 2:
                flag = self.options[candidates[0]]  # argparse takes a unique abbreviation
            else:
                self.unknown_flag(arg, name, written, candidates if len(matches) > 1 else [])
                return
        if flag.config is not None and value is not None:
            self.json_value(flag, name, value, keys)

    def short(self, arg: LaunchArg, following: LaunchArg | None) -> None:
        text = arg.text
        name, eq, inline = text.partition("=")
        flag = self.options.get(name)
        if flag is not None:
            if flag.config is not None:
                value = LaunchArg(inline, arg.site) if eq else following
                if value is not None:
                    self.json_value(flag, name, value, "")
            return
        if any(len(o) == 2 and not o.startswith("--") and text.startswith(o) for o in self.options):
            return  # `-qfp8`: a one-letter option with its value attached
        self.unknown_flag(arg, name, text, [])

    def unknown_flag(self, arg: LaunchArg, name: str, written: str, ambiguous: list[str]) -> None:
        if not ambiguous and name in self.own_flags:
            return  # the consumer's own command adds it to the provider's parser
        spec: CliSpec = self.spec
        known = tuple(ambiguous) or tuple(difflib.get_close_matches(name, [o for o in self.options if o.startswith("--")], n=3))
        facts = LaunchFacts(self.rule.name, name, known=known)
        if ambiguous:
            message = f"{written} is ambiguous for `{self.line.command}` on {self.target.label}: it abbreviates {', '.join(ambiguous)}"
        else:
            message = f"`{self.line.command}` on {self.target.label} has no flag {name}"
        if not spec.complete:
            why = spec.unread[0] if spec.unread else "its flags cannot all be read"
            self.cannot_judge(arg.site, f"{message}, but not every flag could be read ({why})", param=name, callee=spec.parser)
            return
        hooks = f"; plugins may add flags ({', '.join(spec.hooks)})" if spec.hooks else ""
        advice = f"Remove {name} or spell it as {self.target.name} does" + (f" (close: {', '.join(known)})" if known else "") + \
            f", or run a release that has it{hooks}."  # fmt: skip
        self.finding(FLAG_UNKNOWN, arg.site, message, param=name, callee=spec.parser, location=spec.location, advice=advice, facts=facts)

    # ---------------------------------------------------------------- JSON values
    def json_value(self, flag: FlagSpec, name: str, value: LaunchArg, keys: str) -> None:
        config = flag.config
        assert config is not None
        if not value.known:
            self.cannot_judge(value.site, f"the value of {name} is computed at run time: its keys are not checked", param=name, callee=config)
            return
        if keys:
            parsed = _json_or_text(value.text)
            obj: Any = parsed
            for part in reversed(keys.split(".")):
                obj = {part: obj}
        else:
            try:
                obj = json.loads(value.text, strict=False)
            except ValueError:
                self.cannot_judge(value.site, f"the value of {name} is not JSON: its keys are not checked", param=name, callee=config)
                return
        if isinstance(obj, dict):
            self.config(config, obj, name, "", value.site)

    def config(self, path: str, obj: dict, flag: str, prefix: str, site: Site) -> None:
        shape = config_shape(self.index, path)
        if shape.unknown is not None:
            self.cannot_judge(site, f"the keys of {path} cannot be read ({shape.unknown})", param=flag, callee=path)
            return
        if shape.open is not None:
            return
        for key, value in obj.items():
            key_path = f"{prefix}{key}"
            where = self.key_site(site, key)
            found = shape.field(key)
            if found is None:
                known = tuple(difflib.get_close_matches(key, [f.name for f in shape.fields], n=3))
                advice = f"Remove \"{key}\" from {flag}" + (f", or spell it {' or '.join(repr(k) for k in known)}" if known else "") + \
                    f": {path.rsplit('.', 1)[-1]} has no such field in {self.target.label}."  # fmt: skip
                self.finding(
                    KEY_UNKNOWN, where, f"{flag} sets \"{key_path}\", which {path.rsplit('.', 1)[-1]} does not have on {self.target.label}",
                    param=key_path, callee=path, location=shape.location, advice=advice,
                    facts=LaunchFacts(self.rule.name, flag, key=key_path, config=path, known=known),
                )  # fmt: skip
                continue
            if value == UNKNOWN:
                continue  # computed at run time
            if found.choices is not None and not isinstance(value, (dict, list)) and json_text(value) not in found.choices:
                allowed = tuple(json.loads(c) if c.startswith('"') else c for c in found.choices)
                close = tuple(difflib.get_close_matches(str(value), [str(a) for a in allowed], n=3))
                self.finding(
                    VALUE_UNKNOWN, self.value_site(where, value),
                    f"{flag} sets \"{key_path}\" to {json_text(value)}, which {path.rsplit('.', 1)[-1]}.{key} does not allow on {self.target.label}",
                    param=key_path, callee=path, location=shape.location,
                    advice=f"Use one of the values {path.rsplit('.', 1)[-1]}.{key} allows" + (f" (close: {', '.join(close)})" if close else "") + ".",
                    facts=LaunchFacts(self.rule.name, flag, key=key_path, value=str(value), config=path, known=close or allowed[:8]),
                )  # fmt: skip
            self.registered(path, obj, key, key_path, value, flag, where)
            if found.nested is not None and not found.raw and isinstance(value, dict):
                self.config(found.nested, value, flag, f"{key_path}.", where)

    def registered(self, path: str, obj: dict, key: str, key_path: str, value: Any, flag: str, site: Site) -> None:
        """A name the release registers by call (`[[launch_registry]]`)."""
        for rule in self.target.registries:
            if rule.key != key or not _same_class(rule.config, path) or not isinstance(value, str):
                continue
            external = obj.get(rule.plugin_key) if rule.plugin_key else None
            if isinstance(external, str) and external:
                self.out.plugins.append(PluginUse(rule.what, value, f"{external}.{value}", True, flag, key_path, self.file.path, site))
                continue
            names = registered_names(self.index, rule)
            if names.unknown is not None:
                self.cannot_judge(site, f"the {rule.what} names cannot be read ({names.unknown})", param=key_path, callee=rule.module)
                continue
            registration = names.get(value)
            if registration is not None:
                self.out.plugins.append(PluginUse(rule.what, value, registration.class_path, False, flag, key_path, self.file.path, site))
                continue
            every = tuple(r.name for r in names.names)
            close = tuple(difflib.get_close_matches(value, every, n=3))
            plugin = f", or name its module with \"{rule.plugin_key}\"" if rule.plugin_key else ""
            self.finding(
                VALUE_UNKNOWN, self.value_site(site, value),
                f"{flag} names {rule.what} \"{value}\", which {self.target.label} does not register",
                param=key_path, callee=f"{rule.module}.{rule.call}", location=names.names[0].location if names.names else None,
                advice=f"Use a {rule.what} {self.target.name} registers" + (f" (close: {', '.join(close)})" if close else "") + f"{plugin}.",
                facts=LaunchFacts(self.rule.name, flag, key=key_path, value=value, config=path, known=close or every[:8]),
            )  # fmt: skip

    # ------------------------------------------------------------------ positions
    def key_site(self, site: Site, key: str) -> Site:
        """Where `"key"` is written inside the value at `site` (quoted, escaped in a TOML/YAML
        string, or bare); the value's own site when it cannot be told."""
        found = self._find(site, (f'"{key}"', f'\\"{key}\\"', f"'{key}'", key))
        return Site(found.line, found.column, site.end_line, site.end_column) if found else site

    def value_site(self, site: Site, value: Any) -> Site:
        text = json_text(value)
        return self._find(site, (text, text.replace('"', '\\"'), str(value))) or site

    def _find(self, site: Site, texts: tuple[str, ...]) -> Site | None:
        """The first line within the value at `site` (its lines, from its column) that writes one
        of `texts`, and where."""
        lines = self.file.lines
        last = min(max(site.end_line or site.line, site.line), len(lines))
        for number in range(site.line, last + 1):
            line = lines[number - 1]
            start = site.column if number == site.line else 0
            end = site.end_column if number == site.end_line and site.end_column is not None else len(line)
            for text in texts:
                at = line.find(text, start, max(end, start))
                if at >= 0:
                    return Site(number, at)
        return None


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text, strict=False)
    except ValueError:
        return text


def _same_class(rule_path: str, path: str) -> bool:
    """The rule's config class: the same path, or (moved since) the same class name."""
    return rule_path == path or rule_path.rsplit(".", 1)[-1] == path.rsplit(".", 1)[-1]


__all__ = [
    "ENTRY_UNKNOWN",
    "FLAG_UNKNOWN",
    "KEY_UNKNOWN",
    "RULES",
    "VALUE_UNKNOWN",
    "LaunchResult",
    "LaunchTarget",
    "PluginUse",
    "launch_findings",
]
