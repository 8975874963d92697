"""Errors a user can cause. The CLI prints each as one line and exits 2."""


class InputError(Exception):
    """Bad usage or input: unknown distribution, unknown version, no network, bad rule file."""


class CacheError(InputError):
    """The cache could not be read or written (a corrupt entry is rebuilt, not raised)."""
