"""A real Prometheus (Debian's package) started on 127.0.0.1 for a test, and its HTTP API."""

from __future__ import annotations

import atexit
import functools
import json
import re
import shutil
import struct
import subprocess
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import pytest
import yaml

from generator.preview.sample import free_port, start  # free_port: moto_server and tests import it from here

QUERY_TIMEOUT_S = 60  # a query answered slower than this is a hang, not load
INSTANT_READERS = 4  # Prometheus.query_at: the instant queries of a pinned expression asked at once
# an instant pinned to a query's end or start (`@ end()`, `@ start()`): a range query reads it at its own, once
PINNED = re.compile(r"@\s*(?:start|end)\(\)")
# the pins a range panel's target writes (promql.gpus_named's names over the dashboard's range and the look-back
# before it: `present_over_time(selector[window] @ end())`, no offset), which Grafana's range query reads at the
# range's ends as query_at's range query does; any other pin (a subquery's, one with an offset, another function's:
# a rule's, an instant panel's increase over the range) is read once an evaluation
RANGE_PINS = re.compile(r"""present_over_time\(\s*(?:[A-Za-z_:][\w:]*)?\s*"""
                        r"""(?:\{(?:[^{}"'`]|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)*\})?\s*"""
                        r"""\[[^\[\]:]+\]\s*@\s*(?:start|end)\(\)\s*\)""")

if TYPE_CHECKING:
    import requests


def binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        if __import__("os").environ.get("CI"):
            pytest.fail(f"{name} is not installed: `make test` installs Debian's prometheus package")
        pytest.skip(f"{name} is not installed (apt-get install prometheus)")
    return path


# `stored_until` looks this far back before every target has been scraped: every scrape that started before then has
# ended and been stored by now (the tests scrape with timeouts of at most a second), so no late sample changes what it
# saw.
SCRAPES_ENDED = 5.0
READY_WITHIN = 120.0  # bounds a start that would never end; a busy machine may take long to start it


