"""What a check reports; the options every group of checks reads are clients.options.Options.

A check's `cause` tells a caller such as the publish preflight why it failed, so it can act on it:
`no-data` (deployed, nothing arrived yet), `not-deployed`, `unreachable`, `odd-answer`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Callable, Iterator

from .. import redact
from ..clients.answer import OddAnswer

OK, FAIL, WARN, SKIP = "ok", "fail", "warn", "skip"
NO_DATA, NOT_DEPLOYED, UNREACHABLE, ODD_ANSWER = "no-data", "not-deployed", "unreachable", "odd-answer"
SETTING = "setting"  # a local setting missing or wrong (no AWS credentials): nothing remote was asked


@dataclass(frozen=True)
class Check:
    group: str
    name: str
    status: str
    detail: str
    fix: str = ""
    cause: str = ""
    # Why a failure of this check does not stop a publish (the preflight publishes and warns, saying why): the check
    # says so where it is made (`step`), not the preflight by its name; empty: its failure refuses the publish.
    # Not part of what verify reports (as_dict).
    published_anyway: str = field(default="", compare=False)
    # The option or file a failure of cause SETTING names (`--profile (AWS_PROFILE)`): one naming an option is the
    # command's input, a usage error for verify. Not part of what verify reports either.
    where: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        # a URL a user typed may carry credentials; no check ever shows them
        object.__setattr__(self, "detail", redact.text(self.detail))
        object.__setattr__(self, "fix", redact.text(self.fix))

    def as_dict(self) -> dict[str, str]:
        reported = asdict(self)
        del reported["published_anyway"], reported["where"]
        return reported


ODD_FIX = ("this is not what the API answers: check that the URL reaches the API itself (not a proxy or a "
           "login page) and that its version is supported")


def step(group: str, name: str, check: Callable[..., Check | list[Check]], *args: Any,
         published_anyway: str = "") -> Iterator[Check]:
    """Run one check; an answer not shaped as its API promises becomes this check's failure, naming it, and a read the
    API refuses (403: the user's rights) this check's "cannot tell", naming what was refused (it ended the group, every
    check after it unread, for a user with namespace-only rights). `published_anyway`: why none of its failures,
    whichever made it, stops a publish (Check.published_anyway)."""
    made = steps(group, (name,), check, *args)
    return (replace(c, published_anyway=published_anyway) for c in made) if published_anyway else made


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
