"""``pdwatch parse`` of a block of router lines (a Dynamo frontend at INFO) takes a path of its own
(``LogScanner._router_lines``): it writes exactly what the search-per-hit path (``_hit_lines``)
writes, in the same order, whatever else the block holds (lines with other needles, a traceback
that opens, a version line waiting for its logo, noise, router lines of other shapes)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from pdwatch.parsers import LogScanner
from pdwatch.parsers import scanner as scanner_module
from pdwatch.commands.parse import _render_jsonl
from tests.conftest import header_strategies

_vllm_header, _dynamo_header = header_strategies()
_ROUTER = ("\x1b[2m2026-03-31T18:01:{s:02d}.{f:06d}Z\x1b[0m \x1b[32m INFO\x1b[0m \x1b[2mdynamo_kv_router::scheduling::"
           "selector\x1b[0m\x1b[2m:\x1b[0m Selected worker: worker_type=prefill, worker_id=7858357388210 dp_rank={d}, "
           "logit: {l}, cached blocks: 0, tree size: 3, total blocks: 2040")

# Lines that may sit among the router lines, each kind of what the block's own path must handle.
_OTHERS = st.one_of(
    st.builds(lambda header, tail: f"{header}Selected worker: worker_type=decode, worker_id=1 dp_rank=007{tail}",
              st.one_of(_vllm_header, _dynamo_header), st.sampled_from(["", ", logit: 8.010", ", logit: nan", " x"])),
    st.builds(lambda header: f"{header}Selected worker: worker_type=x, worker_id=2 dp_rank=1, logit: 1.5", _dynamo_header),
    st.sampled_from([
        "INFO 03-31 18:01:11 [loggers.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: "
        "2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 5.0%, Prefix cache hit rate: 0.0%",
        "(APIServer pid=1) ERROR 03-31 18:01:11 [core.py:1] Traceback (most recent call last):",
        '(APIServer pid=1) ERROR 03-31 18:01:11 [core.py:1]   File "x.py", line 1, in f',
        "(APIServer pid=1) ERROR 03-31 18:01:11 [core.py:1] RuntimeError: CUDA error: an illegal memory access",
        "INFO 03-31 18:01:11 [__init__.py:1] vLLM API server version 0.10.1",
        "\x1b[2m2026-03-31T18:01:11.000001Z\x1b[0m \x1b[33m WARN\x1b[0m \x1b[2mdynamo_kv_router::scheduling::selector"
        "\x1b[0m\x1b[2m:\x1b[0m Selected worker: worker_type=prefill, worker_id=1 dp_rank=0, logit: 1.000",
        "\x1b[2m2026-03-31T18:01:11.000001Z\x1b[0m \x1b[32m INFO\x1b[0m \x1b[2mdynamo::Traceback (most recent call last)"
        "\x1b[0m\x1b[2m:\x1b[0m Selected worker: worker_type=prefill, worker_id=1 dp_rank=0, logit: 1.000",
        "plain noise between them", "", "\x1b[2m2026-03-31T18:01:11.5Z\x1b[0m \x1b[32m INFO\x1b[0m \x1b[2mhttp\x1b[0m"
        "\x1b[2m:\x1b[0m request completed",
    ]),
)


def _router(i: int, logit: str) -> str:
    return _ROUTER.format(s=i % 61, f=(i * 7919) % 1_000_000, d=i % 8, l=logit)


def _both(data: bytes, cuts: list[int]) -> tuple[list, list, int]:
    """What ``parse``'s scanner gives for ``data`` fed in blocks cut at the line indexes ``cuts``:
    with the router-line path, and with the search-per-hit path only; how often the first ran."""
    lines = data.split(b"\n")
    blocks, start = [], 0
    for cut in [*sorted(set(cuts)), len(lines)]:
        if cut > start:
            blocks.append((b"\n".join(lines[start:cut]) + (b"\n" if cut < len(lines) else b""), start + 1))
            start = cut
    outputs, ran = [], 0
    for dense in (True, False):
        scanner = LogScanner("f.log", year=2026, mtime=1.7e9, json_lines=True)
        real = scanner_module.LogScanner._router_lines
        calls = []

        def counted(self, *args):
            calls.append(1)
            return real(self, *args)

        with pytest.MonkeyPatch.context() as patch:
            if dense:
                patch.setattr(scanner_module.LogScanner, "_router_lines", counted)
            else:
                patch.setattr(scanner_module, "_router_dense", lambda data: False)
            items = [item for block, first in blocks for item in scanner.feed(block, first)] + scanner.finish()
        outputs.append(_render_jsonl(items))
        ran += len(calls)
    return outputs[0], outputs[1], ran


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1000), _OTHERS), max_size=12),
       st.lists(st.sampled_from(["34.790", "1.000", "-0.500", "12.5", "007.1", "0.0001", "99999999999999999.9"]),
                min_size=1, max_size=7),
       st.lists(st.integers(300, 700), max_size=1))  # blocks of 300 lines (70 KB) and more
def test_the_router_line_path_writes_what_the_hit_path_writes(others, logits, cuts):
    lines = [_router(i, logits[i % len(logits)]) for i in range(1000)]
    for at, line in sorted(others, reverse=True):
        lines.insert(at, line)
    dense, by_hits, ran = _both(("\n".join(lines) + "\n").encode(), cuts)
    assert ran  # the block was taken as one of router lines
    assert dense == by_hits


def test_a_block_without_its_last_newline_and_a_version_waiting_for_its_logo():
    lines = [_router(i, "2.250") for i in range(400)]
    lines[10:10] = ["INFO 03-31 18:01:11 [__init__.py:1] vLLM API server version 0.10.1"]  # a logo line may follow
    dense, by_hits, ran = _both("\n".join(lines).encode(), [])  # the file's last line has no newline
    assert ran and dense == by_hits
    assert dense.count(b'"kind":"worker_selected"') == 400


def test_a_sparse_block_keeps_the_hit_path():
    lines = [f"noise line {i} with nothing to find" for i in range(2000)] + [_router(i, "1.5") for i in range(300)]
    dense, by_hits, ran = _both(("\n".join(lines) + "\n").encode(), [])
    assert not ran and dense == by_hits
