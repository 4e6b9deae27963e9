"""Python reprs in logs are data: parsed, never evaluated, and never a warning on pdwatch's stderr."""

from __future__ import annotations

import warnings

from pdwatch.parsers.pyrepr import parse_args_dict, parse_repr


def test_an_invalid_escape_in_logged_text_raises_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        assert parse_repr(r"{'pattern': '\d+'}") == {"pattern": "\\d+"}
        assert parse_args_dict(r"{'pattern': '\d+', 'cut") == {"pattern": "\\d+"}