class Prometheus:
    def __init__(self, workdir: Path, config: dict[str, Any], flags: tuple[str, ...] = ()):
        self.workdir = workdir
        self.flags = flags  # more command-line flags (a benchmark's longer --query.timeout); never a spare's
        self.config_path = workdir / "prometheus.yml"
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None
        self.log = None
        self.session: requests.Session | None = None
        self.answers: dict[tuple, str] | None = None  # remember_answers: a query's answer by its path and parameters

    def remember_answers(self) -> None:
        """From now on a query at given instants (an instant query's `time`, a range query's `start` and `end`) asked
        again with the same expression is answered as Prometheus answered it the first time, without asking again.
        For a server whose stored data before those instants no longer changes (it scrapes nothing more: its own
        later rule evaluations are stamped later) and whose tests ask the same query at the same instants from several
        tests (the same panel on several dashboards, a build whose panel reads alike with another setting). Never
        for a test that asks again on purpose (a tie Prometheus may break anew at each evaluation). What is remembered
        is forgotten whenever the server's data or rules may change (a start or restart, a reload: _forget)."""
        self.answers = {}

    def _forget(self) -> None:
        """Forget the remembered answers (remember_answers), still remembering from now on: the server was started
        again (recorded's blocks, recorded_live's writes) or reloaded (stop_scraping, evaluate_every)."""
        if self.answers is not None:
            self.answers = {}

    def start(self) -> "Prometheus":
        """Start and wait until ready (on another free port if the chosen one was taken meanwhile). A server that
        scrapes and starts on no stored data is the spare (SPARES) given this configuration, when one is kept."""
        self._forget()
        if self._scrapes_from_nothing() and not self.flags:
            taken = SPARES.take()
            if taken is not None and self._adopt(*taken):
                return self
        # a restart keeps the storage of the server before it (a spare's own folder, where it was adopted)
        args = [f"--config.file={self.config_path}", f"--storage.tsdb.path={self.config_path.parent / 'data'}",
                "--web.enable-lifecycle", *self.flags]
        self.process, self.url, self.log = start(binary("prometheus"), args, self.workdir / "prometheus.log",
                                                 READY_WITHIN, "prometheus")
        self.port = int(self.url.rsplit(":", 1)[1])
        return self

    def _scrapes_from_nothing(self) -> bool:
        """Scrape jobs and no stored data (a backfilled server's blocks are written before it starts), every file the
        configuration names by an absolute path (a relative one is read from the folder of the configuration). A
        server restarted after a spare was adopted has the spare's data: it is restarted on it, not given another
        spare (a restart's story, the series from before it, was lost)."""
        config = yaml.safe_load(self.config_path.read_text())
        files = [*config.get("rule_files", ()), *(name for job in config.get("scrape_configs", ())
                                                  for sd in job.get("file_sd_configs", ()) for name in sd["files"])]
        return bool(config.get("scrape_configs")) and not (self.config_path.parent / "data").exists() \
            and all(Path(name).is_absolute() for name in files)

    def _adopt(self, process: subprocess.Popen, url: str, log, folder: Path) -> bool:
        """Give the spare started in `folder` this configuration (a reload: it answers once applied) and take it as
        this server; False (the spare stopped) where the reload is refused: a start reports why."""
        import requests

        config_path = folder / "prometheus.yml"
        config_path.write_text(self.config_path.read_text())
        try:
            answer = requests.post(f"{url}/-/reload", timeout=60)
        except requests.RequestException:
            answer = None
        if answer is None or answer.status_code != 200:
            _stop(process, log)
            return False
        self.config_path, self.process, self.url, self.log = config_path, process, url, log
        self.port = int(url.rsplit(":", 1)[1])
        return True

    def stop(self) -> None:
        _stop(self.process, self.log)
        if self.session is not None:
            self.session.close()

    def stop_scraping(self) -> None:
        """Scrape nothing from now on (the configuration reloaded without its scrape jobs): the samples stored stay
        and the series end now, so a query at an earlier instant reads what it read before. Every scrape is stored
        when this returns: the reload answers once the scrape loops of the removed jobs have stopped, each after
        storing the scrape it was in (cancelled: a failed scrape), and a loop stopped so writes nothing later (no
        end-of-run staleness markers: its pool's context is cancelled)."""
        config = yaml.safe_load(self.config_path.read_text())
        config["scrape_configs"] = []
        self.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
        self._reload()

    def evaluate_every(self, interval: str) -> None:
        """Every rule group of the configuration's rule files evaluated every `interval` from now on (a reload: a
        group of the same name and rules keeps the series it records, no staleness marker is written). For a server
        whose tests read only whether a recording is written (within the 5-minute look-back), once it is: a group of
        gpudash's counter recordings costs the server about 0.2 CPU-s an evaluation."""
        for name in yaml.safe_load(self.config_path.read_text()).get("rule_files", ()):
            path = Path(name) if Path(name).is_absolute() else self.config_path.parent / name  # as Prometheus reads it
            groups = yaml.safe_load(path.read_text())["groups"]
            path.write_text(yaml.safe_dump({"groups": [{**group, "interval": interval} for group in groups]},
                                           sort_keys=False))
        self._reload()

    def _reload(self) -> None:
        import requests

        self._forget()

        response = requests.post(f"{self.url}/-/reload", timeout=60)
        assert response.status_code == 200, response.text

    def api(self, path: str, _via: "requests.Session | None" = None, **params) -> Any:
        """GET /api/v1/`path`; a query is POSTed (its expression is the form's body, not a long URL to encode).
        `_via`: a session of the caller's own (a thread of _instants), else the server's one."""
        if self.session is None:
            self.session = _session()  # one connection for the server's many queries
        session = _via or self.session
        key = (path, tuple(sorted((k, str(v)) for k, v in params.items())))
        fixed = self.answers is not None and path.startswith("query") and ("time" in params or "end" in params)
        if fixed and key in self.answers:
            return json.loads(self.answers[key])["data"]  # parsed anew: no caller changes what a later one reads
        # a generous read timeout: on a loaded 2-core machine one exact query at a whole fleet took over 10 s
        if path.startswith("query"):
            response = session.post(f"{self.url}/api/v1/{path}", data=params, timeout=QUERY_TIMEOUT_S)
        else:
            response = session.get(f"{self.url}/api/v1/{path}", params=params, timeout=QUERY_TIMEOUT_S)
        body = response.json()
        if body.get("status") != "success":
            raise AssertionError(f"{path} {params}: {body}")
        if fixed:
            self.answers[key] = response.text
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """An instant query, now or at the time `at` (seconds since the epoch)."""
        return self.api("query", query=expr, **({"time": at} if at is not None else {}))["result"]

    def query_at(self, expr: str, first: float, count: int, step: float,
                 instant: bool = False) -> dict[float, list[dict[str, Any]]]:
        """The instant query's result at each of `count` times `step` apart from `first`: {time: [{"metric", "value"},
        ...]}. In one range query, which Prometheus evaluates as an instant query at each of its steps, but for `@
        end()` and `@ start()`: a range query reads them at its own end and start at every step, an instant query at
        its instant. So an expression pinned so is read by an instant query at each time (_instants) where
        * `instant`: it is evaluated as an instant query (a rule's expression, as Prometheus evaluates a rule; an
          instant panel's target, as Grafana reads it at the end of a dashboard's range ending at each time);
        * or it pins anything else than a range panel's naming over the dashboard's range (RANGE_PINS: a rule's
          expression read without saying so, a Grafana instant panel's increase over the range). A range panel's
          target is read as Grafana reads it over a range ending at the last time: one range query.
        A rule read at every step of a range query read the range's end there: a fleet rule's count of GPUs read
        nothing at 183 of 210 instants where the rule as Prometheus evaluates it read 4, then 3 GPUs (the blank scenes,
        tests/integration/test_mig_virtual_gpus_lookback.py)."""
        times = [first + i * step for i in range(count)]
        if PINNED.search(expr) and (instant or PINNED.search(RANGE_PINS.sub("", expr))):
            return self._instants(expr, times)
        result: dict[float, list[dict[str, Any]]] = {at: [] for at in times}
        data = self.api("query_range", query=expr, start=first, end=times[-1], step=step)
        for series in data["result"]:
            for at, value in series["values"]:
                result[float(at)].append({"metric": series["metric"], "value": [at, value]})
        return result

    def _instants(self, expr: str, times: list[float]) -> dict[float, list[dict[str, Any]]]:
        """An instant query of `expr` at each of `times`, INSTANT_READERS at once (Prometheus answers them in
        parallel), each reader on a session of its own: {time: its result}."""
        local = threading.local()
        opened: list = []

        def read(at: float) -> list[dict[str, Any]]:
            if not hasattr(local, "session"):
                local.session = _session()
                opened.append(local.session)
            return self.api("query", _via=local.session, query=expr, time=at)["result"]

        try:
            with ThreadPoolExecutor(min(INSTANT_READERS, len(times)) or 1) as pool:
                return dict(zip(times, pool.map(read, times)))
        finally:
            for session in opened:
                session.close()

    def wait_for(self, expr: str, count: int = 1, timeout: float = 120) -> list[dict[str, Any]]:
        """Poll until `expr` returns at least `count` series. `timeout` only bounds a wait that would
        never end (a busy machine may delay the first scrapes by many seconds): it is not a pace."""
        return self._poll(expr, count, timeout, lambda: None)[0]

    def settled(self, expr: str, count: int = 1, timeout: float = 120) -> float:
        """Poll until `expr`, evaluated at one instant whose samples are all stored (`stored_until`), returns at
        least `count` series; that instant. Queries evaluated at it see the same samples however late they run."""
        return self._poll(expr, count, timeout, self.stored_until)[1]

    def stored_until(self) -> float:
        """An instant no sample still to be stored is stamped at or before: the earliest of the targets' latest
        stored scrapes. A scrape's samples and its `up` are stored in one commit, each stamped with the scrape's
        start, and a target's next scrape starts later: once every active target has an `up`, every sample stamped
        at or before the earliest of them is stored. Until then (a target's first scrape may be under way), or where
        the server evaluates rules (their samples are stored apart), an instant SCRAPES_ENDED back."""
        fallback = round(time.time() - SCRAPES_ENDED, 3)
        if yaml.safe_load(self.config_path.read_text()).get("rule_files"):
            return fallback
        targets = self.api("targets", state="active")["activeTargets"]
        stamps = [float(s["value"][1]) for s in self.query("timestamp(up)")]
        if not targets or len(stamps) != len(targets):
            return fallback
        return round(min(stamps), 3)

    def _poll(self, expr: str, count: int, timeout: float, instant) -> tuple[list[dict[str, Any]], float | None]:
        deadline = time.monotonic() + timeout
        result: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            at = instant()
            result = self.query(expr, at=at)
            if len(result) >= count:
                return result, at
            time.sleep(0.5)
        raise AssertionError(f"{expr} returned {len(result)} series after {timeout} s; targets: "
                             f"{self.api('targets')}")

    def __enter__(self) -> "Prometheus":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _session() -> "requests.Session":
    import requests  # here, not at the collection of every test file that imports this module

    session = requests.Session()
    session.trust_env = False  # no proxy settings to read from the environment at each query: loopback
    return session


