"""The exception tree. The CLI turns each into one clear line and an exit code."""

from __future__ import annotations


class ReviewError(Exception):
    """Base of every error reviewflow raises on purpose."""

    exit_code = 2


class SetupError(ReviewError):
    """What the command was started with cannot be used: a deleted working directory."""


class ConfigError(ReviewError):
    """Bad configuration: unknown key, bad value, invalid YAML, bad flag combination."""


class GitError(ReviewError):
    """Not a repository, unknown ref, a failed git command."""


class DiffParseError(ReviewError):
    """A unified diff that cannot be parsed."""


class RulesError(ReviewError):
    """A rules file that cannot be read or parsed."""


class TrustError(ReviewError):
    """In CI, repository rules would be read from an untrusted ref."""


class OutputError(ReviewError):
    """A report or config file cannot be written."""


class ProviderError(ReviewError):
    """A model request failed."""


class TransientProviderError(ProviderError):
    """Worth retrying: timeout, connection error, HTTP 408, 429, 5xx."""


class PermanentProviderError(ProviderError):
    """Not worth retrying: authentication, bad parameters, unknown model."""


class ToolError(ReviewError):
    """A read-only tool was called with arguments it must refuse."""
