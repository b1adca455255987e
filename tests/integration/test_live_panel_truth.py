"""A second reader's check of the Grafana panels on live scrapes: one real Prometheus scrapes five replay exporters
every 2 s and evaluates the counters' generated recording rules; the panels are the bundled project's, built for a
2 s scrape interval (`scrape.interval: 2s`: no query text rewritten for the test). Each panel is read as Grafana
reads it (range queries over the scene, several calls) and its legends and values compared with the truth worked out
here from what each exporter answered and when Prometheus scraped it (`up`).

The fleet:
- n3, mid-upgrade (a maxSurge overlap): its old exporter writes its own pod's name into `Hostname` (OLD_POD), the new
  one `hostname="n3"`; both read GPU 0 (held by ml/p) alike: 150 W, 40 %, an energy counter growing at 150 W (each
  reading written with its own time: _EnergyReader).
  The Node variable offers n3, not OLD_POD (test_node_variable); a URL may still hold OLD_POD (a link made before).
- n4 (`Hostname="n4"`, the exporter's release spelling), an exporter without KUBERNETES_VIRTUAL_GPUS: GPU 0 time-sliced by
  two pods of one name in two namespaces (team-a/w, team-b/w), named under team-a/w at odd answers and team-b/w at even
  ones, its utilization falling 2 % an answer; GPU 1 idle (no pod); GPU 2 split into MIG instances, two 3g.40gb
  (20,000 and 12,000 MiB, ml/m and ml/q) reconfigured at answer RECONFIGURED into three 2g.20gb (5,000 MiB each,
  ml/m, ml/q, ml/r). Its answers FAILED are no exposition (the scrape fails: every series of the target marked stale;
  the late tier, promql._superseded, decides).
- n5, two exporters each writing its own pod's name into `Hostname` (a rollout of exporters given no NODE_NAME), both
  reading GPU 0 alike (held by ml/t): the legend names one of them, the same at every step and call.
- n6 (`hostname="n6"`): two GPUs' PCIe replay counters, 2 replays a scrape interval, through a gap (its answers GAP
  are no exposition: 22 s, longer than the 20 s period of the replays alarms below); GPU 1 makes 40 more within one
  interval at answer BURST. The alarms' rule (a level per period, its start pinned with `@ end()`: 50f25856) counts
  a reading after the gap by the shares of the scrapes due inside the period, so a steady link reads 20 a period.
"""

from __future__ import annotations

import math
import statistics
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from generator.preview.interpolate import interpolate, variables
from generator.preview.legend import render as render_legend
from generator.render.alarms import counted_group, prometheus_expression, prometheus_rules
from tests.support.projects import bundled_panel, bundled_project, defined_project
from tests.support.prometheus_server import SCENE_RANGE, Prometheus
from tests.support.replay_exporter import ReplayExporter
from tests.support.scrape_scene import CountedAnswers

SETTINGS = "scrape:\n  interval: 2s\n"
STEP = 2
LOOKBACK = 4 * STEP  # promql.label_lookback: 4 scrapes
# how far before a step the energy panel's value reads n3's readings: its rate window ($__rate_interval: LOOKBACK) of
# the counters' recordings, each the growth since the copy's reading an interval before, and an interval to spare
REACH = LOOKBACK + 3 * STEP
JUDGED = 0.1  # a step whose harness error (Scene.energy_noise) is this or more cannot judge a rate: not judged
RETRIES = 2  # fresh recordings of the scene made when fewer than half of the energy panel's steps can be judged
ANSWERS = 36  # n4's answers the scene waits for (n6 answers as many, give or take one)
FAILED = (11, 17, 24)  # n4's answers that are no exposition
RECONFIGURED = 14  # n4's GPU 2 is three 2g.20gb instances from this answer on
OLD_POD = "nvidia-dcgm-exporter-q8w2z"
N5_PODS = ("nvidia-dcgm-exporter-k2p9d", "nvidia-dcgm-exporter-m7x4t")
MODEL = 'modelName="NVIDIA A100-SXM4-80GB",DCGM_FI_DRIVER_VERSION="570.133.20"'
ENERGY_RATE = 150_000.0  # mJ per second: 150 W
GAP = range(8, 19)  # n6's answers that are no exposition
BURST = 31  # n6's GPU 1 makes 40 replays more from this answer (after the periods test 4 reads at the gap's end)
PER_INTERVAL = 2  # replays a scrape interval
LEVELS = (17, 23, 30)  # the replays alarms' levels within their 20 s period (10 scrape intervals: 20 replays)
ALARMS = """from generator.model import Alarm, Condition, Query


def alarms(ctx):
    return [Alarm(f"replays-{level}", f"More than {level} PCIe replays in 20 s",
                  Condition(Query("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "max", ("node", "gpu"), as_increase=True), ">",
                            level), period_seconds=20, missing_data="notBreaching")
            for level in LEVELS]
""".replace("LEVELS", repr(LEVELS))
MACROS = {**SCENE_RANGE, "__rate_interval": f"{LOOKBACK}s", "__interval": f"{STEP}s"}
BEGAN = time.time()


