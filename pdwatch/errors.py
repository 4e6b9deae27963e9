"""Errors that end a command with a one-line message: exit status 2 (``UsageError``) or 3
(``NothingToJudge``)."""

import os


class UsageError(Exception):
    """Bad arguments or unusable input: reported as ``pdwatch: error: <message>``."""


NOTHING_TO_JUDGE_STATUS = 3


class NothingToJudge(Exception):
    """The inputs were read but hold no vLLM or Dynamo server line: nothing to judge, which is
    never a clean bill (``--fail-on`` must not pass on it). Reported as ``pdwatch: <message>``,
    exit status 3."""


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


def require_one_existing(sources) -> None:
    """A finished run whose every input is a missing file has nothing to show: one line, not
    an empty report or dashboard around it. (URLs, ssh and stdin are not files to check.)"""
    if sources.metrics_files or not sources.sources or sources.has_remote:
        return  # a remote glob is listed by its own ssh source, which says what it finds
    local = sources.local_files
    if local and all(not os.path.exists(p) for p in local):
        raise UsageError(f"{local[0]}: no such file")
