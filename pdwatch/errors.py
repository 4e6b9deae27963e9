"""Errors that end a command with a one-line message and exit status 2."""


class UsageError(Exception):
    """Bad arguments or unusable input: reported as ``pdwatch: error: <message>``."""


def require_inputs(sources, paths: list[str]) -> None:
    """A finished run with nothing to read is a usage error, not an empty result.

    ``sources`` is a ``pdwatch.sources.SourceSet`` after it expanded the arguments.
    """
    if not sources.sources and not sources.metrics_files:
        unlistable = getattr(sources, "unlistable_dirs", {})
        if unlistable:
            path, reason = next(iter(unlistable.items()))
            raise UsageError(f"{path}: cannot list the folder ({reason})")
        raise UsageError(f"no log files in {', '.join(paths)} (a directory is read for *.out *.log *.err *.txt)")
