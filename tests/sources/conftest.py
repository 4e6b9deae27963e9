"""Fixtures for the sources tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def write(tmp_path):
    """write(name, data, mode="ab") -> path (str); appends by default."""

    def _write(name: str, data: bytes, mode: str = "ab") -> str:
        p = tmp_path / name
        with open(p, mode) as f:
            f.write(data)
        return str(p)

    return _write
