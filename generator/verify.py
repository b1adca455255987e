"""gpudash verify: are the exporter and agents deployed and feeding data?

Four groups of checks (kube, exporter, prometheus, cloudwatch) run concurrently under one deadline
(`--timeout`, for the whole run). Every failed check says what to fix; an unreachable system, a
slow one or an answer shaped unlike its API is a failed check, never a crash or a hang: when the
deadline passes, verify reports what it has and leaves the workers behind (they are daemon threads,
so they never hold the process).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib
import os
import pickle
import queue
import sys
import threading
from typing import Callable, Iterable

from . import awaiting, redact

from .clients.answer import OddAnswer
from .clients.http import SlowAnswer
from .checks.result import FAIL, NO_DATA, ODD_ANSWER, ODD_FIX, OK, SETTING, SKIP, UNREACHABLE, WARN, Check
from .clients.options import Options
from .errors import EXIT_REMOTE, GpudashError, InputError, RemoteError
from .project import Project

__all__ = ["GROUPS", "OK", "FAIL", "WARN", "SKIP", "Check", "Options", "run", "failed", "preflight"]

GROUPS = ("kube", "exporter", "prometheus", "cloudwatch")
_DONE = object()


def _runners() -> dict[str, Callable[[Project, Options], Iterable[Check]]]:
    """Each group's checks. A group's module is imported by the process that runs the group (`_threads`), not before
    the fork: the parent, whose cloudwatch side is the longer of the two, never imports the child's groups' modules."""
    return {group: functools.partial(_run_group, group) for group in GROUPS}


def _checks_of(group: str) -> Callable[[Project, Options], Iterable[Check]]:
    return importlib.import_module(f"{__package__}.checks.{group}").checks


def _run_group(group: str, project: Project, options: Options) -> Iterable[Check]:
    return _checks_of(group)(project, options)


def _work(group: str, runner, project: Project, options: Options, out: "queue.Queue") -> None:
    """Run one group, sending each check as it is made, then _DONE (or the bug that stopped it)."""
    made = 0
    awaiting.told_to(lambda note: out.put((group, note)))
    try:
        for check in runner(project, options):
            out.put((group, check))
            made += 1
    except GpudashError as exc:
        if isinstance(exc, SlowAnswer) and not exc.answering:  # as if the deadline had come first: one wording
            out.put((group, _unanswered(group, options, made)))
        else:
            out.put((group, Check(group, "reachable", FAIL, exc.what, exc.hint or f"--skip {group} if unused",
                                  cause=UNREACHABLE if exc.exit_code == EXIT_REMOTE else SETTING,
                                  where=exc.where or "")))
    except OddAnswer as odd:
        out.put((group, Check(group, "answers", FAIL, f"odd answer from {odd}", ODD_FIX, cause=ODD_ANSWER)))
    except BaseException as bug:  # a bug in gpudash: the main thread raises it
        out.put((group, bug))
    finally:
        awaiting.told_to(None)
    out.put((group, _DONE))


def _unanswered(group: str, options: Options, made: int, waiting: awaiting.Awaiting | None = None) -> Check:
    """A group still waiting for its first byte at the deadline, whether the run's deadline or the socket's
    timeout (the time left in the run) noticed it first: the machine's load decides which, the check is one.
    A group that told what it waits on (a kubeconfig exec plugin, stopped at the deadline) names it."""
    after = f" (after {made} checks)" if made else ""
    if waiting is not None and waiting.what:
        return Check(group, "reachable", FAIL, f"{waiting.what} did not finish within {options.timeout:g} s and was "
                     f"stopped{after}", waiting.hint, cause=UNREACHABLE)
    return Check(group, "reachable", FAIL, f"no answer within {options.timeout:g} s{after}",
                 f"check that the {group} endpoint is reachable, or --skip {group}", cause=UNREACHABLE)


def _threads(groups: Iterable[str], runners, project: Project, options: Options, out: "queue.Queue") -> None:
    groups = list(groups)
    for group in groups:  # imported here, one after another, before any thread starts (see _BOTH_SIDES)
        if group in GROUPS:
            _checks_of(group)
    for group in groups:
        threading.Thread(target=_work, args=(group, runners[group], project, options, out), daemon=True,
                         name=f"gpudash-verify-{group}").start()


# What several groups' clients import, imported before their threads start: a thread importing a module that another
# is importing can see it half made (requests.utils, which the Kubernetes client's REST layer imports, while the
# prometheus group imports requests: "cannot import name ... from partially initialized module"). Those that botocore's
# side imports too (urllib3 and dateutil, under botocore and the Kubernetes client) are imported before the fork, once
# instead of in each process; requests and multiprocessing.pool (the Kubernetes client's thread pool), which only the
# child's groups use, in the child, while this process imports botocore.
_BOTH_SIDES = ("urllib3", "dateutil.parser", "dateutil.tz", "encodings.idna")  # the codec: see clients/deadline.py
_THREADS = ("requests", "multiprocessing.pool")


def _both_sides(project: Project | None, forked: tuple[str, ...]) -> tuple[str, ...]:
    """What to import before the fork: _BOTH_SIDES, and gpudash's own modules that the cloudwatch group (this process)
    and the kube group (the child) both read, imported once rather than by each process on its own (about 60 ms of
    CPU, which the two processes and the systems answering them share two CPUs for): the data-missing alarm's
    settings and the Kubernetes client's module (its errors), and with the classic agent the agent configuration's
    and the CloudWatch queries' renderers (the published dimension sets here, the ConfigMaps to compare there)."""
    from .container_insights import enabled as addon_source

    if project is None or "kube" not in forked or not project.settings.clusters:
        return _BOTH_SIDES
    shared = ("generator.data_missing", "generator.clients.kube")
    if not addon_source(project.settings):
        shared += ("generator.render.agent", "generator.render.cloudwatch")
    return _BOTH_SIDES + shared