def _stop(process: subprocess.Popen | None, log) -> None:
    if process and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
    if log is not None:
        log.close()


class Spares:
    """A Prometheus started ahead of need, for the next server that scrapes (tests/integration/conftest.py keeps one
    per test process). Debian's Prometheus (2.42) hands its targets to its scrapers at 5 s ticks of its discovery and
    scrape managers, counted from its start: a new server's first sample was stored 5.8 to 6.7 s after it started
    (6.2 s on average over ten starts, at 1 s scrapes). A server started earlier and given its configuration by a
    reload scrapes at its next tick: 0.6 to 6.1 s after the reload, 2.6 s on average over ten starts. It holds no
    data before (its storage is a new folder of its own) and reads the same configuration, so a test sees what a
    server started with that configuration would show, from its first scrape on; only when within the 5 s its first
    scrape comes differs, which no test relies on (a loaded machine moves it more). Each spare is handed out once;
    the next starts as one is taken."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.root: Path | None = None
        self.pending: Future | None = None
        self.count = 0

    def keep(self) -> None:
        # What a spare's start imports (the readiness poll's HTTP client), imported here, before its thread runs: a
        # module imported by two threads at once can be read half made by one of them (a test's moto server, importing
        # requests through `responses` while the spare's thread imported it, found requests.adapters half made).
        import codecs  # noqa: F401
        import socket  # noqa: F401

        import requests  # noqa: F401
        import requests.auth  # noqa: F401
        import urllib3.exceptions  # noqa: F401

        import generator.clients.http  # noqa: F401
        import generator.clients.options  # noqa: F401
        import generator.errors  # noqa: F401

        with self.lock:
            if self.root is None:
                self.root = Path(tempfile.mkdtemp(prefix="gpudash-prometheus-spares-"))
                atexit.register(self.close)  # also where the process ends without the fixture's teardown
                self.pending = self._start_next()

    def take(self) -> tuple | None:
        """The spare (process, URL, open log, its folder), ready; None where none is kept or its start failed. The
        next one starts meanwhile."""
        with self.lock:
            if self.root is None:
                return None
            pending, self.pending = self.pending, self._start_next()
        if pending is None:
            return None
        try:
            return pending.result()
        except Exception:  # noqa: BLE001  (a spare that did not start: the server starts as it would without one)
            return None

    def _start_next(self) -> Future:
        self.count += 1
        folder = self.root / str(self.count)
        folder.mkdir()
        (folder / "prometheus.yml").write_text(yaml.safe_dump({"global": {"scrape_interval": "1m"},
                                                                "scrape_configs": []}))
        future: Future = Future()

        def run() -> None:
            try:
                args = [f"--config.file={folder / 'prometheus.yml'}", f"--storage.tsdb.path={folder / 'data'}",
                        "--web.enable-lifecycle"]
                process, url, log = start(binary("prometheus"), args, folder / "prometheus.log", READY_WITHIN,
                                          "prometheus")
                future.set_result((process, url, log, folder))
            except BaseException as error:  # noqa: BLE001  (pytest.skip too: no prometheus installed)
                future.set_exception(error)

        threading.Thread(target=run, daemon=True).start()
        return future

    def close(self) -> None:
        """Stop the spare not handed out and remove the spares' folders."""
        with self.lock:
            pending, root, self.pending, self.root = self.pending, self.root, None, None
        if pending is not None:
            try:
                process, _, log, _ = pending.result()
                _stop(process, log)
            except Exception:  # noqa: BLE001
                pass
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)


