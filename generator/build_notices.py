"""What `generate` says of the build beside writing it: warnings (something to do) and notes (what the build leaves out
and why). Text mode prints each on stderr; `--output json` gives each to a machine reader too, in its answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from . import printed


@dataclass(frozen=True)
class Notice:
    level: str  # "warning" or "note"
    message: str  # the whole line after "warning: " / "note: "
    fix: str | None = None
    rule: str | None = None  # the lint rule that says it too
    where: str | None = None  # the file, definition or setting it is about, where one is named

    def text(self) -> str:
        """As stderr shows it: one line (what a definition or the CSV wrote escaped), then its fix."""
        return (f"{self.level}: {printed.text(self.message)}" + (f" (lint {self.rule})" if self.rule else "")
                + (f"\n  fix: {self.fix}" if self.fix else ""))

    def as_dict(self) -> dict[str, str | None]:
        return {"message": self.message, "where": self.where, "fix": self.fix, "rule": self.rule}


def of_notes(notes: Iterable) -> list[Notice]:
    """The build's own notes (artifacts.Note: DF001, DF002, CW013, AL027...) as notices, in this order: the panels left
    out, the alarms left out (each watches nothing), the dashboards left with no panel (a warning, with what to do),
    then the others."""
    from .artifacts import EMPTY_DASHBOARD_FIX

    notes = list(notes)
    alarms = [n for n in notes if n.rule == "DF001" and n.message.startswith("alarm ")]
    return ([Notice("note", n.message, rule="DF001", where=n.where) for n in notes if n.rule == "DF001"
             and n not in alarms]
            + [Notice("note", f"{n.message}: no CloudWatch alarm and no Prometheus rule", rule="DF001", where=n.where)
               for n in alarms]
            + [Notice("warning", n.message, EMPTY_DASHBOARD_FIX, "DF002", n.where) for n in notes if n.rule == "DF002"]
            + [Notice("note", n.message, rule=n.rule, where=n.where) for n in notes
               if n.rule not in ("DF001", "DF002")])


def printed_lines(notices: list[Notice]) -> list[str]:
    """What stderr shows, in order: the panels left out (DF001 but alarms) counted in one note where the first of them
    would be (`gpudash lint` lists each)."""
    left_out = [n for n in notices if n.rule == "DF001" and not n.message.startswith("alarm ")]
    lines = []
    for notice in notices:
        if notice.rule == "DF001" and not notice.message.startswith("alarm "):
            if notice is left_out[0]:
                lines.append(f"note: {len(left_out)} panel(s) left out because the counters CSV does not collect their "
                             f"fields; `gpudash lint` lists them (DF001)")
            continue
        lines.append(notice.text())
    return lines
