"""Sources layer: turn command-line paths into a stream of complete-line blocks (replay or follow)."""

from .discovery import classify_txt, expand_candidates, expand_paths
from .file_tail import FileTail
from .framing import LineFramer
from .records import NOTICE_KINDS, LineBlock, SourceNotice
from .source_set import SourceSet
from .stdin_source import StdinSource

__all__ = [
    "NOTICE_KINDS",
    "FileTail",
    "LineBlock",
    "LineFramer",
    "SourceNotice",
    "SourceSet",
    "StdinSource",
    "classify_txt",
    "expand_candidates",
    "expand_paths",
]
