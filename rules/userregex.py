"""Regular expressions written by users (rules files), compiled at load, run with a timeout.

A pattern in a rules file (``count_matching(kind, "regex", w)``) is compiled with the
``regex`` package when the file loads: an invalid one is a load error at ``file:line``
like any other. Every search runs with a timeout (``TIMEOUT_S``), so a catastrophic
pattern such as ``(a+)+$`` on a long line of ``a`` cannot hang pdwatch:

* a line whose search times out counts as not matching, and the first time this happens
  the pattern leaves one notice naming its ``file:line``, its rule and the line;
* after ``MAX_TIMEOUTS`` such lines the pattern is switched off (one more notice): from
  then on the function is unknown, so the rule cannot fire on what the pattern would
  have found, and no time is spent on it.

Results are memoised per line text, so a line is searched once however many times the
rules are evaluated (live, every tick).

Globs (``--prefill/--decode``, topology files) are not regular expressions: Python's
``fnmatch`` translates them with atomic groups and cannot backtrack catastrophically.
"""

from __future__ import annotations

from typing import Any

import regex

TIMEOUT_S = 0.25  # per search of one line
MAX_TIMEOUTS = 3  # slow lines before the pattern is switched off
MAX_PATTERN_CHARS = 1000
_MEMO_MAX = 65_536


class PatternError(ValueError):
    """The text is not a valid pattern; the message says why."""


class UserPattern:
    """One compiled user pattern, with its timeout, its origin and its notices."""

    def __init__(self, text: str, timeout: float | None = None) -> None:
        if len(text) > MAX_PATTERN_CHARS:
            raise PatternError(f"the pattern is longer than {MAX_PATTERN_CHARS} characters")
        try:
            self.compiled = regex.compile(text)
        except (regex.error, ValueError, OverflowError) as exc:
            raise PatternError(f"invalid regular expression {text!r}: {exc}") from None
        self.text = text
        self.timeout = TIMEOUT_S if timeout is None else timeout
        self.origin = ""  # "file:line" of the pattern, set when its rules file is read
        self.rule = ""  # finding id of the rule, set with the origin
        self.timeouts = 0
        self.disabled = False
        self.notices: list[str] = []  # one line each, taken by the rule engine
        self._memo: dict[str, bool] = {}

    def located(self, origin: str, rule: str) -> None:
        self.origin, self.rule = origin, rule

    def search(self, text: Any, where: str = "") -> bool | None:
        """Whether the pattern occurs in ``text``; None once the pattern is switched off.

        ``where`` (``source:line``) names the line in the notice if the search times out.
        """
        if self.disabled:
            return None
        if not isinstance(text, str):
            text = "" if text is None else str(text)
        got = self._memo.get(text)
        if got is not None:
            return got
        try:
            got = self.compiled.search(text, timeout=self.timeout) is not None
        except TimeoutError:
            self._timed_out(text, where)
            return None if self.disabled else False
        if len(self._memo) >= _MEMO_MAX:
            self._memo.clear()
        self._memo[text] = got
        return got

    def _timed_out(self, text: str, where: str) -> None:
        self.timeouts += 1
        self._memo[text] = False  # never searched again
        head = f"{self.origin}: " if self.origin else ""
        rule = f"rule '{self.rule}': " if self.rule else ""
        if self.timeouts == 1:
            on = f" on {where}" if where else ""
            self.notices.append(
                f"{head}{rule}pattern {self.text!r} gave up after {self.timeout:g} s{on} "
                f"(a {len(text):,}-character line); the line counts as not matching")
        if self.timeouts >= MAX_TIMEOUTS:
            self.disabled = True
            self._memo.clear()
            self.notices.append(
                f"{head}{rule}pattern {self.text!r} switched off after {self.timeouts} lines "
                f"took over {self.timeout:g} s each; the rule cannot fire on it (simplify the pattern)")

    def take_notices(self) -> list[str]:
        out, self.notices = self.notices, []
        return out

    def __repr__(self) -> str:
        return f"UserPattern({self.text!r})"
