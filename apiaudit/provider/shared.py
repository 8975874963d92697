"""Work over many items, shared among processes (`apiaudit.infra.workers`), each of which asks
the same provider index: what a forked copy's index learned (plain answers, files read) joins
this process's, so the index cache keeps it and later questions are not asked again.

Checking consumer files (`engine.check_files`) and reading the release for the provider's calls
of overridden methods (`provider/callsites.find_calls`) go through here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from apiaudit.infra.frozen import record
from apiaudit.infra.workers import plan, run_split
from apiaudit.provider.queries import LearnedAnswers

Item = TypeVar("Item")
Result = TypeVar("Result")


@record
class _Done(Generic[Result]):
    """One item's result."""

    value: Result


@record
class _Learned:
    """A process's last piece: the plain answers its index learned, and the provider files read."""

    answers: dict
    touched: dict[str, str]


def read_shared(
    index: LearnedAnswers,
    items: Sequence[Item],
    read: Callable[[Item], Result],
    *,
    workers: int = 1,
    weight: Callable[[Item], float] | None = None,
    on_result: Callable[[Result], None] | None = None,
) -> list[Result]:
    """`read(item)` of every item, in item order, shared among up to `workers` processes when
    there are enough items (`plan`); `on_result` sees each result here as it arrives (progress)."""
    shared = plan(items, workers, weight)

    def part(take: Iterator[Sequence[Item]], send: Callable[[Any], None]) -> None:
        answered = index.answered()
        for chunk in take:
            for item in chunk:
                send(_Done(read(item)))
        send(_Learned(*index.answers_since(answered)))

    def arrived(piece: _Done | _Learned) -> None:
        if on_result is not None and isinstance(piece, _Done):
            on_result(piece.value)

    split = run_split(shared, part, arrived)
    for learned in split.tails:  # what a copy's index learned (this process's own: nothing new)
        if isinstance(learned, _Learned):
            index.adopt(learned.answers, learned.touched)
    return [piece.value for piece in split.pieces if isinstance(piece, _Done)]