SPARES = Spares()


def for_file_sd(job: dict, files: list[str]) -> dict:
    """A generated scrape job with Kubernetes discovery swapped for file discovery: the test's Prometheus finds
    the test's exporters."""
    swapped = {key: value for key, value in job.items() if key != "kubernetes_sd_configs"}
    swapped["file_sd_configs"] = [{"files": files, "refresh_interval": "5s"}]
    return swapped


def duration(seconds: float) -> str:
    """A PromQL duration of `seconds`: whole seconds as `Ns`, else milliseconds (`500ms`)."""
    return f"{int(seconds)}s" if seconds == int(seconds) else f"{round(seconds * 1000)}ms"


@functools.lru_cache(maxsize=1024)  # a test file asks the same few queries again and again (2,229 calls, 200 queries)
def scraped_every(expr: str, made_for: int, seconds: float) -> str:
    """A generated query made for a `made_for`-second scrape interval, for a Prometheus that scrapes every `seconds`
    (a fraction of a second too: its durations in milliseconds): every duration gpudash derives from the scrape
    interval (promql: a step's reading and the one before, a copy's sample within the interval, the per-pod look-back,
    a series' sample time, a held counter reading; an alert rule's at its fine step, alarms.rule_step: 5 s, or the
    interval when shorter) written for the new interval (_scrape_rewrites). By spelling, whatever parentheses stand
    around it; in one pass, so no rewrite reads another's output. A spelling of the old interval's left in the query
    fails the test (ScrapeRewriteMissed), naming the rewrite that did not take: a query whose spelling changed no
    longer runs as made for another interval unseen."""
    rewriting = _rewriting(made_for, seconds)
    if rewriting is None:
        return expr
    rewrites, one_pass, old = rewriting
    rewritten = one_pass.sub(lambda m: _rewritten(m, rewrites), expr)
    left = [_missed(match, rewritten, rewrites) for match in old.finditer(rewritten)]
    if left:
        raise ScrapeRewriteMissed(f"scraped_every({made_for} -> {seconds} s) left {len(left)} duration(s) made for "
                                  f"{made_for} s scrapes: " + "; ".join(left))
    return rewritten