def _lines(metric: str, kind: str, rows: list[tuple[str, float | str]]) -> str:
    return f"# TYPE {metric} {kind}\n" + "".join(f"{metric}{{{labels}}} {value}\n" for labels, value in rows)


class _EnergyReader:
    """One n3 exporter's reads of the energy counter of a GPU drawing 150 W, each written with its own timestamp (the
    exposition's, in milliseconds; Prometheus keeps it: honor_timestamps) at the reader's place on its own schedule: its
    first answer's time and whole scrape intervals after it, the one nearest the answer's time. The reading is the
    counter at that instant, so the stored samples' times and values agree exactly: the truth of 150 W holds between
    any two of them whenever the machine let the answer go out (a reading computed when answered but stamped when
    Prometheus began the scrape was off by the answer's lateness: at load 20, more than JUDGED at most steps of three
    recordings, and the energy cases failed). Each of n3's two copies keeps its own schedule, as two exporters do."""

    def __init__(self):
        self.first: float | None = None
        self.last: float | None = None

    def __call__(self) -> tuple[int, int]:
        """(the counter's reading in mJ, its timestamp in ms)."""
        now = time.time()
        self.first = now if self.first is None else self.first
        at = self.first + round((now - self.first) / STEP) * STEP
        self.last = at = at if self.last is None else max(at, self.last + STEP)
        stamp = round(at * 1000)
        return round(1e9 + ENERGY_RATE * (stamp / 1000 - BEGAN)), stamp


def _n3(old: bool, energy: _EnergyReader) -> str:
    node = f'Hostname="{OLD_POD}"' if old else 'hostname="n3"'
    labels = f'gpu="0",UUID="GPU-n3-0",device="nvidia0",{MODEL},{node},container="main",namespace="ml",pod="p"'
    reading, stamp = energy()
    return (_lines("DCGM_FI_DEV_POWER_USAGE", "gauge", [(labels, 150)])
            + _lines("DCGM_FI_DEV_GPU_UTIL", "gauge", [(labels, 40)])
            + _lines("DCGM_FI_DEV_GPU_TEMP", "gauge", [(labels, 60)])
            + _lines("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", [(labels, f"{reading} {stamp}")]))


def _n5(pod: str) -> str:
    labels = (f'gpu="0",UUID="GPU-n5-0",device="nvidia0",{MODEL},Hostname="{pod}",container="main",namespace="ml",'
              'pod="t"')
    return (_lines("DCGM_FI_DEV_POWER_USAGE", "gauge", [(labels, 120)])
            + _lines("DCGM_FI_DEV_GPU_UTIL", "gauge", [(labels, 70)])
            + _lines("DCGM_FI_DEV_GPU_TEMP", "gauge", [(labels, 55)]))


def n4_readings(answer: int) -> dict:
    """n4's answer `answer` (from 1) as facts: {(gpu, instance or None): (pods, utilization, framebuffer used)}."""
    sliced = ("team-a", "w") if answer % 2 else ("team-b", "w")
    readings = {("0", None): ((sliced,), 90 - 2 * answer, 30000), ("1", None): ((), 0, 0)}
    if answer < RECONFIGURED:
        instances = (("1", "3g.40gb", ("ml", "m"), 20000), ("2", "3g.40gb", ("ml", "q"), 12000))
    else:
        instances = (("1", "2g.20gb", ("ml", "m"), 5000), ("2", "2g.20gb", ("ml", "q"), 5000),
                     ("3", "2g.20gb", ("ml", "r"), 5000))
    for instance, profile, pod, used in instances:
        readings[("2", (instance, profile))] = ((pod,), 0, used)
    return readings


