"""Errors that end a command with a one-line message and exit status 2."""


class UsageError(Exception):
    """Bad arguments or unusable input: reported as ``pdwatch: error: <message>``."""