class ScrapeRewriteMissed(AssertionError):
    """A query scraped_every could not wholly rewrite for the test's scrape interval."""


# each duration a query writes: a range or subquery's (`[30s]`, `[29999ms:30s]`, `[$__rate_interval:30s]`), an offset
# (`offset -29998ms`), promql.range_increase's whole steps (`/ 30000) * 30000`)
_SPELLED = re.compile(r"\[(?P<range>[^\[\]:]*)(?::(?P<step>[^\[\]]*))?\]|offset (?P<offset>-?\w+)"
                      r"|/ ?(?P<per>\d+)\)? ?\* ?(?P=per)\b")


def _scrape_rewrites(made_for: int, seconds: float) -> dict[str, tuple[str, str]]:
    """{a spelling in a query made for `made_for`-second scrapes: (its spelling for `seconds`, the rewrite's name)}.
    Each is a whole duration token's start (`[29999ms]`, `[29999ms:`, `:30s]`, `offset 30s` and its end where another
    token could begin with it): no parenthesis is part of one."""
    from generator.promql import (COUNTED_WITHIN, HELD_SCRAPES, LABEL_LOOKBACK_SCRAPES, PREVIOUS_WITHIN,
                                  WINDOW_PREVIOUS_WITHIN)
    from generator.render.alarms import RULE_STEP_SECONDS

    def ms(step: float) -> int:
        return round(step * 1000)

    def text(milliseconds: int) -> str:  # promql._milliseconds_text
        return f"{milliseconds // 1000}s" if milliseconds % 1000 == 0 else f"{milliseconds}ms"

    def spellings(step: float) -> dict[str, str]:
        """{rewrite's name: spelling} of the durations derived from the scrape interval (or the rule step) `step`."""
        reach = f"[{text(ms(LABEL_LOOKBACK_SCRAPES * step) + ms(step) // 2)}:"
        named = {
            # promql.taken_within and step_reading: the step less a millisecond, the step, a millisecond a step back;
            # counted_rules' reading at the step before and range_increase's first step (ranges of the step less 1 ms)
            "step less 1 ms": f"[{ms(step) - 1}ms]", "step less 1 ms, stepped": f"[{ms(step) - 1}ms:",
            "step": f"[{duration(step)}]", "step back": f"offset {duration(step)}",
            # promql.range_increase: its first reading, a step less 2 ms after the range's start
            "first step's shift": f"offset -{ms(step) - 2}ms",
            # fresh_copies, gpus_named, _Device: a copy with a sample within the interval (in ms: `[30000ms]`)
            "step in ms": f"[{ms(step)}ms]",
            # CounterReading.step_delta's two points: its latest reading within a reach (3 reaches), at two points
            **{f"reach {within} s": f"[{ms(max(within, 2 * step)) - ms(step) // 2}ms:"
               for within in (PREVIOUS_WITHIN, WINDOW_PREVIOUS_WITHIN, COUNTED_WITHIN)},
            "two points": f"[{ms(step) + 1}ms:",
            # counted_rules: a copy's latest reading at this step or the one before
            "step and a half": f"[{ms(1.5 * step)}ms:",
            # held_reading: a counter reading held through a missed scrape
            "held": f"[{ms(HELD_SCRAPES * step)}ms:", "held, ranged": f"[{ms(HELD_SCRAPES * step)}ms]",
            "subquery step": f":{duration(step)}]",
            # promql.idle_gpus: a GPU's series without a pod within two intervals
            "two steps": f"[{duration(2 * step)}]",
            # promql.sample_time: ranges and steps of half the interval, the look-back and half
            "half": f"[{text(ms(step) // 2)}]", "half step": f":{text(ms(step) // 2)}]", "look-back and half": reach,
            # promql.range_increase: the last whole step
            "whole steps": f"/ {ms(step)}) * {ms(step)}", "whole steps, bare": f"/ {ms(step)} * {ms(step)}",
            # the same in a panel's query, packed (promql_text.packed: no space beside an operator)
            "whole steps, packed": f"/{ms(step)})*{ms(step)}", "whole steps, bare, packed": f"/{ms(step)}*{ms(step)}",
        }
        return named

    pairs = [(made_for, seconds), (min(RULE_STEP_SECONDS, made_for), min(RULE_STEP_SECONDS, seconds))]
    table: dict[str, tuple[str, str]] = {}
    for k, (old, new) in enumerate(pairs):
        was, now = spellings(old), spellings(new)
        if k == 0:  # promql.label_lookback: the per-pod panels' look-back, scrapes of the interval
            was["look-back"], now["look-back"] = f"[{duration(LABEL_LOOKBACK_SCRAPES * old)}]", \
                f"[{duration(LABEL_LOOKBACK_SCRAPES * new)}]"
            was["look-back, stepped"], now["look-back, stepped"] = f"[{duration(LABEL_LOOKBACK_SCRAPES * old)}:", \
                f"[{duration(LABEL_LOOKBACK_SCRAPES * new)}:"
        for name, spelling in was.items():
            if spelling == now[name]:
                continue
            earlier = table.get(spelling)
            assert earlier is None or earlier[0] == now[name], \
                f"scraped_every: {spelling} is the {earlier[1]} and the {name}, for {earlier[0]} and {now[name]}"
            table.setdefault(spelling, (now[name], name))
    return table