def _n4(answer: int) -> str:
    if answer in FAILED:
        return "garbage{ 1\n"
    util, used = [], []
    for (gpu, instance), (pods, value, memory) in n4_readings(answer).items():
        device = f'gpu="{gpu}",UUID="GPU-n4-{gpu}",device="nvidia{gpu}",{MODEL},Hostname="n4"'
        if instance is not None:
            device += f',GPU_I_ID="{instance[0]}",GPU_I_PROFILE="{instance[1]}"'
        for namespace, pod in pods or ((None, None),):
            labels = device + (f',container="main",namespace="{namespace}",pod="{pod}"' if pod else "")
            if instance is None:
                util.append((labels, value))
            used.append((labels, memory))
    return _lines("DCGM_FI_DEV_GPU_UTIL", "gauge", util) + _lines("DCGM_FI_DEV_FB_USED", "gauge", used)


def _n6(answer: int) -> str:
    if answer in GAP:
        return "garbage{ 1\n"
    rows = []
    for gpu in (0, 1):
        labels = f'gpu="{gpu}",UUID="GPU-n6-{gpu}",device="nvidia{gpu}",{MODEL},hostname="n6"'
        burst = 40 if gpu == 1 and answer >= BURST else 0
        rows.append((labels, 1000 + PER_INTERVAL * answer + burst))
    return _lines("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", rows)


