"""The two errors a rule author sees: a bad expression, and a bad rules file."""

from __future__ import annotations

from dataclasses import dataclass


class RuleSyntaxError(ValueError):
    """A problem in one expression; ``column`` is 1-based within the expression text."""

    def __init__(self, message: str, column: int) -> None:
        super().__init__(f"{message} (column {column})")
        self.message = message
        self.column = column


@dataclass(frozen=True)
class RuleProblem:
    path: str
    line: int | None  # 1-based; None when the file could not be read at all
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.message}"


class RuleFileError(ValueError):
    """Every problem found in the rules files, one ``file:line: problem`` per line."""

    def __init__(self, problems: list[RuleProblem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems
