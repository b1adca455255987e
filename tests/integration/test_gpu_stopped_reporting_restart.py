"""gpu-stopped-reporting on a real Prometheus restarted, and its rules reloaded, past the hour of a lost GPU's readings.

The rule's recording reads what it wrote at earlier evaluations (last_over_time over HOLD): a GPU lost over an hour
before is held by that alone. promtool evaluates a story in one process; here a real Prometheus (Debian's 2.42) writes
the recording, is stopped and started again on the same storage (its WAL replayed, no staleness marker written), then
has its rules reloaded with the group renamed, then without it (each of its series gets a staleness marker, which an
instant read would take for the series' end and a range read skips), then with it again.

Story (wall clock, 30 s readings): node-p of four GPUs, its history backfilled over the two hours before the test,
GPU 2's last reading MARGINS[0] seconds short of an hour before; from then on an exporter serves GPUs 0, 1 and 3. The
first Prometheus judges GPU 2 from its readings of the hour (it has written the recording for GPU 2 before the hour
is over); the second starts after that hour has passed. Truth: the alert for node-p GPU 2 (UUID GPU-p-2), and no other,
at every evaluation of each server, before and after the restart and after the reload.

The test waits in real time for the hour to pass while the server is down: the margin is the first server's start and
first evaluations, not more (it waited 2 minutes at 58 minutes). A machine too busy to evaluate the first server within
the margin has judged nothing from the hour's readings: the story is recorded again with the next margin. The server
is down some 20 s at the first margin: a recording read over HOLD carries the GPU across it (one read over 5 s fails
here); how long it carries (HOLD, 45 minutes down) is judged by test_gpu_stopped_reporting_stories's stories."""

from __future__ import annotations

import json
import subprocess
import time

import yaml

from generator import stopped_gpus
from generator.render.alarms import recorded_name
from tests.integration.test_gpu_stopped_reporting import ALERT, built  # noqa: F401
from tests.support.prometheus_server import Prometheus, binary
from tests.support.promtool_rules import judged_rules
from tests.support.replay_exporter import ReplayExporter

STEP = 30  # seconds between readings, backfilled and scraped
HOUR = 3600
MARGINS = (30, 120)  # GPU 2's last reading this much short of an hour before the test: the first server's time to
# judge it from its readings of the hour (start, evaluations); the next margin where the first did not suffice
EVERY = 3  # seconds between the rules' evaluations
RECORD = recorded_name("gpu-stopped-reporting", stopped_gpus.RECORDED)
EVALUATED = "gpudash_test:evaluated"  # a recording in the judged group written at each evaluation: their instants


def _line(gpu: int, target: str = "", at: int | None = None) -> str:
    """node-p's GPU `gpu` as dcgm-exporter serves it; `target`: the labels scraping adds (backfilled)."""
    return f'DCGM_FI_DEV_GPU_TEMP{{gpu="{gpu}",UUID="GPU-p-{gpu}",Hostname="node-p"{target}}} {40 + gpu}' + \
        (f" {at}" if at is not None else "")


def _history(now: int, lost: int, instance: str) -> str:
    """node-p's readings every STEP over the two hours before `now`, GPU 2's ending at `lost`."""
    lines = ["# TYPE DCGM_FI_DEV_GPU_TEMP gauge"]
    for gpu in range(4):
        last = lost if gpu == 2 else now - STEP
        lines += [_line(gpu, f',job="dcgm",instance="{instance}"', at) for at in range(now - 7200, last + 1, STEP)]
    return "\n".join(lines + ["# EOF"]) + "\n"


def _rules(built, folder, group_suffix: str | None = "") -> None:  # noqa: F811
    """folder/rules.yaml: the generated group of the rule (its recording and alert alone) named with `group_suffix`
    (None: no group), evaluated every EVERY seconds, with EVALUATED."""
    groups = json.loads((built / judged_rules(built, "restart", {ALERT})).read_text())["groups"]
    [group] = [g for g in groups if any(r.get("alert") == ALERT for r in g["rules"])]
    group = {**group, "name": group["name"] + (group_suffix or ""), "interval": f"{EVERY}s",
             "rules": [*group["rules"], {"record": EVALUATED, "expr": "vector(1)"}]}
    (folder / "rules.yaml").write_text(yaml.safe_dump({"groups": [group] if group_suffix is not None else []},
                                                      sort_keys=False))


def _evaluated_after(prometheus: Prometheus, at: float, count: int) -> None:
    """Wait until the group was evaluated `count` times after `at` (the time bounds a wait that would never end)."""
    deadline = time.monotonic() + 120
    while len([when for when in _stamps(prometheus, EVALUATED, 300) if when > at]) < count:
        assert time.monotonic() < deadline, f"fewer than {count} evaluations in 120 s"
        time.sleep(1)