class Scene:
    def __init__(self, prometheus: Prometheus, addresses: dict[str, str], replays):
        self.prometheus = prometheus
        self.replays = replays  # the project of the replays alarms
        self.addresses = addresses
        self.scrapes = {name: [(float(at), value == "1") for at, value in series["values"]]
                        for name, address in addresses.items()
                        for series in prometheus.query(f'up{{instance="{address}"}}[15m]')}
        times = [at for scrapes in self.scrapes.values() for at, _ in scrapes]
        self.first, self.last = min(times), max(times)
        copies = prometheus.query(f'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{UUID="GPU-n3-0"}}[15m]', at=self.last)
        # n3's copies' consecutive readings ((stamp, value), (stamp, value)) and their usual interval
        self.energy_pairs = [((float(s), float(u)), (float(t), float(v))) for series in copies
                             for (s, u), (t, v) in zip(series["values"], series["values"][1:])]
        assert len(copies) == 2 and self.energy_pairs, f"n3's two copies of the energy counter: {copies}"
        self.energy_interval = statistics.median(t - s for (s, _), (t, _) in self.energy_pairs)

    def n4_answer(self, at: float) -> int | None:
        """The number of n4's latest answer that exposed data at `at` (its k-th scrape is its k-th answer)."""
        answered = [k for k, (t, ok) in enumerate(self.scrapes["n4"], start=1) if t <= at and ok]
        return answered[-1] if answered else None

    def n4_named_within(self, at: float) -> set[tuple[str, str]]:
        """The pods n4's answered scrapes within the look-back named on GPU 0."""
        return {pod for k, (t, ok) in enumerate(self.scrapes["n4"], start=1) if ok and at - LOOKBACK < t <= at
                for pod in n4_readings(k)[("0", None)][0]}

    def near_an_edge(self, at: float) -> bool:
        """Whether an n4 scrape's time is within 0.3 s of an edge of a window read at `at` (the instant, the scrape
        interval, the look-back), or one within the look-back within 20 ms of a step of the subquery grid (every 2 s of
        the epoch): which side it falls on is a matter of milliseconds there, not of the panel. (A loaded machine
        stamps a scrape up to ~10 ms off its schedule: a target scheduled on the grid has samples and staleness
        markers on either side of its steps, and the late tier's test of which series is newest (_superseded) can
        take the older one: left out here: a residual, README.)"""
        n4 = [t for t, _ in self.scrapes["n4"]]
        return (any(abs(t - edge) < 0.3 for t in n4 for edge in (at, at - STEP, at - LOOKBACK))
                or self.on_the_grid(at))

    def energy_noise(self, at: float) -> float:
        """How far a true reader of n3's stored energy readings can be from 150 W at `at`: the harness's own error, not
        the panel's, judged from the stored samples' times and values alone. The rate between one copy's consecutive
        readings is off from 150 W by what the reading and its time disagree (none since the readings carry their
        own times, _EnergyReader: a reading computed when answered, a few milliseconds after Prometheus stamped the
        scrape, more on a loaded machine, was off by that). And the panel counts each copy's growth at the steps of
        the scrape interval (the counters' recordings, a step's seconds): a reading stamped d seconds off the copy's
        usual interval moves d seconds of growth from one step to the next, which a rate window of LOOKBACK reads up
        to 2 d / LOOKBACK off (none on the readers' schedules; a scrape stamped 300 ms late: 7.5 %). A panel that
        counts a collection twice, or leaves one out, is further off than both. Only the readings a value at `at`
        can read count (pairs ending within REACH before it)."""
        pairs = [pair for pair in self.energy_pairs if pair[0][0] <= at and pair[1][0] > at - REACH]
        rates = [(v - u) / (t - s) / ENERGY_RATE for (s, u), (t, v) in pairs]
        off = max(abs(t - s - self.energy_interval) for (s, _), (t, _) in pairs)
        return max(abs(rate - 1) for rate in rates) + 2 * off / LOOKBACK

    def on_the_grid(self, at: float) -> bool:
        return any(abs(t - round(t / STEP) * STEP) < 0.02 for t, _ in self.scrapes["n4"]
                   if at - LOOKBACK - STEP < t <= at)

    def shown(self, title: str, selected: dict[str, str] | None = None, calls: int = 1, step: float = STEP) \
            -> list[dict]:
        """`title`'s legends and values at each step of the scene, per call: [{at: {legend: value}}]. The steps are laid
        `step` (or half an interval) from n4's scrapes."""
        target = bundled_panel(title, SETTINGS)["targets"][0]
        expr = interpolate(target["expr"], {**MACROS, **variables(selected or {}, ("namespace", "pod", "node", "gpu"))})
        n4 = self.scrapes["n4"][0][0]
        first = n4 + min(step, STEP / 2) + math.ceil((self.first + 2 * LOOKBACK - n4) / STEP) * STEP
        count = int((self.last - first) // step)
        first = round(first, 3)  # Prometheus' steps are milliseconds
        answers = []
        for _ in range(calls):
            data = self.prometheus.api("query_range", query=expr, start=first, end=first + (count - 1) * step,
                                       step=step)
            steps = {round(first + k * step, 3): {} for k in range(count)}
            for series in data["result"]:
                legend = render_legend(target["legendFormat"], series["metric"])
                for at, value in series["values"]:
                    steps[round(float(at), 3)][legend] = float(value)
            answers.append(steps)
        return answers


def _config(addresses: dict[str, str], rules: list[str]) -> dict:
    every = f"{STEP}s"
    return {"global": {"scrape_interval": every, "scrape_timeout": every, "evaluation_interval": every},
            "rule_files": rules,
            "scrape_configs": [{"job_name": "dcgm", "static_configs": [{"targets": list(addresses.values())}]}]}


@contextmanager
def _recorded(workdir: Path) -> Iterator[Scene]:
    """The scene recorded anew in `workdir`: new exporters (n4 and n6 answering from their first answer) scraped by a
    new Prometheus until n4 has answered ANSWERS times, then no more."""
    project = bundled_project(SETTINGS)
    group = counted_group(("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",), project.catalog, project.settings)
    rules = workdir / "counted.rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": [group]}))
    replays = defined_project(workdir, SETTINGS, alarms=ALARMS)
    alerts = workdir / "replays.rules.yaml"  # the level the live rule judges: the highest
    alerts.write_text(yaml.safe_dump(prometheus_rules(replays.alarms[-1:], replays.catalog, replays.settings)))
    n4 = CountedAnswers(_n4)
    old, new = _EnergyReader(), _EnergyReader()
    payloads = {"n3-old": lambda: _n3(True, old), "n3-new": lambda: _n3(False, new), "n4": n4,
                "n5-a": lambda: _n5(N5_PODS[0]), "n5-b": lambda: _n5(N5_PODS[1]), "n6": CountedAnswers(_n6)}
    with ExitStack() as stack:
        exporters = {name: stack.enter_context(ReplayExporter(payload)) for name, payload in payloads.items()}
        addresses = {name: exporter.address for name, exporter in exporters.items()}
        prometheus = stack.enter_context(Prometheus(workdir, _config(addresses, [str(rules), str(alerts)])))
        deadline = time.monotonic() + 180
        while n4.served < ANSWERS:
            assert time.monotonic() < deadline, f"n4 answered {n4.served} scrapes in 180 s"
            time.sleep(0.5)
        prometheus.stop_scraping()
        yield Scene(prometheus, addresses, replays)


