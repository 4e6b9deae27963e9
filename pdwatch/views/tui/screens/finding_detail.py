"""The finding detail screen: explanation, evidence lines (literal text), fix.

Opened on a group of identical findings, it names every endpoint of the group (each with its
period) and shows the explanation and fix once. Each evidence line takes the focus (tab, up/down):
Enter opens its log at ``source:line`` in context (``LogViewerScreen``). The values the rule read
are in bold on the quoted stats lines. A group shows the evidence of its first endpoint; ``x`` on
the findings table expands the group, and each endpoint's row opens its own.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from pdwatch.session.snapshot import Evidence, FindingRow

from ..widgets.format import log_text, severity, time_text


class EvidenceLine(Static, can_focus=True):
    """One quoted line; Enter opens its log there."""

    BINDINGS = [Binding("enter", "open", "open log"),
                Binding("down", "move(1)", "next line", show=False),
                Binding("up", "move(-1)", "previous line", show=False)]
    DEFAULT_CSS = """
    EvidenceLine { color: $text-muted; }
    EvidenceLine:focus { background: $boost; color: $text; }
    """

    class Open(Message):
        def __init__(self, evidence: Evidence) -> None:
            super().__init__()
            self.evidence = evidence

    def __init__(self, evidence: Evidence, **kwargs) -> None:
        super().__init__(evidence_text(evidence), **kwargs)
        self.evidence = evidence

    def action_open(self) -> None:
        self.post_message(self.Open(self.evidence))

    def action_move(self, delta: int) -> None:
        lines = list(self.screen.query(EvidenceLine))
        i = lines.index(self) + delta
        if 0 <= i < len(lines):
            lines[i].focus()
            lines[i].scroll_visible(animate=False)


def evidence_text(e: Evidence) -> Text:
    line = Text(f"{e.source}:{e.line_no}", style="dim")
    line.append("  ")
    body = log_text(e.text)
    for a, b in e.marks:
        if 0 <= a < b <= len(e.text) and log_text(e.text[:a]).plain == e.text[:a]:
            body.stylize("bold underline", a, b)  # the values the rule read (offsets hold: no control before)
    line.append_text(body)
    return line


class FindingDetail(ModalScreen):
    BINDINGS = [Binding("escape,q,enter", "dismiss", "close")]
    DEFAULT_CSS = """
    FindingDetail { align: center middle; }
    FindingDetail > VerticalScroll { width: 95%; height: 90%; border: thick $primary; background: $surface;
                                     padding: 0 1; }
    FindingDetail .heading { text-style: bold; margin-top: 1; }
    FindingDetail .evidence { color: $text-muted; }
    """

    def __init__(self, finding: FindingRow, members: list[FindingRow] | None = None, label: str | None = None) -> None:
        """``members`` and ``label``: a group of the diagnosis (its findings, its endpoints said short)."""
        super().__init__()
        self.finding = finding
        self.members = list(members or [finding])
        self.label = label

    def compose(self) -> ComposeResult:
        f = self.finding
        group = len(self.members) > 1
        title = severity(f.severity)
        title.append(" ")
        title.append(f.rule, style="bold")
        title.append(" on ")
        if group:
            title.append(self.label or ", ".join(m.endpoint or "the deployment" for m in self.members))
            title.append(f" ({len(self.members)} endpoints)")
        else:
            title.append(f.endpoint or "the deployment")
            if f.engines:
                title.append(f" (engines {', '.join(map(str, f.engines))})")
            title.append(f"  since {time_text(f.start)}")
            if f.end is not None:
                title.append(f", resolved {time_text(f.end)}")
        with VerticalScroll():
            yield Static(title, id="detail-title")
            yield Static(Text(f.summary), id="detail-summary")
            if group:
                members = Text()
                for i, m in enumerate(self.members):
                    members.append(f"  {m.endpoint or 'the deployment'}", style="bold")
                    members.append(f"  since {time_text(m.start)}: ", style="dim")
                    members.append(m.summary)
                    if i < len(self.members) - 1:
                        members.append("\n")
                yield Static("Endpoints", classes="heading", markup=False)
                yield Static(members, id="detail-members")
            if f.explanation:
                yield Static("Why" + (f" (as on {f.endpoint}; the others alike)" if group else ""),
                             classes="heading", markup=False)
                yield Static(Text(f.explanation), id="detail-explanation")
            yield Static("Evidence (Enter on a line opens its log there; in bold: the values the rule read)",
                         classes="heading", markup=False)
            quotes = list(f.evidence)  # a group: those of the endpoint it is shown for (x expands the others)
            if not quotes:
                yield Static("(no lines quoted)", markup=False)
            for i, e in enumerate(quotes):
                yield EvidenceLine(e, classes="evidence", id=f"evidence-{i}")
            yield Static("Fix" + (f" (as for {f.endpoint}; the others alike)" if group else ""),
                         classes="heading", markup=False)
            yield Static(Text(f.recommendation), id="detail-fix")
        yield Footer()

    def on_mount(self) -> None:
        lines = list(self.query(EvidenceLine))
        if lines:
            lines[0].focus()
