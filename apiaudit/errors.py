"""Errors a user can cause. The CLI prints each as one line and exits 2; a Python caller catches
`apiaudit.Error` (or one kind of it) and reads the same line, naming the API's own parameters.

Every class is public (`apiaudit.InputError`, ...; docs/api.md). Import-free: `apiaudit/__init__.py`
imports this module before `python -m apiaudit` has dropped the working directory from sys.path.
"""


class Error(Exception):
    """Every error apiaudit raises on purpose: something about its input, never a bug of its own."""


class InputError(Error):
    """Bad usage or input: unknown distribution, unknown version, no network, bad rule file."""


class ArgumentError(InputError):
    """Arguments that do not make a request: one missing (no consumer, no provider release), a
    malformed one (a version range where one release is meant), or two that do not go together."""


class ProviderUnusedError(ArgumentError):
    """The consumer never uses the provider, nor does any dependency it declares: nothing to check.
    To `scan` that is bad input (a typo'd provider, the wrong consumer); `impact` and `atlas` tell
    it apart from a downstream that cannot be read: one that does not use the provider (yet)."""


class NotFoundError(InputError):
    """Something named is not there: a path, or a release the package index does not offer."""


class NotInstalledError(NotFoundError):
    """A distribution named bare (to be read from this Python) is not installed here."""

    def __init__(self, message: str, name: str) -> None:
        super().__init__(message)
        self.name = name


class NetworkError(InputError):
    """The package index could not be reached, or fetching is refused (offline) where a release is needed."""


class ConfigError(InputError):
    """A config file (`[tool.apiaudit]`, apiaudit.toml, a runner config) is invalid: the line names file and key."""


class RulesError(InputError):
    """A rule file (rules/*.toml or one given with `rules_dirs=`/--rules) is invalid."""


class CacheError(InputError):
    """The cache could not be read or written (a corrupt entry is rebuilt, not raised)."""