class Recordings:
    """The module's scene, and up to RETRIES fresh recordings of it, made only when a rate cannot be judged on the
    ones before (n3's readings stamped too far off the copy's interval: Scene.energy_noise; none since they carry their
    own times), or when the scene's n4 scrapes sit on the subquery grid (scene)."""

    def __init__(self, stack: ExitStack, tmp_path_factory):
        self.stack, self.tmp_path_factory, self.made = stack, tmp_path_factory, []

    def __getitem__(self, attempt: int) -> Scene:
        while len(self.made) <= attempt:
            workdir = self.tmp_path_factory.mktemp("live-panel-truth")
            self.made.append(self.stack.enter_context(_recorded(workdir)))
        return self.made[attempt]


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    with ExitStack() as stack:
        yield Recordings(stack, tmp_path_factory)


@pytest.fixture(scope="module")
def scene(recordings):
    """The first recording whose n4 scrapes do not sit on the subquery grid: Prometheus offsets a target's scrapes by
    a hash of its labels (the exporter's port among them), so about one recording in 50 scrapes n4 within 20 ms of
    the grid every time, every step of it is left out (Scene.on_the_grid) and the tests read none (a fresh-clone CI
    failed five of them so: 0 steps read)."""
    for attempt in range(1 + RETRIES):
        made = recordings[attempt]
        times = [t for t, _ in made.scrapes["n4"]]
        if sum(abs(t - round(t / STEP) * STEP) < 0.02 for t in times) < len(times) / 2:
            return made
    return made


# --- 1. a node picked that the Node variable does not offer: every per-pod panel agrees on the pods it shows ---

PER_POD = {"Power draw of each pod's GPUs": 150.0, "GPU utilization by pod": 40.0,
           "Energy use rate of each pod's GPUs": ENERGY_RATE}


@pytest.mark.parametrize("node", ["n3", OLD_POD, "a-node-that-left"])
@pytest.mark.parametrize("title", sorted(PER_POD))
def test_a_per_pod_panel_shows_the_pods_of_the_node_picked_as_its_siblings_do(recordings, title, node):
    """n3's pod ml/p shows with n3 picked, and with OLD_POD (its old exporter's copy names it so), in every per-pod
    panel with n3's GPU's value; a node that left (no series of the range) shows no pod in any. Energy use rate showed
    nothing with OLD_POD picked (its rate named by the copies the variable matched, its pod by every copy) while power
    and utilization showed ml/p."""
    truth = {} if node == "a-node-that-left" else {"Pod ml/p": PER_POD[title]}
    for attempt in range(1 + RETRIES):
        scene = recordings[attempt]
        (shown,) = scene.shown(title, {"node": node})
        # energy: within the harness's own error at each step (Scene.energy_noise), at least 2 %
        within = {at: max(0.02, scene.energy_noise(at) + 1e-9) if title == "Energy use rate of each pod's GPUs"
                  else 0.02 for at in shown}
        judged = {at: values for at, values in shown.items() if within[at] < JUDGED}
        if shown and len(judged) >= len(shown) / 2:
            break
    else:
        pytest.fail(f"the exporters answered or were scraped too late to judge a rate in {1 + RETRIES} recordings: "
                    f"{len(judged)} of {len(shown)} steps within {JUDGED:.0%} of 150 W (harness error at the steps "
                    f"of the last: {', '.join(f'{w:.1%}' for w in sorted(within.values()))})")
    wrong = {at: values for at, values in judged.items()
             if set(values) != set(truth) or any(not math.isclose(values[k], truth[k], rel_tol=within[at])
                                                 for k in truth)}
    assert judged and not wrong, f"{title}, node {node}: true {truth}; shown at {len(wrong)} of {len(judged)} " \
        f"steps judged, of {len(shown)} (within {max(within.values()):.2%} at most): {dict(list(wrong.items())[:3])}"


