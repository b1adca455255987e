"""Listing again a listing that may lag the writes of a moment ago, before it is believed to hold only some objects.

CloudWatch's listings (ListDashboards, DescribeAlarms) are eventually consistent, and so is Grafana's search (its index
behind its database): one made just after a write (a `plan` right after an `apply` or `push`) may leave out what that
write made, and an object no longer defined as well. An object read by name that a listing leaves out is listed
again: at once (an object made between the listing and its read), then after each of RELIST_WAITS, on the deadline's
clock and within the deadline. The listing gone on with holds every object a read by name or an earlier listing showed
(a listing again that holds the objects the first left out but leaves out others the first held, as one answered by
another replica may, is as far behind). A listing that never holds them all holds only some of the objects, and a
prune is refused: a gap is never read as "nothing there to prune".
"""

from __future__ import annotations

from typing import Any, Callable, Collection, Hashable

from ..clients.deadline import Deadline
from ..errors import RemoteError

# Seconds waited before each listing again: at once, then 30 s in all. Neither AWS nor Grafana documents a bound on
# the lag; a listing behind the writes of a moment ago catches up within seconds, and waiting longer delays a plan that
# will fail anyway.
RELIST_WAITS = (0.0, 1.0, 2.0, 4.0, 8.0, 15.0)
ONCE = RELIST_WAITS[:1]  # where nothing deleted depends on the listing (a note): once more, at once


def listed_again(deadline: Deadline, missing: list[Hashable], relist: Callable[[], Collection[Hashable]],
                 failure: Callable[[list[Hashable], int], RemoteError],
                 waits: tuple[float, ...] = RELIST_WAITS, held: Collection[Hashable] = (),
                 still: Callable[[list[Hashable]], Collection[Hashable]] = lambda items: items,
                 ) -> tuple[list[Hashable], Any]:
    """The items the last listing (`relist()`, once after each of `waits`) leaves out of `missing` (those the first
    listing left out, which reads by name show) and `held` (those it held), and that listing: ([], it) at the first
    listing that holds them all. One of `held` a listing leaves out is read by name first (`still(items)`: those of
    them that are still there), and waited for only if it is still there: the first listing may have been behind a
    delete as well. A wait that would outlive the deadline ends the command with `failure(items left out, listings
    again made)`."""
    listing: Any = None
    wanted = list(dict.fromkeys([*missing, *held]))
    held = set(held) - set(missing)
    for count, wait in enumerate(waits, start=1):
        if wait > 0:
            error = failure(missing, count - 1)
            deadline.pause(wait, error.where, error)
        listing = relist()
        missing = [item for item in wanted if item not in listing]
        unread = [item for item in missing if item in held]
        if unread:
            held -= set(unread)  # read once: there, it is waited for as one a read by name shows
            gone = set(unread) - set(still(unread))
            wanted = [item for item in wanted if item not in gone]
            missing = [item for item in missing if item not in gone]
        if not missing:
            return [], listing
    return missing, listing


def listings(again: int) -> str:
    """How many listings were made, and over how long: the first and `again` listings again."""
    seconds = sum(RELIST_WAITS[:again])
    return f"in {again + 1} listings" + (f" over {seconds:g} s" if seconds else "")
