"""The look right before a delete at what people make around an object that its delete takes with it and that no
evidence on the object records (a CloudWatch dashboard's tags, the dashboards that show an alarm; a Grafana
dashboard's public dashboard, permissions, playlists, home dashboards, alert rules): the plan records what it read of
each on the change (UNREAD where it could not), the look reads it again, and the delete goes only where that read
shows nothing the plan did not. --force agrees to what the plan showed, not to what was made since; what the plan
could not read, --force agreed to delete with whatever it was."""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")
UNREAD = "unread"  # what a plan records of a thing it could not read (the look before the delete then reads it again)


def made_since(planned: Any, found: list[T] | None) -> list[T] | str:
    """What a read right before a delete shows against what the plan recorded of the same read (`planned`: the items it
    read, UNREAD where it could not); `found`: the items read now, None where that read failed. UNREAD where it failed
    now and the plan had read it (a failure shows nothing, never "none"); else the items found now that the plan did
    not show: every one where the plan could not read them (it showed none of them). The delete goes where this is
    empty."""
    if found is None:
        return [] if planned == UNREAD else UNREAD
    shown = planned if isinstance(planned, list) else []
    return [item for item in found if item not in shown]