# --- 2. two copies of one GPU ranking alike (two exporters' own pod names): one legend at every step and call ---

CALLS = 8


def _n5_first(scene: Scene, at: float) -> str | None:
    """Which of n5's two copies a step at `at` ranks first by its own scrapes (gpus_named' presence at each step: half
    a rank for a sample within the last scrape interval, a quarter for one within the look-back alone), judged from
    the scrapes' recorded times (`up`): "n5-a" or "n5-b", "" when they rank alike (their names decide, _name_order),
    None when an answered scrape of either is within 5 ms of a window's edge (which side it falls on is Prometheus'
    milliseconds, not the panel's)."""
    ranks = set()
    for name in ("n5-a", "n5-b"):
        answered = [t for t, ok in scene.scrapes[name] if ok]
        if any(abs(t - edge) < 0.005 for t in answered for edge in (at, at - STEP, at - LOOKBACK)):
            return None
        rank = (0.5 if any(at - STEP < t <= at for t in answered) else
                0.25 if any(at - LOOKBACK < t <= at for t in answered) else 0)
        ranks.add((rank, name))
    (low, _), (high, name) = sorted(ranks)
    return name if high > low else ""


@pytest.mark.parametrize("title", ["GPU temperature", "Power draw", "GPU utilization"])
def test_a_gpu_two_exporter_pods_name_alike_keeps_one_legend_at_every_call(scene, title):
    """n5's GPU, read alike by two exporters each writing its own pod's name into Hostname: neither name is its
    node's, and the panel shows it under one of them, the same at every step of every call where the two copies rank
    alike (the legend was one pod's at 6 of 8 calls and the other's at 2); at a step where a late or missed scrape
    left one copy alone with a sample within the last scrape interval (a loaded machine's: the recorded scrape times
    say so, not the wall clock), under that copy's pod."""
    pods = dict(zip(("n5-a", "n5-b"), N5_PODS))
    legends, wrong, judged = {}, {}, 0
    for call, answer in enumerate(scene.shown(title, calls=CALLS)):
        for at, values in answer.items():
            n5 = tuple(sorted(legend for legend in values if legend.startswith("nvidia-dcgm-exporter-")))
            first = _n5_first(scene, at)
            judged += first is not None
            if first:
                if n5 != (f"{pods[first]} GPU 0",):
                    wrong[round(at - scene.first, 1)] = (first, n5)
            elif first is not None:
                legends.setdefault(n5, set()).add(call)
    assert judged, f"{title}: no step of {CALLS} calls could be judged (every one within 5 ms of a scrape)"
    assert not wrong, f"{title}: n5's legend where one copy alone was fresh (s: (that copy, legends)): {wrong}"
    if not legends:
        return  # a loaded run whose every judged step had one copy alone fresh: each was judged above
    assert len(legends) == 1 and len(next(iter(legends))) == 1, \
        f"{title}: n5's legends where its copies rank alike (one, the same at every such step of {CALLS} calls, is " \
        f"true): { {k: sorted(v) for k, v in legends.items()} }"
    ((legend,),) = legends
    assert legend in {f"{pod} GPU 0" for pod in N5_PODS}


# --- 3. the late tier on live scrapes: n4's failed scrapes, its pods named in turn, its MIG GPU reconfigured ---

N5 = "n5 GPU 0"  # n5's line, whichever of its exporters' pod names it is shown under (test 2 pins it)