@functools.lru_cache
def _rewriting(made_for: int, seconds: float) -> tuple[dict[str, tuple[str, str]], re.Pattern, re.Pattern] | None:
    """(_scrape_rewrites' table, its spellings as one pattern, a pattern of each duration token of the old interval's
    it rewrites and does not write); None where there is nothing to rewrite."""
    rewrites = _scrape_rewrites(made_for, seconds)
    if not rewrites:
        return None
    # the longest first; a subquery's range (`[29999ms:`) before its step, which is rewritten apart (`:30s]`); one
    # ending in a letter or digit not where a longer duration goes on (`offset 30s`, not `offset 30s500ms`)
    one_pass = re.compile("|".join(re.escape(s[:-1]) + "(?=:)" if s.endswith(":") else
                                   re.escape(s) + (r"(?!\w)" if s[-1].isalnum() else "")
                                   for s in sorted(rewrites, key=len, reverse=True)))
    new = {token for now, _ in rewrites.values() for token in _tokens(now)}
    old: dict[str, list[str]] = {}
    for spelling in rewrites:
        for role, value in _tokens(spelling):
            if (role, value) not in new:
                old.setdefault(role, []).append(re.escape(value))
    shapes = {"range": r"\[(?:{})(?=[:\]])", "step": r":(?:{})\]", "offset": r"offset (?:{})(?!\w)",
              "per": r"/ ?(?:{0})\)? ?\* ?(?:{0})\b"}
    return rewrites, one_pass, re.compile("|".join(shapes[role].format("|".join(values))
                                                   for role, values in old.items()))


def _rewritten(match, rewrites: dict[str, tuple[str, str]]) -> str:
    found = match.group()
    return rewrites[found][0] if found in rewrites else rewrites[found + ":"][0][:-1]


def _missed(match, rewritten: str, rewrites: dict[str, tuple[str, str]]) -> str:
    """What a duration token of the old interval's left in `rewritten` (`match`) is: the rewrite that writes it, and
    where it stands."""
    token = _tokens(match.group() + "]" if match.group().startswith("[") else match.group())[0]
    name = next(name for spelling, (_, name) in rewrites.items() if token in _tokens(spelling))
    at = match.start()
    return f"the {name} rewrite missed the {token[0]} {token[1]} in ...{rewritten[max(0, at - 60):at + 40]}..."


def _tokens(spelled: str) -> list[tuple[str, str]]:
    """(role, duration) of each duration in `spelled`: a whole token (`[29999ms:30s]`) or a rewrite's part of one
    (`[29999ms:`, `:30s]`)."""
    spelled = spelled + "]" if spelled.startswith("[") and spelled.endswith(":") else spelled
    spelled = "[" + spelled if spelled.startswith(":") else spelled
    return [(role, value) for match in _SPELLED.finditer(spelled)
            for role, value in match.groupdict().items() if value]


def counted_read(exprs, project) -> dict | None:
    """The recording group (alarms.counted_group) of the counters whose recordings `exprs` (panels' queries) read;
    None where they read none."""
    from generator.promql import counted_name
    from generator.render.alarms import counted_group

    spelled = re.escape(counted_name("@", "@@")).replace("@@", r"\w+").replace("@", "([A-Z0-9_]+)")
    metrics = [metric for expr in exprs for metric in re.findall(spelled, expr)]
    return counted_group(tuple(dict.fromkeys(metrics)), project.catalog, project.settings)


def counted_inline(expr: str, project) -> str:
    """`expr` (a panel's) with each counter's recording (promql.counted_rules, `gpudash:<field>:step_increase` and `:step_seconds`) read as
    its rule's expression at the steps of its group's interval (a subquery): what the recorded series holds where the
    server evaluated the group on the steps of the scrape interval, as `promtool test rules` does. A backfilled
    Prometheus evaluates no rule over its history (a deployment's recording starts with the rule, README). The
    recorded series' matchers (the scope's cluster and GPU: labels of the counter's own series) go on the rule's
    selectors, beside the rule's own (on a shared Prometheus, its clusters)."""
    from generator.promql import counted_name

    group = counted_read([expr], project)
    for rule in group["rules"] if group else ():
        metric = rule["record"].split(":")[1]  # gpudash:<field>:<part>

        def inline(match, rule=rule, metric=metric) -> str:
            def scoped(selector) -> str:  # the rule's own matchers (its clusters on a shared Prometheus) kept
                own = selector.group(1)
                return f"{metric}{{{own[1:-1]}, {match.group(1)[1:-1]}}}" if own else f"{metric}{match.group(1)}"
            body = re.sub(rf"\b{metric}\b(\{{[^}}]*\}})?(?![{{\w])", scoped, rule["expr"]) \
                if match.group(1) else rule["expr"]
            return f"({body})[{match.group(2)}:{group['interval']}]"
        expr = re.sub(re.escape(rule["record"]) + r"(\{[^}]*\})?\[([^\]]+)\]", inline, expr)
    assert not re.search(re.escape(counted_name("@", "@@")).replace("@@", r"\w+").replace("@", "[A-Z0-9_]+"), expr)
    return expr


