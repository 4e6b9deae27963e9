"""Recognise the envelope of a cleaned log line: process prefix, level, timestamp, message.

Forms handled (see ``../shared/formats/README.md`` sections 0, 6 and 9):
- vLLM ``LEVEL MM-DD HH:MM:SS [file:line] msg`` and the v0.7 ``file:line] msg`` form,
  behind zero or more ``(Name pid=N)`` prefixes (Ray adds a second one) and an
  optional ``VLLM_LOGGING_PREFIX``;
- Dynamo's Rust compact format and Dynamo 1.x's Python main-process format
  (``ISO-UTC  LEVEL target: msg``), and ``DYN_LOGGING_JSONL`` objects;
- uvicorn's ``INFO:     msg`` (no timestamp), Ray's ``YYYY-MM-DD HH:MM:SS,mmm LEVEL file:line -- msg``;
- a container runtime timestamp in front of any of these.
A line with none of these keeps its whole text as message, with no level or time.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import regex

from .cleaning import clean_raw

_PROC = regex.compile(
    r"\((?:(?P<name>[A-Za-z_][\w\-]*(?: rank=\d+)?) )?pid=(?P<pid>\d+)(?:, ip=[^)]*)?\) ?"
)
_VLLM = regex.compile(
    r"(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) "
    r"(?P<md>\d\d-\d\d) (?P<hms>\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d+))? "
    r"\[?(?P<file>[^\]\s:]+):(?P<lineno>\d+)\](?: (?P<msg>.*))?$"
)
# The common case in one match: at most one process prefix, then the plain vLLM header.
_PROC_VLLM = regex.compile(r"(?:" + _PROC.pattern + r")?" + _VLLM.pattern)
# VLLM_LOGGING_PREFIX is printed verbatim before the level: tried only when the plain header fails.
_VLLM_PREFIXED = regex.compile(r"(?P<prefix>.{1,64}?)" + _VLLM.pattern)
_ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)"
_DYNAMO = regex.compile(
    rf"(?P<iso>{_ISO})\s+(?P<level>TRACE|DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL)\s+"
    r"(?P<target>\S+?):(?: (?P<msg>.*))?$"
)
_CONTAINER_TS = regex.compile(rf"(?P<iso>{_ISO}) ")
_RAY = regex.compile(
    r"(?P<date>\d{4}-\d\d-\d\d) (?P<hms>\d\d:\d\d:\d\d),(?P<ms>\d{3})\s+"
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) \S+:\d+ -- (?P<msg>.*)$"
)
_UVICORN = regex.compile(r"(?P<level>INFO|WARNING|ERROR|DEBUG|CRITICAL):\s+(?P<msg>.*)$")
_RAY_REPEAT = regex.compile(r"\s*\[repeated \d+x across cluster\].*$")
_DP_RANK = regex.compile(r"_DP(\d+)|^EngineCore_(\d+)$")
# Dynamo's compact format as its terminal colours leave it, read on the raw bytes in one match:
# dim timestamp, coloured level, dim target, dim colon; the message after it must hold no
# control character (checked on the decoded text). Python's ``re``: twice as fast as ``regex`` here.
_DYNAMO_COLOURED = re.compile(
    rb"\x1b\[2m(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)\x1b\[0m( +)\x1b\[[0-9;]*m"
    rb"( *(?:TRACE|DEBUG|INFO|WARN|ERROR))\x1b\[0m( +)\x1b\[2m([!-~]+)\x1b\[0m\x1b\[2m:\x1b\[0m(?= |$)"
)


@dataclass(slots=True)
class Envelope:
    """What surrounds the message. Times are raw strings; ``timeinfo`` resolves them."""

    style: str  # vllm | dynamo | jsonl | uvicorn | ray | bare
    msg: str
    level: str | None = None
    proc: str | None = None  # first process prefix, e.g. EngineCore_DP3
    pid: int | None = None
    month_day: str | None = None  # vLLM "MM-DD"
    clock: str | None = None  # vLLM "HH:MM:SS" (+ ".frac" when present)
    iso: str | None = None  # full timestamp with date (Dynamo, container, Ray)
    target: str | None = None  # Dynamo target / vLLM file


def normalise_level(level: str | None) -> str | None:
    if level is None:
        return None
    level = level.upper()
    return "WARNING" if level == "WARN" else level


def engine_from_proc(proc: str | None) -> int | None:
    """DP rank from an ``EngineCore_DP3`` / ``Worker_DP1_TP0`` / v0.10 ``EngineCore_0`` name."""
    if not proc:
        return None
    m = _DP_RANK.search(proc)
    if not m:
        return None
    return int(m.group(1) or m.group(2))


def split_raw(raw: bytes) -> tuple[str, Envelope]:
    """The cleaned text of a raw line and its envelope: ``split_envelope(clean_raw(raw))``,
    read in one match for Dynamo's coloured lines, the bulk of a Dynamo log."""
    if raw.startswith(b"\x1b[2m"):
        m = _DYNAMO_COLOURED.match(raw)
        if m is not None:
            iso, gap, level, gap2, target = (part.decode() for part in m.groups())
            rest = raw[m.end():].decode("utf-8", "replace")
            text = f"{iso}{gap}{level}{gap2}{target}:{rest}"
            if text.isprintable():  # else the general path drops the control characters
                return text, Envelope("dynamo", _strip_ray(rest[1:]), normalise_level(level.strip()),
                                      iso=iso, target=target)
    text = clean_raw(raw)
    return text, split_envelope(text)


