"""Each consumer file parsed once on a cold read.

A file's uses depend on what the other files export (re-exports of provider objects, constants,
guard helpers), which is known only once every file is read. Rather than parse every file twice
(bindings first, then uses), each file is read once: its bindings join the tables, and its uses
are read at once against the tables as they stand, with every name the visitor asked of them
recorded (`RecordingNames`). When the tables are complete, a file whose every recorded answer is
still the same keeps that reading (the visitor is deterministic in its inputs: the file, the
options, those answers); any other file is read again against the complete tables. Files go in
an order where the modules a file imports come first (`import_order`), so few are read twice.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from apiaudit.consumer.imports import ConsumerNames, with_python
from apiaudit.consumer.values import DictValue, Value
from apiaudit.infra.astutil import absolute_import


class RecordingNames(ConsumerNames):
    """The consumer-wide tables as they grow file by file, answering as the complete ones will
    for what is already known, and recording each question with its answer."""

    def __init__(self, provider_packages: Iterable[str], python_version: tuple[int, ...]):
        super().__init__({}, with_python({}, python_version))
        self.bindings: dict[str, str] = {}
        self.tops = frozenset(provider_packages)
        self.asked: dict[str, Value | None] = {}
        # A file's first reading may be kept on the answers it recorded: the visitor asks the
        # tables in full there, never passing over a call statement as no requirement check.
        self.has_requirements = True

    def add(self, bindings: dict[str, str], exports: dict[str, Value]) -> None:
        self.bindings.update(bindings)
        self.shared.update(exports)
        self.has_dicts = self.has_dicts or any(isinstance(v, DictValue) for v in exports.values())

    def start(self) -> dict[str, Value | None]:
        """A fresh record for the next file's reading."""
        self.asked = {}
        return self.asked

    def value(self, dotted: str) -> Value | None:
        if dotted not in self.asked:
            self.asked[dotted] = self._answer(dotted)
        return self.asked[dotted]

    def _answer(self, dotted: str) -> Value | None:
        # As `collect`'s re-export resolution: the chain of consumer bindings, to a provider name.
        if dotted in self.bindings:
            target, hops = self.bindings[dotted], 0
            while target in self.bindings and hops < 20:
                target, hops = self.bindings[target], hops + 1
            if target.split(".")[0] in self.tops:
                self.reexports[dotted] = target
                return super().value(dotted)
        return self.shared.get(dotted)


def still_valid(asked: dict[str, Value | None], final: ConsumerNames) -> bool:
    """Whether the complete tables answer every recorded question as the growing ones did."""
    return all(final.value(dotted) == answer for dotted, answer in asked.items())


_IMPORT = re.compile(rb"^[ \t]*(?:from[ \t]+(\.*)([\w.]*)[ \t]+import\b|import[ \t]+([\w.]+))", re.MULTILINE)


def import_order(modules: Sequence[tuple[str, bool]], texts: Sequence[bytes]) -> list[int]:
    """Indexes of the files, each after the consumer modules it names in an import statement
    (as far as import cycles allow; a line-based reading, only to order the work)."""
    index = {name: i for i, (name, _) in enumerate(modules)}
    deps: list[list[int]] = []
    for (module, is_package), text in zip(modules, texts):
        package = module if is_package else module.rpartition(".")[0]
        found: list[int] = []
        for dots, name, plain in _IMPORT.findall(text):
            if plain:
                dotted = plain.decode("ascii", "replace")
            else:
                dotted = absolute_import(package, name.decode("ascii", "replace") or None, len(dots))
            # The module itself and every package on the way (their __init__ runs first).
            while dotted:
                if dotted in index:
                    found.append(index[dotted])
                dotted = dotted.rpartition(".")[0]
        deps.append(found)
    order: list[int] = []
    state = [0] * len(modules)  # 0 new, 1 on the stack, 2 placed
    for start in range(len(modules)):
        if state[start]:
            continue
        stack = [(start, iter(deps[start]))]
        state[start] = 1
        while stack:
            node, pending = stack[-1]
            nxt = next((d for d in pending if state[d] == 0), None)
            if nxt is None:
                stack.pop()
                state[node] = 2
                order.append(node)
            else:
                state[nxt] = 1
                stack.append((nxt, iter(deps[nxt])))
    return order
