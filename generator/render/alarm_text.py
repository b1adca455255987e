"""An alarm's AlarmDescription within CloudWatch's 1,024 characters (UTF-16 units: `length`): `described` lays out
every description gpudash writes, so what matters is never the part cut.

Layout, in order:
1. the alarm's own sentence: its title and what it means (`own`: the definition's description, or what gpudash says a
   rule's second alarm watches);
2. `Runbook: ...`, whole;
3. who made it (markers.ALARM_DESCRIPTION_NOTE, its definition file and rule id), whole: apply and lint read it;
4. the notes: what CloudWatch's form of the rule does otherwise than its Prometheus rule (a clause of one
   `On CloudWatch: a; b.` sentence each, or a sentence of their own), most important first.
When they do not all fit, the notes give way from the last: each in turn to its short form (a few words the file
docs/alarm-notes.md explains), then whole notes are left out, and a mark at the end says so and where
to read them (NOTES_MARK). Nothing is cut inside a note, a runbook or who made it. Only when the alarm's own sentence
and runbook leave no room for the mark is its own sentence cut, at a sentence or word, marked ELIDED (lint AL026 errs);
a title and runbook that cannot fit beside who made it are refused (InputError): CloudWatch would refuse the alarm.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Iterable, Sequence

from ..errors import InputError
from ..markers import ALARM_DESCRIPTION_NOTE
from ..model import Alarm, source_file

DESCRIPTION_LIMIT = 1024  # CloudWatch's longest AlarmDescription, counted in UTF-16 units (`length`)
ELIDED = " [...]"  # where the alarm's own sentence was cut to fit (lint AL026)
RUNBOOK = " Runbook: "
NOTES_DOC = "docs/alarm-notes.md"  # the file explaining every note and its short form
CLOUDWATCH = "On CloudWatch: "  # the sentence holding the clause notes


def length(text: str) -> int:
    """`text`'s length as DESCRIPTION_LIMIT counts it: in UTF-16 units, a character outside Unicode's basic plane (an
    emoji) counting 2. CloudWatch's API model gives the limit as a length (its specification language counts code
    points) and says no more; AWS's services run on Java, whose strings count UTF-16 units. The larger count fits
    either reading: a description of 1,024 units is never more than 1,024 code points. (Counted by the codec: UTF-16
    writes 2 bytes a unit; a lone surrogate, which Python strings may hold, is 1 unit, as Java counts it.)"""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _within(text: str, room: int) -> str:
    """The longest start of `text` whose `length` is at most `room` (never half of a character)."""
    units = 0
    for index, character in enumerate(text):
        units += 2 if character > "\uffff" else 1
        if units > room:
            return text[:index]
    return text


@dataclass(frozen=True)
class Note:
    """One note of a description: `text` whole, `short` the few words it gives way to (empty: none, it is only left
    out), `sentence` a sentence of its own (ending with its own period) rather than a clause of `On CloudWatch:`."""
    text: str
    short: str = ""
    sentence: bool = False


def notes_mark(shortened: int, cut: int) -> str:
    """What the end of a description says when notes gave way: how many were shortened and left out, and where all
    of them are read."""
    said = [f"{shortened} note{'s' if shortened != 1 else ''} shortened"] if shortened else []
    said += [f"{cut} note{'s' if cut != 1 else ''} left out"] if cut else []
    return f" [{', '.join(said)}: {NOTES_DOC}]"


NOTES_MARK = re.compile(r" \[(\d+) notes? shortened(?:, (\d+) notes? left out)?: " + re.escape(NOTES_DOC) + r"\]$"
                        r"| \[(\d+) notes? left out: " + re.escape(NOTES_DOC) + r"\]$")


def made_by(alarm: Alarm) -> str:
    """Who made the alarm, from which definition and rule."""
    return f" {ALARM_DESCRIPTION_NOTE} ({source_file(alarm.defined_at)}, rule {alarm.id})."


def written(notes: Iterable[Note]) -> str:
    """The notes as text: consecutive clauses in one `On CloudWatch: a; b.` sentence, sentences as they are."""
    parts: list[str] = []
    clauses: list[str] = []
    for note in notes:
        if note.sentence:
            if clauses:
                parts.append(f" {CLOUDWATCH}{'; '.join(clauses)}.")
                clauses = []
            parts.append(f" {note.text}")
        else:
            clauses.append(note.text)
    if clauses:
        parts.append(f" {CLOUDWATCH}{'; '.join(clauses)}.")
    return "".join(parts)


def about_notes(about: Sequence[tuple[str, str]]) -> tuple[str, tuple[Note, ...]]:
    """What gpudash writes of what an alarm watches, sentence by sentence with their short forms: its first sentence,
    the alarm's own, and the others as notes (sentences of their own, giving way from the last where there is no
    room: to their short form, then left out)."""
    (first, _), *rest = about
    return first, tuple(Note(sentence, short, sentence=True) for sentence, short in rest)


def described(alarm: Alarm, notes: Iterable[Note] = (), own: str | None = None, title: str | None = None) -> str:
    """The AlarmDescription of `alarm` (the module's layout): `title` (the alarm's unless given), `own` (its
    definition's description unless given), its runbook, who made it and `notes`, within DESCRIPTION_LIMIT."""
    notes = [note for note in notes if note.text]
    head = f"{title or alarm.title}. {(alarm.description if own is None else own).strip()}"
    tail = f"{RUNBOOK}{alarm.runbook.strip()}{made_by(alarm)}"
    if length(head + tail + written(notes)) <= DESCRIPTION_LIMIT:
        return head + tail + written(notes)
    shortened = 0
    for index in reversed(range(len(notes))):  # the last notes give way first: to their short form
        if notes[index].short:
            notes[index] = replace(notes[index], text=notes[index].short)
            shortened += 1
            text = head + tail + written(notes) + notes_mark(shortened, 0)
            if length(text) <= DESCRIPTION_LIMIT:
                return text
    kept = len(notes)
    while kept:  # then whole notes are left out, the last first
        kept -= 1
        cut = len(notes) - kept
        text = head + tail + written(notes[:kept]) + notes_mark(sum(1 for n in notes[:kept] if n.short), cut)
        if length(text) <= DESCRIPTION_LIMIT:
            return text
    mark = notes_mark(0, len(notes)) if notes else ""
    return _own_cut(alarm, head, tail + mark, title or alarm.title)


def _own_cut(alarm: Alarm, head: str, tail: str, title: str) -> str:
    """The alarm's own sentence cut at the last sentence (or word, when no sentence ends in the second half of the
    room) that leaves room for the runbook and who made it, marked ELIDED; refused when not even its title does."""
    if length(head + tail) <= DESCRIPTION_LIMIT:
        return head + tail
    room = DESCRIPTION_LIMIT - length(tail) - length(ELIDED)
    if room < length(title) + 1:
        raise InputError(f"alarm {alarm.id!r}: its title and runbook ({length(alarm.runbook.strip())} characters) with "
                         f"who made it take {length(title) + 1 + length(tail)} of the {DESCRIPTION_LIMIT} characters "
                         f"CloudWatch takes in an AlarmDescription (an emoji counts 2): the runbook would be cut, and "
                         f"CloudWatch refuses a longer one",
                         where=alarm.defined_at,
                         hint="shorten the runbook (link to a page that holds the steps) or the title")
    kept = _within(head, room + 1)  # one more: a sentence or word that ends exactly at the room is whole
    sentence = kept.rfind(". ")
    if sentence >= 0 and length(kept[:sentence]) >= room // 2:
        kept = kept[:sentence + 1]
    else:
        kept = kept[:max(kept.rfind(" "), len(title) + 1)]
    return kept.rstrip() + ELIDED + tail


def own_cut(description: str) -> bool:
    """Whether a description gpudash wrote had its own sentence cut (ELIDED before its runbook): lint AL026."""
    return ELIDED + RUNBOOK in description