def split_envelope(text: str) -> Envelope:
    rest = text
    proc: str | None = None
    pid: int | None = None
    iso: str | None = None

    if rest.startswith("{"):
        env = _jsonl(rest)
        if env is not None:
            return env

    m = _PROC_VLLM.match(rest)
    if m:
        return _vllm_envelope(m, m["name"], int(m["pid"]) if m["pid"] else None, None)
    m = _DYNAMO.match(rest)
    if m:
        return Envelope("dynamo", _strip_ray(m["msg"] or ""), normalise_level(m["level"]),
                        iso=m["iso"], target=m["target"])
    m = _CONTAINER_TS.match(rest)
    if m:
        iso = m["iso"]
        rest = rest[m.end():]

    # Process prefixes: the first names the process; Ray adds its worker's after it.
    while rest.startswith("("):
        m = _PROC.match(rest)
        if not m:
            break
        if pid is None:
            proc, pid = m["name"], int(m["pid"])
        rest = rest[m.end():]

    m = _VLLM.match(rest) or (_VLLM_PREFIXED.match(rest) if " [" in rest or "] " in rest else None)
    if m:
        return _vllm_envelope(m, proc, pid, iso)
    m = _DYNAMO.match(rest)
    if m:
        return Envelope("dynamo", _strip_ray(m["msg"] or ""), normalise_level(m["level"]), proc, pid,
                        iso=m["iso"], target=m["target"])
    m = _RAY.match(rest)
    if m:
        return Envelope("ray", m["msg"], normalise_level(m["level"]), proc, pid,
                        iso=f"{m['date']}T{m['hms']}.{m['ms']}")
    m = _UVICORN.match(rest)
    if m:
        return Envelope("uvicorn", m["msg"], normalise_level(m["level"]), proc, pid, iso=iso)
    return Envelope("bare", _strip_ray(rest), None, proc, pid, iso=iso)


def _vllm_envelope(m: regex.Match, proc: str | None, pid: int | None, iso: str | None) -> Envelope:
    clock = m["hms"] + ("." + m["frac"] if m["frac"] else "")
    return Envelope("vllm", _strip_ray(m["msg"] or ""), normalise_level(m["level"]), proc, pid,
                    month_day=m["md"], clock=clock, iso=iso, target=m["file"])


def _strip_ray(msg: str) -> str:
    if "across cluster]" in msg:
        return _RAY_REPEAT.sub("", msg)
    return msg


def _jsonl(text: str) -> Envelope | None:
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    if not isinstance(obj, dict) or "message" not in obj:
        return None
    msg = str(obj.get("message", ""))
    # Structured fields sit beside the message in JSONL; append them as key=value like the text format.
    extra = " ".join(
        f"{k}={v}" for k, v in obj.items()
        if k not in {"time", "level", "file", "line", "target", "message", "trace_id", "span_id"}
    )
    if extra:
        msg = f"{msg} {extra}"
    time = obj.get("time")
    return Envelope("jsonl", msg, normalise_level(str(obj["level"])) if "level" in obj else None,
                    iso=str(time) if time else None, target=obj.get("target"))
