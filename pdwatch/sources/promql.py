"""PromQL series selectors (``{job="vllm", instance=~"node7:.*"}``): parsed, matched, written.

A Prometheus source takes one as ``?match=``, a topology endpoint as ``prom:``, and the
rule export as ``--match``. Only label matchers are accepted, no metric name: pdwatch picks
the metrics itself. The grammar is PromQL's:

    selector = "{" [ matcher { "," matcher } [ "," ] ] "}"
    matcher  = LABEL ( "=" | "!=" | "=~" | "!~" ) STRING
    STRING   = "..." | '...' | `...`     (Go escapes in the quoted forms)

A regular expression is anchored at both ends, as Prometheus anchors it (RE2 there,
Python's ``re`` here: the common syntax is the same). No heavy imports: the sources and
the deployment model read it when a topology names a selector.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LABEL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPS = ("=~", "!~", "!=", "=")
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\",
            '"': '"', "'": "'"}
MAX_SELECTOR = 4000


class SelectorError(ValueError):
    """Not a series selector pdwatch accepts; the message says where and why."""


@dataclass(frozen=True)
class Matcher:
    name: str
    op: str  # = != =~ !~
    value: str

    def matches(self, labels: dict[str, str]) -> bool:
        """Whether ``labels`` (a missing label is the empty string, as in Prometheus) match."""
        got = labels.get(self.name, "")
        if self.op == "=":
            return got == self.value
        if self.op == "!=":
            return got != self.value
        hit = _regex(self.value).fullmatch(got) is not None
        return hit if self.op == "=~" else not hit

    def promql(self) -> str:
        return f"{self.name}{self.op}{quote(self.value)}"


def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.DOTALL)
    except re.error as exc:  # checked when parsed; kept for matchers built by hand
        raise SelectorError(f"bad regular expression {pattern!r}: {exc}") from None


def quote(value: str) -> str:
    """A PromQL double-quoted string literal of ``value``."""
    out = []
    for ch in value:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def parse_selector(text: str) -> tuple[Matcher, ...]:
    """The matchers of ``{...}``; ``SelectorError`` (with the column) when it is not one."""
    if len(text) > MAX_SELECTOR:
        raise SelectorError(f"selector longer than {MAX_SELECTOR} characters")
    s = text.strip()
    if not s.startswith("{"):
        name = _LABEL.match(s.replace(":", "_"))
        if name and name.end() < len(s) and s[name.end()] == "{":
            raise SelectorError(f"{text!r}: give label matchers only, {s[name.end():]!r}, without a metric "
                                f"name (pdwatch picks the vllm: and dynamo_frontend_ metrics itself)")
        raise SelectorError(f"{text!r}: expected a series selector such as {{job=\"vllm\"}}")
    i, n = 1, len(s)
    matchers: list[Matcher] = []

    def skip(j: int) -> int:
        while j < n and s[j].isspace():
            j += 1
        return j

    i = skip(i)
    while i < n and s[i] != "}":
        m = _LABEL.match(s, i)
        if m is None:
            raise SelectorError(f"{text!r}: a label name was expected at column {i + 1}")
        name = m.group()
        i = skip(m.end())
        op = next((o for o in _OPS if s.startswith(o, i)), None)
        if op is None:
            raise SelectorError(f"{text!r}: =, !=, =~ or !~ was expected after {name!r} at column {i + 1}")
        i = skip(i + len(op))
        value, i = _string(text, s, i)
        if op in ("=~", "!~"):
            try:
                re.compile(value)
            except re.error as exc:
                raise SelectorError(f"{text!r}: bad regular expression {value!r} for {name}: {exc}") from None
        if name == "__name__":
            raise SelectorError(f"{text!r}: __name__ cannot be chosen (pdwatch picks the vllm: and "
                                f"dynamo_frontend_ metrics itself)")
        matchers.append(Matcher(name, op, value))
        i = skip(i)
        if i < n and s[i] == ",":
            i = skip(i + 1)
        elif i < n and s[i] != "}":
            raise SelectorError(f"{text!r}: ',' or '}}' was expected at column {i + 1}")
    if i >= n:
        raise SelectorError(f"{text!r}: '{{' is never closed with '}}'")
    if s[i + 1:].strip():
        raise SelectorError(f"{text!r}: unexpected text after '}}': {s[i + 1:]!r}")
    return tuple(matchers)


def _string(text: str, s: str, i: int) -> tuple[str, int]:
    if i >= len(s) or s[i] not in "\"'`":
        raise SelectorError(f"{text!r}: a quoted value was expected at column {i + 1}")
    q = s[i]
    j = i + 1
    out: list[str] = []
    while j < len(s):
        ch = s[j]
        if ch == q:
            return "".join(out), j + 1
        if ch == "\\" and q != "`":
            j += 1
            if j >= len(s):
                break
            esc = s[j]
            if esc in _ESCAPES:
                out.append(_ESCAPES[esc])
            elif esc == "x" and re.fullmatch(r"[0-9A-Fa-f]{2}", s[j + 1:j + 3]):
                out.append(chr(int(s[j + 1:j + 3], 16)))
                j += 2
            elif esc in "uU":
                width = 4 if esc == "u" else 8
                digits = s[j + 1:j + 1 + width]
                if not re.fullmatch(rf"[0-9A-Fa-f]{{{width}}}", digits):
                    raise SelectorError(f"{text!r}: bad \\{esc} escape at column {j}")
                out.append(chr(int(digits, 16)))
                j += width
            else:
                raise SelectorError(f"{text!r}: unknown escape \\{esc} at column {j}")
            j += 1
            continue
        out.append(ch)
        j += 1
    raise SelectorError(f"{text!r}: the string starting at column {i + 1} is never closed")


def matches_all(matchers: tuple[Matcher, ...], labels: dict[str, str]) -> bool:
    return all(m.matches(labels) for m in matchers)


def render(matchers: tuple[Matcher, ...] | list[Matcher], name: str = "") -> str:
    """``name{m1,m2}`` in PromQL (``{}`` alone is not a valid selector: give a name or a matcher)."""
    body = ",".join(m.promql() for m in matchers)
    return f"{name}{{{body}}}" if body or not name else name


def labels_text(labels: dict[str, str]) -> str:
    """``{a="1",b="2"}``: a label set written as Prometheus writes one (sorted by name)."""
    return "{" + ",".join(f"{k}={quote(v)}" for k, v in sorted(labels.items())) + "}"
