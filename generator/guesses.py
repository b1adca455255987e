"""The name a user likely meant when they typed one gpudash does not know: one rule for every such message."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: str, known: Iterable[str], quoted: bool = True) -> str:
    """"did you mean 'x'? " for the known name `name` is in another case (`Helm`, `GPU-CLUSTER`), else the one closest
    to it (difflib's ratio of at least 0.6, which tells no case apart), else ""."""
    known = sorted(known)
    close = [one for one in known if one.lower() == name.lower()] or difflib.get_close_matches(name, known, n=1)
    if not close:
        return ""
    return f"did you mean {close[0]!r}? " if quoted else f"did you mean {close[0]}? "