def _import(names: tuple[str, ...]) -> None:
    for name in names:
        with contextlib.suppress(ImportError):  # the group that needs it imports it, and says so
            importlib.import_module(name)


def _child_side(groups: tuple[str, ...]) -> tuple[str, ...]:
    """The groups a child process runs when the cloudwatch group runs beside others: all but cloudwatch. Importing
    botocore and making its client is about half of a run's work; the Kubernetes client's import and reads, and the
    Prometheus and exporter reads (requests), are the other half."""
    return tuple(g for g in groups if g != "cloudwatch") if "cloudwatch" in groups else ()


def _spare_cpu() -> bool:
    """Whether a child would have a CPU of its own (forked.spare_cpu: two or more allowed, the last minute's load
    leaving one idle). On a busy machine it only takes turns with this process, and forking costs CPU of its own: each
    process copies every memory page it then writes (about 6,500 more page faults a run) and the two sides' work is
    no longer shared. At load 12 to 15 on 2 CPUs the run took 0.05 s more CPU with the child than in one process's
    threads (0.37 s against 0.32 s) and more wall time too (1.47 s against 1.08 s, medians of 15)."""
    from . import forked

    return forked.spare_cpu()


def _fork(groups: tuple[str, ...], runners, project: Project, options: Options, out: "queue.Queue") -> int | None:
    """Run `groups` in a child process, on the other CPU while this process imports botocore and runs the rest.
    Their checks (and the secrets the child learnt, to be masked here) come back through a pipe onto `out`. The
    child's pid, or None when this process cannot fork safely (no fork, or other threads running whose locks the
    copy would inherit) or at all."""
    if not hasattr(os, "fork") or threading.active_count() > 1:
        return None
    reader, writer = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # no process to be had (EAGAIN, ENOMEM): the groups run in threads here instead
        os.close(reader)
        os.close(writer)
        return None
    if pid == 0:  # the child: run the groups, send each check, exit without running the parent's cleanup
        import signal

        signal.signal(signal.SIGTERM, _stopped_by_parent)
        os.close(reader)
        atexit._clear()  # the parent's exit functions are the parent's; the child's own run before it ends
        try:
            with os.fdopen(writer, "wb") as pipe:
                local: queue.Queue = queue.Queue()
                _import(_THREADS)
                _threads(groups, runners, project, options, local)
                pending = set(groups)
                while pending:
                    group, item = local.get()
                    if item is _DONE:
                        pending.discard(group)
                        if not pending:  # before the last message: once the parent has it, it stops this process
                            atexit._run_exitfuncs()
                    try:
                        message = pickle.dumps((group, None if item is _DONE else item, sorted(redact.secrets())))
                        if isinstance(item, BaseException):  # a bug: one the parent could not rebuild killed its relay
                            pickle.loads(message)
                    except Exception as exc:  # a bug that cannot be pickled or rebuilt: its text is enough
                        message = pickle.dumps((group, RuntimeError(f"{type(item).__name__}: {item} ({exc})"), []))
                    pipe.write(len(message).to_bytes(8, "big") + message)
                    pipe.flush()
        finally:
            try:  # what the child's clients registered, which os._exit skips (the Kubernetes client removes the
                atexit._run_exitfuncs()  # kubeconfig's certificate and key files it wrote); once, whichever runs them
            finally:
                os._exit(0)
    os.close(writer)
    threading.Thread(target=_relay, args=(reader, groups, out), daemon=True, name="gpudash-verify-relay").start()
    return pid