def _legend(legend: str) -> str:
    return N5 if legend.startswith("nvidia-dcgm-exporter-") and legend.endswith(" GPU 0") else legend


def _instances(answer: int) -> dict[tuple[str, str], float]:
    return {instance: used for (gpu, instance), (_, _, used) in n4_readings(answer).items() if instance is not None}


def _per_gpu_truth(title: str, answer: int) -> dict[str, float]:
    readings = n4_readings(answer)
    if title == "GPU utilization":
        return {"n3 GPU 0": 40.0, N5: 70.0, "n4 GPU 0": readings[("0", None)][1], "n4 GPU 1": 0.0}
    if title == "Framebuffer memory used":
        return {"n4 GPU 0": 30000.0, "n4 GPU 1": 0.0, "n4 GPU 2": sum(_instances(answer).values())}
    return {f"n4 GPU 2 MIG {instance} ({profile})": used for (instance, profile), used in _instances(answer).items()}


def _per_pod_truth(scene: Scene, title: str, at: float, answer: int) -> dict[str, float]:
    """Each pod a scrape within the look-back named, with its GPU's latest answered reading (a MIG pod: its instance's)."""
    readings = n4_readings(answer)
    sliced = {f"Pod {namespace}/{pod}" for namespace, pod in scene.n4_named_within(at)}
    if title == "GPU utilization by pod":
        return {"Pod ml/p": 40.0, "Pod ml/t": 70.0, **{pod: readings[("0", None)][1] for pod in sliced}}
    mig = {f"Pod {namespace}/{pod}": used for (gpu, instance), (pods, _, used) in readings.items()
           if instance is not None for namespace, pod in pods}
    return {**{pod: 30000.0 for pod in sliced}, **mig}


FINE = 0.4  # the late tier's tests' step: between n4's scrape and the subquery grid's next step at most runs (the
# grid is Prometheus' own, every 2 s of the epoch; a scrape's phase on it is the target's)


def _compared(scene: Scene, title: str, truth) -> tuple[dict, int]:
    """`title`'s steps (FINE apart) whose legends or values differ from `truth(at, answer)`, of the steps read (none
    within 0.3 s of a window's edge)."""
    (shown,) = scene.shown(title, step=FINE)
    wrong, read = {}, 0
    for at, values in shown.items():
        answer = scene.n4_answer(at)
        if answer is None or scene.near_an_edge(at):
            continue
        read += 1
        values = {_legend(legend): value for legend, value in values.items()}
        true = truth(at, answer)
        if set(values) != set(true) or any(not math.isclose(values[k], true[k], rel_tol=1e-9) for k in true):
            wrong[round(at - scene.first, 1)] = (answer, values, true)
    return wrong, read


def _late_steps(scene: Scene) -> list[float]:
    """The instants (seconds from the first scrape) at which n4's latest scrape failed."""
    failed = [t for t, ok in scene.scrapes["n4"] if not ok]
    return [round(t - scene.first, 1) for t in failed]


@pytest.mark.parametrize("title", ["GPU utilization", "Framebuffer memory used", "Framebuffer used per MIG instance"])
def test_each_gpu_reads_its_latest_answered_scrape_at_every_step(scene, title):
    """Per GPU (and MIG instance): each GPU's line, named by its node (n4's GPUs, the idle one too), reads the latest
    scrape of its exporter that answered: after a failed scrape (the late tier) too, and a reconfigured MIG GPU its
    new instances only, whatever the look-back still holds of the old ones."""
    wrong, read = _compared(scene, title, lambda at, answer: _per_gpu_truth(title, answer))
    assert read >= 10, read
    assert not wrong, f"{title}: {len(wrong)} of {read} steps wrong (s: (n4's answer, shown, true)); n4's failed " \
        f"scrapes at {_late_steps(scene)} s: {dict(list(wrong.items())[:4])}"