def _stamps(prometheus: Prometheus, expr: str, span: int) -> dict[float, list[dict[str, str]]]:
    """{sample time: [labels]} of the raw samples of `expr` within the last `span` seconds."""
    found: dict[float, list[dict[str, str]]] = {}
    for series in prometheus.query(f"{expr}[{span}s]"):
        for at, _ in series["values"]:
            found.setdefault(round(float(at), 3), []).append(series["metric"])
    return found


def _scene(built, folder, margin: int) -> tuple | None:  # noqa: F811
    """The story recorded in `folder` with GPU 2's last reading `margin` seconds short of an hour before it starts:
    (lost, restarted, reloaded, evaluations, alerts, records), None where the first server was first evaluated after
    the hour had passed (a busy machine: it judged nothing from the hour's readings)."""
    now = int(time.time())
    lost = now - HOUR + margin  # on the readings' grid (margin a multiple of STEP)
    payload = "\n".join(["# TYPE DCGM_FI_DEV_GPU_TEMP gauge", *(_line(gpu) for gpu in (0, 1, 3))]) + "\n"
    with ReplayExporter(payload) as exporter:
        source = folder / "history.om"
        source.write_text(_history(now, lost, exporter.address))
        done = subprocess.run([binary("promtool"), "tsdb", "create-blocks-from", "openmetrics", str(source),
                               str(folder / "data")], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        _rules(built, folder)
        config = {"global": {"scrape_interval": f"{STEP}s"}, "rule_files": [str(folder / "rules.yaml")],
                  "scrape_configs": [{"job_name": "dcgm", "static_configs": [{"targets": [exporter.address]}]}]}
        prometheus = Prometheus(folder, config)
        prometheus.start()
        try:
            prometheus.wait_for(EVALUATED)
            time.sleep(2 * EVERY)
            if min(_stamps(prometheus, EVALUATED, int(time.time() - now) + 60)) >= lost + HOUR:
                return None
            prometheus.stop()
            prometheus.session = None
            # down until the GPU's readings are all over the hour old: only the recording holds it from now on
            time.sleep(max(0.0, lost + HOUR + EVERY - time.time()))
            restarted = time.time()
            prometheus.start()
            _evaluated_after(prometheus, restarted, 3)
            # the group renamed: the new group writes the recording's series before the old one's staleness markers,
            # which are dropped (older than its samples)
            _rules(built, folder, "-renamed")
            prometheus._reload()
            renamed = time.time()
            _evaluated_after(prometheus, renamed, 3)
            # the group removed: Prometheus marks each of its series stale two evaluation intervals later
            _rules(built, folder, None)
            prometheus._reload()
            prometheus.wait_for(f"absent({EVALUATED})")  # its series marked stale (all in one commit)
            _rules(built, folder)  # and back: the recording reads past the staleness marker
            prometheus._reload()
            reloaded = time.time()
            _evaluated_after(prometheus, reloaded, 3)
            span = int(time.time() - now) + 60
            return (lost, restarted, reloaded, sorted(_stamps(prometheus, EVALUATED, span)),
                    _stamps(prometheus, f'ALERTS{{alertname="{ALERT}"}}', span), _stamps(prometheus, RECORD, span))
        finally:
            prometheus.stop()


def test_a_gpu_lost_over_an_hour_before_fires_through_a_restart_and_a_rules_reload(built, tmp_path):  # noqa: F811
    assert all(margin % STEP == 0 for margin in MARGINS)
    for margin in MARGINS:
        (tmp_path / str(margin)).mkdir()
        recorded = _scene(built, tmp_path / str(margin), margin)
        if recorded is not None:
            break
    assert recorded is not None, f"the first server was first evaluated after the hour at every margin {MARGINS}"
    lost, restarted, reloaded, evaluations, alerts, records = recorded
    assert [at for at in evaluations if at > lost + HOUR] and [at for at in evaluations if at < restarted] and \
        [at for at in evaluations if at > reloaded], (evaluations, restarted, reloaded)
    # Prometheus writes no ALERTS sample at a server's first two evaluations (it restores the alerts' `for` state
    # after the second: rules/manager.go), but sends the alerts then; the alert is the recording's GPUs at the instant
    started = [at for at in evaluations if at < restarted][:2] + [at for at in evaluations if at > restarted][:2]
    wrong = {}
    for at in evaluations:
        shown = {"recorded": records.get(at, []), **({} if at in started else {"alerts": alerts.get(at, [])})}
        named = {what: sorted((m.get("node"), m.get("gpu"), m.get("UUID"), m.get("alertstate", "firing"))
                              for m in found) for what, found in shown.items()}
        if any(found != [("node-p", "2", "GPU-p-2", "firing")] for found in named.values()):
            wrong[round(at - lost - HOUR, 1)] = named
    assert not wrong, f"seconds past the hour of the GPU's readings (restart at {restarted - lost - HOUR:.0f}, " \
                      f"reload at {reloaded - lost - HOUR:.0f}): what each evaluation wrote {wrong}"