def _relay(reader: int, groups: tuple[str, ...], out: "queue.Queue") -> None:
    """The child's checks onto `out`; a child gone before its groups ended is a bug (exit 4)."""
    pending = set(groups)
    with os.fdopen(reader, "rb") as pipe:
        while pending:
            header = pipe.read(8)
            size = int.from_bytes(header, "big")
            message = pipe.read(size) if len(header) == 8 else b""
            if len(header) < 8 or len(message) < size:  # the child ended, or was stopped mid-message
                break
            group, item, secrets = pickle.loads(message)
            for value in secrets:
                redact.secret(value)
            if item is None:
                pending.discard(group)
            out.put((group, _DONE if item is None else item))
    for group in sorted(pending):
        out.put((group, RuntimeError(f"the {group} checks ended without an answer")))


def _reap(pid: int) -> None:
    """The child is not awaited beyond the deadline: told to stop (SIGTERM: it stops the kubeconfig exec plugin it
    may still be waiting for), killed if it has not within a moment, then collected."""
    import signal
    import time

    if os.waitpid(pid, os.WNOHANG) != (0, 0):
        return
    os.kill(pid, signal.SIGTERM)
    ends = time.monotonic() + 0.5
    while time.monotonic() < ends:
        if os.waitpid(pid, os.WNOHANG) != (0, 0):
            return
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def _stopped_by_parent(number, frame) -> None:
    """The child's SIGTERM: the parent is done waiting; leave no exec plugin behind (nor the kubeconfig's key files
    its client's exit functions remove), and end at once."""
    try:
        _stop_exec_plugins()
        atexit._run_exitfuncs()
    finally:
        os._exit(0)


def _stop_exec_plugins() -> None:
    """Kill the exec plugins this process still waits for, when its Kubernetes client was made at all. The module may
    be half-imported by a group's thread the deadline came before: until it defines stop_exec_plugins it has started
    no plugin."""
    stop = getattr(sys.modules.get("generator.clients.kube"), "stop_exec_plugins", None)
    if stop is not None:
        stop()


def run(project: Project, options: Options, groups: tuple[str, ...] = GROUPS, *,
        processes: bool = False) -> list[Check]:
    """Every check of `groups`, each group concurrently. With `processes`, where another CPU is free (`_spare_cpu`),
    the groups other than cloudwatch run in a child process, on that CPU (each side imports a client that is most of
    its work: botocore here, the Kubernetes client and requests there)."""
    runners = _runners()
    if not options.deadline:
        options.start()
    out: queue.Queue = queue.Queue()
    results: dict[str, list[Check]] = {group: [] for group in groups}
    forked = _child_side(groups) if processes and _spare_cpu() else ()
    if len(groups) > 1:
        _import(_both_sides(project, forked))
    child = _fork(forked, runners, project, options, out) if forked else None
    if child is None and len(groups) > 1:
        _import(_THREADS)
    _threads([g for g in groups if child is None or g not in forked], runners, project, options, out)
    pending = set(groups)
    waiting: dict[str, awaiting.Awaiting] = {}
    try:
        while pending:
            try:
                group, item = out.get(timeout=max(0.0, options.remaining()))
            except queue.Empty:
                break
            if item is _DONE:
                pending.discard(group)
            elif isinstance(item, awaiting.Awaiting):
                waiting[group] = item
            elif isinstance(item, BaseException):
                raise item
            else:
                results[group].append(item)
    finally:
        if child is not None:
            _reap(child)
        _stop_exec_plugins()  # one the run's deadline came before (threads here): not left running
    for group in pending:  # still waiting on an answer at the deadline: not awaited any longer
        results[group].append(_unanswered(group, options, len(results[group]), waiting.get(group)))
    return [check for group in GROUPS if group in results for check in results[group]]


