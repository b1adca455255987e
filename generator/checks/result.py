"""What a check reports; the options every group of checks reads are clients.options.Options.

A check's `cause` tells a caller such as the publish preflight why it failed, so it can act on it:
`no-data` (deployed, nothing arrived yet), `not-deployed`, `unreachable`, `odd-answer`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterator

from .. import redact
from ..clients.answer import OddAnswer

OK, FAIL, WARN, SKIP = "ok", "fail", "warn", "skip"
NO_DATA, NOT_DEPLOYED, UNREACHABLE, ODD_ANSWER = "no-data", "not-deployed", "unreachable", "odd-answer"


@dataclass(frozen=True)
class Check:
    group: str
    name: str
    status: str
    detail: str
    fix: str = ""
    cause: str = ""

    def __post_init__(self) -> None:
        # a URL a user typed may carry credentials; no check ever shows them
        object.__setattr__(self, "detail", redact.text(self.detail))
        object.__setattr__(self, "fix", redact.text(self.fix))

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


ODD_FIX = ("this is not what the API answers: check that the URL reaches the API itself (not a proxy or a "
           "login page) and that its version is supported")


def step(group: str, name: str, check: Callable[..., Check | list[Check]], *args: Any) -> Iterator[Check]:
    """Run one check; an answer not shaped as its API promises becomes this check's failure, naming it, and a read the
    API refuses (403: the user's rights) this check's "cannot tell", naming what was refused (it ended the group, every
    check after it unread, for a user with namespace-only rights)."""
    return steps(group, (name,), check, *args)


def steps(group: str, names: tuple[str, ...], check: Callable[..., Check | list[Check]], *args: Any) -> Iterator[Check]:
    """`step` for a check that makes several (`names`, the first its own): a refused read it needs is each one's
    "cannot tell"."""
    from ..clients.kube import KubeRefused

    try:
        outcome = check(*args)
    except OddAnswer as odd:
        yield Check(group, names[0], FAIL, f"odd answer from {odd}", ODD_FIX, cause=ODD_ANSWER)
        return
    except KubeRefused as refused:
        yield from (cannot_tell(group, name, refused) for name in names)
        return
    yield from (outcome if isinstance(outcome, list) else [outcome])


def cannot_tell(group: str, name: str, refused: Any) -> Check:
    """The check `name` where the API refused a read it needs (`refused`, clients.kube.KubeRefused: the user's rights):
    it cannot tell, and says what was refused."""
    return Check(group, name, FAIL, f"cannot tell: {refused.what}", refused.hint or "", cause=UNREACHABLE)
