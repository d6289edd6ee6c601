"""reviewflow: a read-only code review agent for Git changes (domain package, no Prefect)."""

__version__ = "0.1.0"