def failed(checks: list[Check]) -> list[Check]:
    return [c for c in checks if c.status == FAIL]


# What `push` (prometheus group) and `apply` (cloudwatch group) need to see in the kube group before they
# publish for data that has not arrived yet: the exporter, and the path its data takes, deployed and ready.
def _ready_checks(group: str, project: Project | None = None) -> tuple[str, ...]:
    from .checks.kube import ADDON_READY, AGENT_READY, EXPORTER_READY, SCRAPE_READY
    from .container_insights import enabled

    if group == "cloudwatch" and project is not None and enabled(project.settings):
        return ADDON_READY  # the add-on's agent and its own DCGM exporter
    return EXPORTER_READY + (SCRAPE_READY if group == "prometheus" else AGENT_READY)


def _scrape_job_path(project: Project, options: Options) -> Check:
    """The other supported way Prometheus scrapes the exporter, gpudash's job in additionalScrapeConfigs:
    deployed when Prometheus has the job and has discovered its targets (scraped yet or not)."""
    from .checks.prometheus import scrape_job

    return scrape_job(project, Options(prometheus_url=options.prometheus_url, timeout=max(1.0, options.remaining())))


def _wait_hint(project: Project, group: str) -> str:
    from .checks.cloudwatch import LISTING_DELAY_MINUTES

    from .container_insights import enabled, gpu_interval

    interval = project.settings.scrape.interval
    if group == "cloudwatch" and enabled(project.settings):
        return (f"expect metrics within about {LISTING_DELAY_MINUTES} minutes: the add-on collects GPU metrics every "
                f"{gpu_interval(project.settings)} s (cloudwatch.addon_gpu_interval), and CloudWatch lists a new metric up to {LISTING_DELAY_MINUTES} minutes after its first "
                f"data point")
    if group == "prometheus":
        return (f"expect series within a few minutes: Prometheus loads a new ServiceMonitor or scrape job on its "
                f"next configuration reload, then scrapes every {interval}")
    return (f"expect metrics within about {LISTING_DELAY_MINUTES} minutes: the agent scrapes every {interval} and "
            f"flushes every {project.settings.agent.force_flush_interval} s, and CloudWatch lists a new metric "
            f"up to {LISTING_DELAY_MINUTES} minutes after its first data point")


def _pinned_queries(problems: list[Check], dashboards: dict[str, dict] | None) -> tuple[list[Check], list[str]]:
    """The preflight's failures with the `PromQL @ and negative offset` one judged by the dashboards to publish: kept,
    naming the panels that use either, when there are such panels (or the dashboards are unknown); else left out and
    returned as a warning."""
    from .checks.prometheus import GROUP, PINNED, pinned_panels

    pinned = next((c for c in problems if c.group == GROUP and c.name == PINNED), None)
    if pinned is None or dashboards is None:
        return problems, []
    rest = [c for c in problems if c is not pinned]
    panels = pinned_panels(dashboards)
    if not panels:
        return rest, [f"{pinned.detail}; no query of the {len(dashboards)} dashboard(s) published uses `@` or a "
                      f"negative offset, so they are published anyway; before adding one: {pinned.fix}"]
    named = ", ".join(panels[:3]) + (f" and {len(panels) - 3} more" if len(panels) > 3 else "")
    kept = Check(pinned.group, pinned.name, pinned.status, f"{pinned.detail}; {len(panels)} panel(s) of the "
                 f"dashboards to publish use them: {named}", pinned.fix, pinned.cause)
    return [kept if c is pinned else c for c in problems], []


def _published_anyway(problems: list[Check]) -> tuple[list[Check], list[str]]:
    """The preflight's failures without those of checks whose failure does not stop a publish (Check.published_anyway:
    `counter recording rules`, whose rate panels draw once their rule group is loaded), each returned as a warning
    saying why."""
    return ([c for c in problems if not c.published_anyway],
            [f"{c.detail}; published anyway ({c.published_anyway}): {c.fix}" for c in problems if c.published_anyway])


