"""Errors a user can cause. The CLI prints each as one line and exits 2."""


class InputError(Exception):
    """Bad usage or input: unknown distribution, unknown version, no network, bad rule file."""


class CacheError(InputError):
    """The cache could not be read or written (a corrupt entry is rebuilt, not raised)."""


class NotInstalledError(InputError):
    """A distribution named bare (to be read from this Python) is not installed here."""

    def __init__(self, message: str, name: str) -> None:
        super().__init__(message)
        self.name = name
