"""gpudash verify: are the exporter and agents deployed and feeding data?

Four groups of checks (kube, exporter, prometheus, cloudwatch) run concurrently,
each under a time limit. Every failed check says what to fix; an unreachable
system is a failed check, never a crash or a hang.
"""

from __future__ import annotations

import concurrent.futures
from dataclasses import asdict, dataclass
from typing import Callable

from .errors import GpudashError, RemoteError
from .project import Project

GROUPS = ("kube", "exporter", "prometheus", "cloudwatch")
OK, FAIL, WARN, SKIP = "ok", "fail", "warn", "skip"


@dataclass(frozen=True)
class Check:
    group: str
    name: str
    status: str
    detail: str
    fix: str = ""

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass
class Options:
    context: str | None = None  # kubeconfig context
    exporter_url: str | None = None
    prometheus_url: str | None = None
    profile: str | None = None
    endpoint_url: str | None = None
    timeout: float = 10.0  # per group
    prometheus_in_use: bool = True  # the kube group then looks for the scrape config as well


def _runners() -> dict[str, Callable[[Project, Options], list[Check]]]:
    from .checks import cloudwatch, exporter, kube, prometheus

    return {"kube": kube.checks, "exporter": exporter.checks, "prometheus": prometheus.checks,
            "cloudwatch": cloudwatch.checks}


def run(project: Project, options: Options, groups: tuple[str, ...] = GROUPS) -> list[Check]:
    runners = _runners()
    results: list[Check] = []
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=len(groups) or 1)
    futures = {group: pool.submit(runners[group], project, options) for group in groups}
    for group, future in futures.items():
        try:
            results.extend(future.result(timeout=options.timeout))
        except concurrent.futures.TimeoutError:
            results.append(Check(group, "reachable", FAIL, f"no answer within {options.timeout:g} s",
                                 f"check that the {group} endpoint is reachable, or --skip {group}"))
        except GpudashError as exc:
            results.append(Check(group, "reachable", FAIL, exc.what, exc.hint or f"--skip {group} if unused"))
    pool.shutdown(wait=False, cancel_futures=True)
    order = {g: i for i, g in enumerate(GROUPS)}
    return sorted(results, key=lambda c: order[c.group])


def failed(checks: list[Check]) -> list[Check]:
    return [c for c in checks if c.status == FAIL]


def preflight(project: Project, groups: tuple[str, ...], options: Options) -> None:
    """Refuse to publish when the systems feeding the dashboards are not healthy."""
    problems = failed(run(project, options, groups))
    if problems:
        lines = "; ".join(f"{c.group}/{c.name}: {c.detail}" for c in problems)
        raise RemoteError(f"preflight checks failed, nothing was published: {lines}",
                          hint="run `gpudash verify` for the fixes, or --skip-verify to publish anyway")