def _not_ready(check: Check) -> str:
    """What a check the publish needs says of the deployment: one that could not read it cannot tell whether it is
    deployed (said once, where its detail says it cannot tell already)."""
    if check.cause not in (UNREACHABLE, ODD_ANSWER):
        return check.detail
    detail = check.detail.removeprefix("cannot tell: ")
    return detail if detail.startswith("cannot tell ") else f"cannot tell whether it is deployed: {detail}"


def preflight(project: Project, groups: tuple[str, ...], options: Options,
              dashboards: dict[str, dict] | None = None) -> list[str]:
    """Refuse to publish when the systems feeding the dashboards are not healthy (all within options.timeout).

    `PromQL @ and negative offset` failed refuses the publish only when `dashboards` (uid -> the JSON to publish)
    hold a query using either, naming its panels (unknown dashboards: refused); otherwise it is a warning.

    When the only failures are "no data yet", the kube group decides: with the exporter and the path its
    data takes deployed and ready, publishing goes ahead and the warnings returned say how long to wait;
    otherwise (or when the cluster cannot be read) it is refused. Prometheus' data path is deployed when
    a ServiceMonitor selects the exporter, or, without one, when Prometheus has gpudash's scrape job
    (additionalScrapeConfigs) and has discovered the exporter's targets."""
    from .checks.kube import SCRAPE_READY

    problems = failed(run(project, options, groups))
    problems, warnings = _pinned_queries(problems, dashboards)
    problems, anyway = _published_anyway(problems)
    warnings += anyway
    if not problems:
        return warnings
    reasons = "; ".join(f"{c.group}/{c.name}: {c.detail}" for c in problems)
    unset = next((c for c in problems if c.cause == SETTING), None)
    if unset is not None:  # nothing remote failed: a setting is missing, which --skip-verify would not mend
        raise InputError(f"cannot check before publishing, nothing was published: {unset.group}/{unset.name}: "
                         f"{unset.detail}", hint=unset.fix)
    if any(c.cause != NO_DATA for c in problems):
        raise RemoteError(f"preflight checks failed, nothing was published: {reasons}",
                          hint="run `gpudash verify` for the fixes, or --skip-verify to publish anyway")
    kube_options = Options(context=options.context, timeout=max(1.0, options.remaining()),
                           prometheus_in_use="prometheus" in groups)  # what is left of the same time
    kube = {c.name: c for c in run(project, kube_options, ("kube",))}
    needed = [name for group in groups for name in _ready_checks(group, project)]
    not_ready = [kube.get(name) or Check("kube", name, FAIL, "not checked") for name in needed
                 if name not in kube or kube[name].status != OK]
    if any(c.name in SCRAPE_READY for c in not_ready):  # no ServiceMonitor: is the scrape job path deployed?
        job = _scrape_job_path(project, options)
        not_ready = [c for c in not_ready if c.name not in SCRAPE_READY] if job.status == OK else not_ready + [job]
    if not_ready:
        evidence = "; ".join(f"{c.group}/{c.name}: {_not_ready(c)}" for c in not_ready)
        if "reachable" in kube and kube["reachable"].status == FAIL:
            evidence = f"cannot tell whether it is deployed: {kube['reachable'].detail}"
        raise RemoteError(f"preflight checks failed, nothing was published: {reasons}; and not deployed and ready "
                          f"({evidence})",
                          hint="deploy what is missing and run `gpudash verify`; --skip-verify publishes anyway")
    from .checks.kube import NO_GPU_NODE

    idle = "exporter pods ready" in kube and kube["exporter pods ready"].detail == NO_GPU_NODE
    return warnings + [f"no data yet in {group} ({'; '.join(c.detail for c in problems if c.group == group)}), but "
                       f"the exporter and its data path are deployed and ready, so this is published anyway; "
                       + ("no GPU node runs now (a node group scaled to zero): metrics come once GPU nodes join and "
                          "their exporter pods start" if idle else _wait_hint(project, group))
                       + "; then run `gpudash verify`"
                       for group in dict.fromkeys(c.group for c in problems)]
