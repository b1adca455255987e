"""Work made ahead in a forked child, on the other CPU, while this process does the rest (a large build's Prometheus
rules and their two YAML files: artifacts.build). Each item the child makes comes back through a pipe (pickled, bytes
as they are), in order. The items are the same wherever they are made: where this process cannot fork safely (no
fork, or other threads running, whose locks the copy would inherit), no other CPU is free (spare_cpu), the fork
fails, or the child's answer ends short (an error in it, the child killed), this process makes them itself, from the
first it has not read: an error then is raised here, as without the child.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any, Callable, Iterator


# Linux's prctl option asking the kernel to send a signal to this process when the thread that forked it ends.
PR_SET_PDEATHSIG = 1


def _end_with(parent: int) -> None:
    """In the child: be killed when `parent` ends (on Linux). A generate killed with SIGKILL mid-build runs no clean-up,
    and its child would otherwise go on making rules no one reads, holding the build folder's lock (inherited with the
    descriptor) until it is done. A parent that ended before the request was made (the child then belongs to another
    process already) ends the child here."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # (no prctl: not Linux)
        return
    if os.getppid() != parent:
        os._exit(1)


def can_fork() -> bool:
    return hasattr(os, "fork") and threading.active_count() == 1


# A container's CPU limit (cgroup v2: "<quota> <period>" in microseconds, or "max <period>" without a limit): a process
# allowed two CPUs by its affinity but one CPU's time by its cgroup has no other CPU to give a child.
CPU_MAX = "/sys/fs/cgroup/cpu.max"


def _cpu_limit() -> float | None:
    """The CPUs' worth of time this process's cgroup allows (CPU_MAX), None where it sets no limit or none is read."""
    try:
        with open(CPU_MAX) as limit:
            quota, period = limit.read().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError, ZeroDivisionError):
        return None


def spare_cpu() -> bool:
    """Whether another CPU is likely free for a child: this process may run on two or more (its affinity, and its
    container's CPU limit), and the last minute's load average leaves one of them idle. On a busy machine a child only
    takes turns with this process, and its fork and sending its items back cost more CPU than it takes off (~0.1-0.3 s
    of 1,000 clusters' build)."""
    try:
        cpus = len(os.sched_getaffinity(0))
        limit = _cpu_limit()
        if limit is not None:
            cpus = min(cpus, int(limit))
        return cpus >= 2 and os.getloadavg()[0] < cpus - 0.5
    except (AttributeError, OSError):  # (no affinity or load average here)
        return False


class Ahead:
    """The items `make()` yields, taken one after another (`take`): made in a child from the start when `fork`, else
    here when taken."""

    def __init__(self, make: Callable[[], Iterator[Any]], fork: bool = True):
        self._make = make
        self._taken = 0
        self._here: Iterator[Any] | None = None
        self._pipe = None
        self._pid: int | None = None
        self.forked = False  # whether a child was started
        if fork and can_fork() and spare_cpu():
            self._start()

    def _start(self) -> None:
        import pickle  # (what the items come back as: imported only by a build that forks, before the fork)

        parent = os.getpid()
        reader, writer = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # no process to be had (EAGAIN, ENOMEM): made here instead
            os.close(reader)
            os.close(writer)
            return
        if pid == 0:  # the child: make the items, send each, and end without the parent's exit functions or buffers
            status = 1
            try:
                _end_with(parent)
                os.close(reader)
                with os.fdopen(writer, "wb") as pipe:
                    for item in self._make():
                        # bytes as they are (a file's, megabytes: pickled, each side would copy it once more)
                        raw = type(item) is bytes
                        message = item if raw else pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
                        pipe.write((len(message) << 1 | raw).to_bytes(8, "big"))
                        pipe.write(message)
                        pipe.flush()  # (each as made: the parent may take it while the next is made)
                status = 0
            finally:  # (an error, or the parent gone: the parent makes what it did not get)
                os._exit(status)
        os.close(writer)
        self._pid, self._pipe, self.forked = pid, os.fdopen(reader, "rb"), True

    def take(self) -> Any:
        """The next item: the child's, or made here."""
        if self._pipe is not None:
            header = self._pipe.read(8)
            size, raw = divmod(int.from_bytes(header, "big"), 2)
            message = self._pipe.read(size) if len(header) == 8 else b""
            if len(header) == 8 and len(message) == size:
                self._taken += 1
                if raw:
                    return message
                import pickle  # (imported by _start)

                return pickle.loads(message)
            self.close()  # ended short: made here from here on
        if self._here is None:
            self._here = iter(self._make())
            for _ in range(self._taken):  # (those the child sent, made again to reach the next)
                next(self._here)
        self._taken += 1
        return next(self._here)

    def close(self) -> None:
        """Done with the child: its pipe closed, the child stopped if it has not ended, and collected (its CPU is
        then counted as this process's children's)."""
        if self._pipe is not None:
            self._pipe.close()
            self._pipe = None
        if self._pid is not None:
            pid, self._pid = self._pid, None
            try:
                if os.waitpid(pid, os.WNOHANG) == (0, 0):
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
            except ChildProcessError:
                # (collected already: where SIGCHLD is ignored, as a process may inherit across exec, the kernel reaps
                # every child itself; or a handler of this program's waited for every child. Its items were read,
                # or are made here: its end is no error of this process)
                pass

    def __del__(self) -> None:
        self.close()