@contextmanager
def backfilled(workdir: Path, openmetrics: Callable[[int], str], span: int, step: int) -> Iterator[tuple[Prometheus, int]]:
    """A real Prometheus whose storage holds `openmetrics(start)` (`promtool tsdb create-blocks-from openmetrics`):
    samples from `start` (on the `step` grid) over `span` seconds, ending an hour ago, so all in the blocks; and
    `start`."""
    start = (int(time.time()) - span - 3600) // step * step
    source = workdir / "backfill.om"
    source.write_text(openmetrics(start))
    result = subprocess.run([binary("promtool"), "tsdb", "create-blocks-from", "openmetrics", str(source),
                             str(workdir / "data")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    with Prometheus(workdir, {"global": {"scrape_interval": "1m"}, "scrape_configs": []}) as prometheus:
        yield prometheus, start


def _recordings(prometheus: Prometheus, group: dict, start: int, end: int) -> dict[tuple, list[tuple[float, str]]]:
    """{labels (sorted (name, value) pairs, the rule's name and labels among them): [(time, value)]} of each rule of
    `group` evaluated on the multiples of its interval since the epoch from `start` to `end`, as Prometheus evaluates
    a rule: an instant query at each (query_at, `instant`: one range query a rule where it pins no instant)."""
    every = float(group["interval"].removesuffix("s"))
    first = start // every * every
    recorded: dict[tuple, list[tuple[float, str]]] = {}
    for rule in group["rules"]:
        for at, result in prometheus.query_at(rule["expr"], first, int((end - first) // every) + 1, every,
                                              instant=True).items():
            for series in result:
                labels = {**{k: v for k, v in series["metric"].items() if k != "__name__"},
                          **rule.get("labels", {}), "__name__": rule["record"]}
                recorded.setdefault(tuple(sorted(labels.items())), []).append((float(at), series["value"][1]))
    return recorded


def recorded(prometheus: Prometheus, group: dict, start: int, end: int) -> None:
    """The recording rules of `group` (alarms.counted_group's: each counter's step increase and step seconds) written
    into the backfilled server's storage from `start` to `end` as a Prometheus evaluating the group at its interval
    records them, on the multiples of the interval since the epoch (the steps counted_inline's subqueries read), then
    the server restarted on them: a panel reads its counters' recordings as Grafana does, each recorded once.
    counted_inline instead evaluates each recording again at every step of every query: test_combined_fleet_counters'
    108 queries of one path cost the server 31.3 CPU-s so, 1.4 s recorded.

    Written as blocks (`promtool tsdb create-blocks-from openmetrics`). Not `create-blocks-from rules`: it evaluates a
    group at the group's own offset in the interval, a hash of its name and file (a temporary file's: another offset
    each run), where on-grid scrapes read other samples than the subquery's steps (test_shared_gpu_counters: the rate
    of every GPU off by a step). For a server whose samples are in its head (live scrapes), recorded_live."""
    lines = []
    for labels, samples in _recordings(prometheus, group, start, end).items():
        name = dict(labels)["__name__"]
        spelled = ",".join(f'{k}="{_escaped(v)}"' for k, v in labels if k != "__name__")
        lines += [f"{name}{{{spelled}}} {value} {at}" for at, value in samples]
    folder = Path(tempfile.mkdtemp(prefix="gpudash-recorded-", dir=prometheus.workdir))
    (folder / "recorded.om").write_text("\n".join([*lines, "# EOF"]) + "\n")
    result = subprocess.run([binary("promtool"), "tsdb", "create-blocks-from", "openmetrics",
                             str(folder / "recorded.om"), str(folder / "blocks")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    prometheus.stop()
    prometheus.session = None
    for block in (folder / "blocks").iterdir():
        block.rename(prometheus.config_path.parent / "data" / block.name)
    prometheus.start()


def recorded_live(prometheus: Prometheus, group: dict, start: int, end: int) -> None:
    """recorded for a server that scrapes no more and holds its samples in its head (a live scene's): restarted with
    the remote-write receiver (its head replayed from its write-ahead log) and the recordings written to it. Blocks
    would lose the head: Prometheus replays no sample older than its newest block's end."""
    recordings = _recordings(prometheus, group, start, end)
    prometheus.stop()
    prometheus.session = None
    prometheus.flags = (*prometheus.flags, "--web.enable-remote-write-receiver")
    prometheus.start()
    _remote_written(prometheus, recordings)


STALE = "stale"  # a value in _remote_written: a staleness marker (a series gone from its scrape, a failed scrape)
_STALE_NAN = struct.pack("<Q", 0x7FF0000000000002)  # Prometheus' StaleNaN, as its scrape loop writes it


def _remote_written(prometheus: Prometheus, recordings: dict[tuple, list[tuple[float, str]]]) -> None:
    """`recordings` ({labels (name and value pairs): [(second, value or STALE)]}, each series' samples in order)
    written to `prometheus` through its remote-write receiver."""
    import requests

    def value_of(value: str) -> bytes:
        return _STALE_NAN if value == STALE else struct.pack("<d", float(value))

    body = b"".join(_field(1, b"".join([*(_field(1, _field(1, k.encode()) + _field(2, v.encode())) for k, v in labels),
                                         *(_field(2, b"\x09" + value_of(value) + b"\x10" + _varint(round(at * 1000)))
                                           for at, value in samples)]))
                    for labels, samples in recordings.items())
    answer = requests.post(f"{prometheus.url}/api/v1/write", data=_snappy(body), timeout=QUERY_TIMEOUT_S, headers={
        "Content-Encoding": "snappy", "Content-Type": "application/x-protobuf",
        "X-Prometheus-Remote-Write-Version": "0.1.0"})
    assert answer.status_code == 204, (answer.status_code, answer.text)


def written_fixture(name: str, series: Callable[[int], dict[tuple, list[tuple[float, str]]]], span: int, step: int):
    """A module fixture (assign it to a module-level name): a real Prometheus whose head holds `series(start)`
    (_remote_written: staleness markers too, which a backfill cannot write), samples from `start` (on the `step` grid)
    over `span` seconds, ending ten minutes ago; its value (prometheus, start)."""
    @pytest.fixture(scope="module")
    def fixture(tmp_path_factory) -> Iterator[tuple[Prometheus, int]]:
        start = (int(time.time()) - span - 600) // step * step
        with Prometheus(tmp_path_factory.mktemp(name), {"global": {"scrape_interval": "1m"}, "scrape_configs": []},
                        ("--web.enable-remote-write-receiver",)) as prometheus:
            _remote_written(prometheus, series(start))
            yield prometheus, start
    return fixture


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        n, low = n >> 7, n & 0x7F
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A protobuf length-delimited field (remote write's WriteRequest, TimeSeries, Label, Sample)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _snappy(data: bytes) -> bytes:
    """`data` as a snappy block of literals only (valid snappy, uncompressed: remote write requires the framing)."""
    out = bytearray(_varint(len(data)))
    for at in range(0, len(data), 65536):
        chunk = data[at:at + 65536]
        out += bytes([61 << 2]) + (len(chunk) - 1).to_bytes(2, "little") + chunk
    return bytes(out)


def _escaped(value: str) -> str:
    """A label value as the exposition formats write it between quotes."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def backfilled_fixture(name: str, openmetrics: Callable[[int], str], span: int, step: int, remember: bool = False):
    """A module fixture (assign it to a module-level name): a real Prometheus backfilled with `openmetrics(start)`
    (`backfilled`), started once for the module in a folder named after `name`; its value (prometheus, start).
    `remember`: it remembers its answers (Prometheus.remember_answers), for a module whose tests ask the same query at
    the same instants more than once (a query no picked variable changes, asked at each pick)."""
    @pytest.fixture(scope="module")
    def fixture(tmp_path_factory) -> Iterator[tuple[Prometheus, int]]:
        with backfilled(tmp_path_factory.mktemp(name), openmetrics, span, step) as started:
            if remember:
                started[0].remember_answers()
            yield started
    return fixture


def range_macros(window: str) -> dict[str, str]:
    """Grafana's macros of a dashboard range `window` long (a duration such as 90s, 5m, 26h): `$__range` and the
    exact `${__range_ms}` an increase over the range reads (promql.range_increase)."""
    seconds = int(window[:-1]) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[window[-1]]
    return {"__range": window, "__range_ms": str(seconds * 1000)}


# A dashboard range holding a whole test scene (its data within the last day): panels name each GPU by the name the
# range gives it (promql.gpus_named's `whole`), so a panel's query reads `[$__range] @ end()`.
SCENE_RANGE = range_macros("24h")
