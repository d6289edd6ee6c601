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


class SastError(ReviewError):
    """`--sast` cannot run: semgrep missing, of another version or failing, or bad SAST rules."""


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


class PublishError(ReviewError):
    """Publishing findings on a pull or merge request failed."""


class PublishSetupError(PublishError):
    """Found before the review: no token, a token the platform refuses, no such request."""


class TokenRefused(PublishSetupError):
    """The platform refused the token itself (HTTP 401): its message says what token it needs;
    where the token came from is added by whoever read it."""


class PublishRefused(PublishError):
    """The platform refused a write for good (a fork's read-only token: HTTP 403)."""


class TransientPublishError(PublishError):
    """Worth retrying: the API is down (5xx, connection) or rate-limited (`wait_s` to wait)."""

    def __init__(self, message: str, wait_s: float = 0.0) -> None:
        super().__init__(message)
        self.wait_s = wait_s
