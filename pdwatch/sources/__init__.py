"""Sources layer: turn command-line paths, URLs, ssh:// globs and Prometheus servers into a stream of blocks
(replay or follow)."""

from .discovery import classify_txt, expand_candidates, expand_paths
from .file_tail import FileTail
from .framing import LineFramer
from .prometheus import PrometheusSource, PromOptions, is_prom
from .records import NOTICE_KINDS, READ_FAILURES, Labels, LineBlock, SampleBlock, ScrapeBlock, SourceNotice
from .scrape_source import ScrapeSource, is_url
from .source_set import SourceSet
from .ssh_source import SshOptions, SshSource
from .ssh_spec import is_ssh, parse_ssh
from .stdin_source import StdinSource

__all__ = [
    "NOTICE_KINDS",
    "READ_FAILURES",
    "FileTail",
    "Labels",
    "LineBlock",
    "LineFramer",
    "PromOptions",
    "PrometheusSource",
    "SampleBlock",
    "ScrapeBlock",
    "ScrapeSource",
    "SourceNotice",
    "SourceSet",
    "SshOptions",
    "SshSource",
    "StdinSource",
    "classify_txt",
    "expand_candidates",
    "expand_paths",
    "is_ssh",
    "is_prom",
    "is_url",
    "parse_ssh",
]
