"""Messages between the ingest worker thread and the app (cross-thread only via post_message)."""

from __future__ import annotations

from textual.message import Message


class SourcesRead(Message):
    """The replay worker read every file: the clock can start."""


class IngestFailed(Message):
    """The ingest worker stopped on an error; the text is shown as text."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class LinesArrived(Message):
    """The worker read new lines while watching (posted once until the next update)."""