@pytest.mark.parametrize("title", ["GPU utilization by pod", "Framebuffer used by pod"])
def test_each_pod_reads_its_gpus_latest_answered_scrape_at_every_step(scene, title):
    """Per pod: each pod a scrape within the look-back named (team-a/w and team-b/w, one pod name in two namespaces,
    named in turn on one GPU: both), with its GPU's reading of the latest scrape that answered; the idle GPU no pod."""
    wrong, read = _compared(scene, title, lambda at, answer: _per_pod_truth(scene, title, at, answer))
    assert read >= 10, read
    assert not wrong, f"{title}: {len(wrong)} of {read} steps wrong (s: (n4's answer, shown, true)); n4's failed " \
        f"scrapes at {_late_steps(scene)} s: {dict(list(wrong.items())[:4])}"


def test_the_premise(scene):
    """The scene holds what the tests above read: n4's failed scrapes (a step after each reads the late tier), its MIG
    GPU reconfigured with answered scrapes of both configurations within one look-back, both pods named on GPU 0
    within one look-back, and n4's steps half an interval from its scrapes."""
    n4 = scene.scrapes["n4"]
    assert len(n4) >= ANSWERS and [k for k, (_, ok) in enumerate(n4, start=1) if not ok] == list(FAILED), n4
    reconfigured = n4[RECONFIGURED - 1][0]
    assert n4[RECONFIGURED - 2][1] and reconfigured - n4[RECONFIGURED - 2][0] < LOOKBACK
    (shown,) = scene.shown("GPU utilization")
    late = [at for at in shown if not [ok for t, ok in n4 if t <= at][-1]]
    assert len(late) == len(FAILED), late
    assert any(len(scene.n4_named_within(at)) == 2 for at in shown)
    assert all(scene.on_the_grid(at) for at in shown if scene.near_an_edge(at))


# --- 4. a level's period across a gap (the shares of the scrapes due inside it, its start read with `@ end()`) ---

def _fired(scene: Scene, level: int, at: float) -> set[str]:
    """The GPUs (n6's) the replays alarm of `level` fires for at the rule's instant `at` (an instant query, as the rule
    group evaluates it)."""
    alarm = next(a for a in scene.replays.alarms if a.id == f"replays-{level}")
    expr = prometheus_expression(alarm, scene.replays.catalog, scene.replays.settings)
    return {s["metric"]["gpu"] for s in scene.prometheus.query(expr, at) if s["metric"].get("node") == "n6"}


def _after_gap(scene: Scene) -> list[float]:
    """The instants, half an interval after each of n6's scrapes, whose 20 s period holds its first reading after the
    gap and none before it: the period the gap's growth lands in. The rule reads a reading at the first step of the
    scrape interval's grid after it (its subquery's), so from an interval after it on."""
    n6 = scene.scrapes["n6"]
    back = next(t for k, (t, ok) in enumerate(n6) if ok and k and not n6[k - 1][1])
    before = max(t for t, ok in n6 if ok and t < back)
    return [t + STEP / 2 for t, ok in n6 if back + STEP <= t + STEP / 2 < back + 20 and t + STEP / 2 - 20 > before + 0.3]


def test_a_steady_link_reads_its_period_s_share_after_a_gap(scene):
    """GPU 0 makes 2 replays a scrape interval, through the gap too: every 20 s period whose first reading is the one
    after the gap reads the 20 replays due inside it (above 17, not above 23), where the whole gap's growth (24) in
    that reading read 24 and more; GPU 1 alike until its burst."""
    instants = _after_gap(scene)
    assert len(instants) >= 5, instants
    shown = {round(at - scene.first, 1): (_fired(scene, 17, at), _fired(scene, 23, at)) for at in instants}
    wrong = {at: fired for at, fired in shown.items() if fired != ({"0", "1"}, set())}
    assert not wrong, f"s: (GPUs over 17, over 23) (true: both over 17, none over 23) {wrong}"


def test_the_live_rule_fires_for_the_burst_alone(scene):
    """The level-30 rule, evaluated by the Prometheus that scraped the scene every 2 s: GPU 1 (a burst of 40 within
    one interval) fires; GPU 0 (a steady link, across the gap) never does."""
    fired = scene.prometheus.query('ALERTS{alertname="GpudashReplays30", alertstate="firing"}[15m]')
    gpus = {s["metric"]["gpu"] for s in fired if s["metric"].get("node") == "n6"}
    assert gpus == {"1"}, f"GPUs the live rule fired for (true: GPU 1 only): {fired}"

