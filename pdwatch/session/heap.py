"""Giving the memory a long watch has freed back to the system.

glibc's malloc keeps freed memory for reuse; after a watch folds its old rows (``Store.retention``)
the frames it dropped would stay in the process's RSS, scattered among live objects. ``malloc_trim``
returns the free pages. A no-op where the C library has no such call (musl, macOS).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import lru_cache


@lru_cache(maxsize=1)
def _malloc_trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def give_back_freed_memory() -> bool:
    """Return the heap's free pages to the system; whether the C library could."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
