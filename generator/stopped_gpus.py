"""A GPU that stopped reporting while its node's other GPUs report (the rule `gpu-stopped-reporting`).

DCGM can stop answering for one GPU (fallen off the bus, XID 79, a driver error) while it answers for the node's
others. dcgm-exporter leaves out every field DCGM answers blank (gpu-monitoring-tools PR #92, still the skip of a
blank value in its collector), so its page keeps the other GPUs and holds nothing of that one: its series end. The
data-missing rule counts each node's scrapes, which keep bringing data, and every health rule judges the GPUs that
report, so nothing fired. This rule judges each GPU by its UUID (its node spelling where it has none), whatever
copies carry its readings (an exporter restarted or upgraded, a pod leaving it, its MIG instances remade), against
its node's other GPUs:

- it had a reading (not DCGM's blank) of the field within the last hour (MEMORY),
- none within the alarm's window (its period times its evaluation periods: 10 minutes by default),
- and another GPU of its node (a GPU whose copies within the hour carried a node spelling the lost GPU's carry; the
  alert names the node as that GPU is named now, by promql.gpus_named as every alert) had a reading in each of those
  periods: the node's exporter kept being scraped and kept bringing data; none of the same node and index did (that
  is the same GPU under another UUID: an EC2 instance stopped and started on other hardware keeps its node's name).

With exporter.virtual_gpus, dcgm-exporter 4.5.2 to 4.8.1 writes each field of a GPU pods hold as one copy per pod
(with `pod_uid`) and no series of a GPU no pod holds while another GPU of its node is held: a pod leaving its GPU ends
the GPU's series as DCGM losing it does (tests/support/virtual_gpus.py). The two cannot be told apart from the series,
so a GPU with a reading of such a copy within the hour is not judged (HELD), nor a GPU of a node where a pod holds a GPU
now (a pod taking one GPU of a node no pod held ends the others' series: it paged for each of them): a GPU lost while a
pod holds it or any GPU of its node, or within the hour after, is not alerted on those exporters (nor on 4.5.3 and later
with KUBERNETES_ENABLE_POD_UID, whose copies carry `pod_uid` too); 4.5.3's copies carry none, and an idle GPU keeps its
own series there.

So a node scaled down or removed (no GPU of it reports), an exporter restarting or rolled out (every GPU of the node
away together, and back within the window), a crash loop (readings in each window) and an instance stopped and started
on other hardware (its GPUs' slots read again) do not fire it, nor a node's name given to another machine (a GPU
whose last reading is older than the Node object, where kube-state-metrics tells when it was made, or ARRIVED_MARGIN
older than the first reading of each GPU reading now on the node, is the old machine's: both are read, for a Node
object is kept where a machine replaced under its name, or its instance type changed, re-registers into it); nor
does a GPU renamed by an exporter upgrade (Hostname to hostname: the same UUID, one name at each evaluation) or a pod
leaving a GPU (an idle GPU keeps reporting). A node of one GPU has no other GPU to vouch for its exporter: there the
data-missing rule's per-node count sees the exporter answering without DCGM series.

A GPU off the bus stays lost until someone acts, but the readings above are read over the hour (MEMORY: the names'
hour of copies), and the alert resolved an hour after the GPU's last reading. So the rule is a recording rule read by
its alert at the same evaluation (render.alarms.stopped_rules), which also reads what it wrote within HOLD:
a GPU it judged stopped stays judged while it has no reading and its node's other GPUs read in each period, named as
they are named now (their node spellings of the hour carry the name it was written with: an exporter renamed after
the hour names it anew), unless another GPU reads at its node and index, or another machine has the node's name (its
Node object younger than the hour, or its GPUs' first readings within the hour). It ends when the GPU reads again,
when its node's other GPUs stop too (the node removed; taken up again within HOLD if they read again with the GPU still
lost: a node rebooted, an exporter away for a period) or another machine takes the name. Past an outage over HOLD
(Prometheus down), in the period after it the rule also reads what it wrote up to its last reading before: a GPU it
held then is judged again, one it dropped while Prometheus read on is not taken up (ACROSS). Prometheus evaluates no
rule over its past: a GPU lost over an hour before the rule was first loaded, or before a Prometheus down for over
OUTAGE_SECONDS, is not alerted on. A period in which Prometheus read no GPU at all (it was down) is
not held against a node: a GPU that reads in the latest period stands in for it (the alert resolved for 5 minutes
after Prometheus was down 12). An exporter writing no UUID whose node spelling changes reads as a machine arrived: a
GPU it lost within the hour before is not alerted on.

A reboot that leaves a lost GPU out renumbers the GPUs after it (NVML indexes in bus order): a GPU with a UUID is judged
read, reading in each period, and first read by its UUID alone, whatever its index, so the lost GPU keeps its name
(its index when it last read) and no GPU indexed anew reads as lost under its old index; a GPU at the lost one's index
is taken for it on other hardware only if it did not read before the hour.

CloudWatch cannot judge the GPU itself: a GPU whose data stops has no datapoint to compare, a Metrics Insights alarm
judges each series on its own datapoints (a GPU gone reads as a node removed), metric math combines no two GROUP BY
arrays (the node's per-scrape flag, or its count of GPUs over a longer window, cannot vouch for each of its GPUs), and
no statistic of one period remembers that a GPU reported before. Each scrape of the node does: NVML keeps a node's
indexes until the next boot, so a GPU lost below the node's highest index leaves a hole its other GPUs read around. On
agent.pipeline: otel the agent makes of each scrape its GPUs unread below its highest index (UNREAD), and the rule's
CloudWatch alarm judges each node on it over the rule's window (render/alarms.unread_plan: at least 1 at every scrape
of each period): it names the node, and misses a node's highest-indexed GPU lost and a GPU a reboot left out (the
GPUs after it indexed anew). On agent.pipeline: classic, the Container Insights add-on and with exporter.virtual_gpus
(an idle GPU's series end while another of its node is held) the rule has no CloudWatch alarm; lint AL027 says so
(no_cloudwatch)."""

from __future__ import annotations

from .blanks import READING_FLOOR, short
from .data_missing import counted
from .promql import GPU_LABEL, coalesced_gpu, gpus_named, selector, settings_clusters, uuid_carried, uuid_spellings
from .settings import Settings

MEMORY = "60m"  # how far back a GPU's readings are read: the hour of copies its name is read from (gpus_named)
HELD = ("With exporter.virtual_gpus, a GPU a pod held within the hour, or on a node where a pod holds a GPU, is not "
        "judged: dcgm-exporter 4.5.2 to 4.8.1 ends an idle GPU's series while another GPU of its node is held, as DCGM "
        "losing it does")
CREATED = "kube_node_created"  # kube-state-metrics: when the Node object of a name was made (Unix seconds), by `node`
LAST_STEP = "1m"  # the step a GPU's last reading time is found at (each step reads back 5 minutes)
MEMORY_SECONDS = 3600  # MEMORY
# seconds a GPU's last reading must precede the first reading of each GPU reading now on its node for it to be the
# previous machine's (without kube-state-metrics): its last is found up to a step and a scrape early, theirs up to a
# scrape late; a first reading is looked for MEMORY, HOLD and twice this far back (FIRST_SECONDS), so a GPU reading
# all along vouches, its node's readings missing for up to HOLD (a node rebooted, Prometheus down) or not
ARRIVED_MARGIN = 120
SPELLING = "gpudash_spelling"  # a node spelling a GPU's copies carried within the hour
RECORDED = "lost"  # the recording rule's part of its name (render.alarms.recorded_name): the GPUs judged stopped
# how far back the recording rule reads the GPUs it judged stopped before: past a Prometheus restarted or down (for up
# to this long), a node rebooted or its exporter away. Shorter than the hour, less the minutes a GPU is dropped after,
# in which another machine's arrival under the node's name (its Node object, its GPUs' first readings) or a new GPU at
# the lost one's index (read in the band before the hour: one renumbered) is compared, so that a GPU dropped for either
# is not taken up again (at 55 minutes a GPU replaced at its index was, 53 minutes after: test_gpu_stopped_reporting*)
HOLD_SECONDS = 2700
HOLD = f"{HOLD_SECONDS // 60}m"
# how far back a GPU's first reading is looked for (ARRIVED_MARGIN): were it MEMORY and the margins alone, a node whose
# GPUs all read nothing for minutes read as arrived an hour after (a lost GPU's alert resolved then for as long)
FIRST_SECONDS = MEMORY_SECONDS + HOLD_SECONDS + 2 * ARRIVED_MARGIN

# how long an outage the carry outlives (a Prometheus down, or reading no GPU at all): its GPUs are judged after it
# by their node's first readings (looked for FIRST_SECONDS back), which must reach before it (else the node reads as a
# machine arrived at its end), less the margins
OUTAGE_SECONDS = FIRST_SECONDS - 2 * ARRIVED_MARGIN
OUTAGE_STEP = "5m"  # the step the last reading before an outage is found at (each step reads back 5 minutes)
# seconds a GPU's last writing may precede that last reading and it be carried past the outage: the step and its
# look-back (the reading found up to 5 minutes late), an evaluation interval and a scrape's; a GPU dropped within them
# before the outage (another machine under its node's name, another GPU at its index) is judged again after it
ACROSS = 420

# Why the rule has no CloudWatch alarm (lint AL027, cost's prometheus_only), each case in words true of it: from the
# GPU's own series CloudWatch cannot judge it (FROM_SERIES), which is the whole reason on agent.pipeline: classic and the
# Container Insights add-on; on otel it can, by each node's GPUs unread (OTEL_ALARM), but for what that count cannot
# tell or is not made of.
FROM_SERIES = ("CloudWatch cannot judge a GPU that stopped reporting while its node's other GPUs report on the GPU's "
               "own series: the series has no datapoint left to compare, a Metrics Insights alarm judges each series "
               "on its own datapoints (a GPU gone reads as a node removed), and metric math combines no two GROUP BY "
               "arrays (a node's data cannot vouch for each of its GPUs)")
# Where the agent makes each node's GPUs unread at each scrape (agent.pipeline: otel, render/agent_otel.unread_copies),
# the rule's CloudWatch alarm judges each node on them (render/alarms.unread_plan); elsewhere lint AL027 says why not.
NOT_ON_PIPELINE = ("agent.pipeline: classic has no processor to count a node's GPUs at each scrape, which the OTel "
                   "pipeline's CloudWatch alarm judges (GPUs unread below the node's highest index)")
NOT_ON_ADDON = ("the Container Insights add-on publishes no GPU index per node to count from; its data-missing rule's "
                "per-GPU alarm counts each node's GPUs against the kubelet's count instead")
OTEL_ALARM = ("on agent.pipeline: otel the agent counts each node's GPUs unread below its highest index at each scrape, "
              "which the rule's CloudWatch alarm judges each node on")
NOT_WITH_COPIES = ("with exporter.virtual_gpus, dcgm-exporter 4.5.2 to 4.8.1 ends the series of a GPU no pod holds while "
                   "another GPU of its node is held, a hole below the held GPU's index that no lost GPU made")

# The metric the OTel pipeline's agent makes of each scrape of a node's exporter (render/agent_otel.unread_*): its
# highest GPU index read plus one, less the GPUs read (each GPU once, by index, with a reading of the presence field or
# its MIG stand-in that is not DCGM's blank): 0 where every index up to the highest read, k where k GPUs below it read
# nothing. NVML indexes a node's GPUs 0 to n - 1 in bus order and keeps them until the next boot, so a GPU that stopped
# reporting below the highest index leaves a hole its node's other GPUs read around; a node removed, an exporter
# restarted or failing a scrape publishes nothing (no point: not a hole), a pod leaving its GPU or a GPU idle changes
# nothing (the GPU keeps reporting). The highest-indexed GPU lost leaves no hole (the node reads as one of a GPU fewer),
# nor does a GPU left out by a reboot (the GPUs after it indexed one lower).
UNREAD = "gpudash_gpus_unread"


def _names(items) -> str:
    return ", ".join(dict.fromkeys(items))


def _either(parts: list[str]) -> str:
    """One term per scope branch (settings_clusters), joined with `or`."""
    return parts[0] if len(parts) == 1 else "(" + " or ".join(parts) + ")"


def expression(metrics: tuple[str, ...], settings: Settings, period: int, periods: int, keys: tuple[str, ...],
               resolution: str) -> str:
    """The rule's condition in one expression, its memory the hour (no recording rule read): each GPU (labelled by
    `keys`: its node and index, and its cluster on a Prometheus holding several) with a reading of one of `metrics`
    within MEMORY, none within the last `periods` periods of `period` seconds, whose node's other GPUs had one in each
    of them. `resolution`: the rules' step (the names' freshness)."""
    return f"max by ({_names(keys)}) ({_judged(metrics, settings, period, periods, resolution)})"


def recording(metrics: tuple[str, ...], settings: Settings, period: int, periods: int, resolution: str,
              record: str) -> str:
    """The recording rule `record`: each GPU `expression` judges stopped, or that `record` held within HOLD and that
    still has no reading while its node's other GPUs read, by its identity and the node alerts name; its
    value the GPU's last reading time (Unix seconds), no earlier than MEMORY back."""
    return _judged(metrics, settings, period, periods, resolution, record)


def alert(keys: tuple[str, ...], settings: Settings, record: str) -> str:
    """The alert: the GPUs the recording rule `record` wrote at this evaluation (the group writes it just before; an
    older sample, kept past a restart without a staleness marker, is none of them: render.alarms.recorded_value), by
    `keys` and the lost GPU's UUID where its exporter writes one (the index a reboot gives another GPU: uuid_name).
    One alert a GPU: where the recording holds a GPU of `keys` named by its UUID, none of them named without one. A GPU
    is named by its UUID where a series carries one, else by its node and index, so after a rollout whose series carry
    no UUID (a scrape rolled with a labeldrop of it) a GPU lost stood as two, and fired twice."""
    uuid, written = uuid_name(settings), f"last_over_time({record}[1ms])"
    named = f"({written} unless on ({uuid}) vector(1))"  # those named by a UUID (vector(1)'s is empty)
    one = f"{named} or {written} unless on ({_names((settings.labels.cluster, *keys))}) {named}"
    return f"max by ({_names((*keys, uuid))}) ({one})"


def uuid_name(settings: Settings) -> str:
    """The label the exporter writes a GPU's UUID under, which the recording and its alert carry: a reboot that leaves
    the lost GPU out indexes the GPUs after it one lower, so its node and index name another GPU then."""
    return settings.labels.uuid


def _judged(metrics: tuple[str, ...], settings: Settings, period: int, periods: int, resolution: str,
            record: str | None = None) -> str:
    """Each GPU stopped (labelled by its identity and the node alerts name), its value its last reading time, no
    earlier than MEMORY back; with `record`, also each GPU `record` held within HOLD that still reads nothing."""
    labels = settings.labels
    scope = settings_clusters(settings)
    identity = _names((labels.cluster, GPU_LABEL, "gpu"))
    floor = short(READING_FLOOR)
    # each field read (the presence field, and its MIG stand-in where a GPU may be split: MIG instances do not report
    # GPU utilization) in each scope branch (settings_clusters)
    sources = [(metric, branch) for metric in metrics for branch in scope.matchers(labels)]

    # a GPU by its UUID alone, where it has one: NVML indexes GPUs in bus order, so a reboot that leaves one out
    # indexes the GPUs after it one lower (the same GPU, another `gpu`)
    uuid = uuid_name(settings)
    by_uuid = _names((labels.cluster, GPU_LABEL))
    with_uuids = [[f'{name}!=""'] for name in uuid_spellings(labels)]  # a series with a UUID, under either label

    def read(span: str, shift: int = 0, copies: bool = False, uuids: bool = False) -> str:
        """Each GPU (by its identity) with a reading, not a blank, within `span` ending `shift` seconds back;
        `copies`: of a pod's copies carrying the exporter's copy label (KUBERNETES_VIRTUAL_GPUS) alone; `uuids`: each
        GPU with a UUID, by it alone."""
        offset = f" offset {shift}s" if shift else ""
        matchers = [f'{labels.copies[0]}!=""'] if copies else []
        raw = _either([f"(min_over_time({selector(metric, branch + matchers + more)}[{span}]{offset}) < {floor})"
                       for metric, branch in sources for more in (with_uuids if uuids else [[]])])
        return f"max by ({by_uuid if uuids else identity}) ({coalesced_gpu(raw, labels)})"

    def named(series: str) -> str:
        """`series` with the node label its GPU is named by in every alert (the hour's copies)."""
        names = gpus_named(metrics, list(scope.naming(labels)), MEMORY, resolution, labels)
        return f"({series} + on ({identity}) group_left ({labels.node}) (0 * {names}))"

    window = f"{period * periods}s"

    def unread(gpus: str) -> str:
        """`gpus` but those with a reading within the window, under their index or, by their UUID, another."""
        return f"({gpus} unless on ({identity}) {read(window)} unless on ({by_uuid}) {read(window, uuids=True)})"

    silent = unread(read(MEMORY))
    if labels.copies:  # exporter.virtual_gpus: a GPU a pod held within MEMORY (see HELD) is not judged
        silent = f"({silent} unless on ({identity}) {read(MEMORY, copies=True)})"
    # the GPUs that read in each period (by their UUID where they have one: under one index or, renumbered by a
    # reboot, two), by the node and index alerts name them: a GPU of the same node and index reading there may be the
    # same GPU under another UUID (replacing, below), and any GPU of the node reading there vouches for its exporter
    # A period in which Prometheus read no GPU at all (it was down, or restarting) says nothing of the node: there the
    # GPU's reading of the latest period stands in (a lost GPU's alert resolved for a period after Prometheus was
    # down over one)
    latest = read(f"{period}s")

    def unread_all(k: int) -> str:
        """Nothing at all read in the period `k` periods back (Prometheus was down, or restarting)."""
        return " and on () ".join(f"absent_over_time({selector(metric, branch)}[{period}s] offset {period * k}s)"
                                  for metric, branch in sources)

    def in_period(k: int) -> str:
        if not k:
            return latest
        return f"({read(f'{period}s', period * k)} or on ({identity}) ({latest} and on () {unread_all(k)}))"
    each_period = "(" + f" and on ({by_uuid}) ".join(in_period(k) for k in range(periods)) + ")"
    reporting = named(each_period)
    slot, node = _names((labels.cluster, labels.node, "gpu")), _names((labels.cluster, labels.node))
    # The node a GPU that stopped is on: the name the GPUs that read in each period are named by now, of those whose
    # copies within the hour carry a node spelling its copies carry (SPELLING). Its own copies may hold a name the
    # node no longer goes by: an exporter without NODE_NAME writes its own pod's name into Hostname, and the GPUs that
    # read after it was upgraded or restarted are named anew while the lost GPU's copies keep the old pod's name.
    present = _either([f"present_over_time({selector(metric, branch)}[{MEMORY}])" for metric, branch in sources])
    spellings = (f'max by ({identity}, {SPELLING}) (label_replace({coalesced_gpu(present, labels)}, "{SPELLING}", '
                 f'"$1", "{labels.node}", "(.*)"))')
    spelling = _names((labels.cluster, SPELLING))
    vouching = named(f"({spellings} and on ({identity}) {each_period})")
    now_named = f"topk by ({spelling}) (1, max by ({spelling}, {labels.node}) ({vouching}))"
    # each GPU's last reading time (at LAST_STEP over the hour)
    last = _either([f"max_over_time((timestamp({selector(metric, branch)}) and {selector(metric, branch)} < {floor})"
                    f"[{MEMORY}:{LAST_STEP}])" for metric, branch in sources])
    # its UUID carried on, one per identity: under either label (uuid_carried), else a GPU whose exporter respelled
    # `uuid` as `UUID` within the hour had two (its old copies none under the settings' label), and the recording
    # failed to evaluate ("many-to-many matching") whenever any GPU was lost
    last = f"max by ({identity}, {uuid}) ({uuid_carried(coalesced_gpu(last, labels), labels)})"
    lost = f"(0 * ({spellings} and on ({identity}) {silent}) + on ({identity}) group_left ({uuid}) {last})"
    if record:  # carried: a GPU judged stopped before, past the hour of its readings, named as then (a spelling of
        # the node's copies within the hour: the GPUs reading now name it on, whatever their name has become)
        # (a GPU with a UUID held without one is the recording of the rules before they carried it, 3a57ec48: read
        # beside the upgraded rules' series of it, it fired twice from the hour of its readings on, the recording writing both again at each evaluation)
        held_with, held_without = (f'last_over_time({record}{{{uuid}{op}""}}[{HOLD}])' for op in ("!=", "="))
        # past an outage over HOLD: in the period after Prometheus read nothing at all, the GPUs it wrote up to its
        # last reading before (ACROSS), not those it dropped while it read on (for another machine or GPU: OUTAGE)
        kept = f'{record}{{{uuid}!=""}}'
        anything = _either([selector(metric, branch) for metric, branch in sources])
        last_read = (f"max_over_time((vector(time()) and on () count({anything}))[{OUTAGE_SECONDS}s:{OUTAGE_STEP}] "
                     f"offset {period}s)")
        written = (f"max_over_time(timestamp({kept})[{OUTAGE_SECONDS}s:{LAST_STEP}]) >= on () group_left () "
                   f"({last_read} - {ACROSS})")
        across = f"(last_over_time({kept}[{OUTAGE_SECONDS}s]) and {written} and on () {unread_all(1)})"
        held_with = f"({held_with} or {across})"
        held = (f"max by ({identity}, {labels.node}, {uuid}) "
                f"({held_without} unless on ({identity}) {held_with} or {held_with})")
        spelt = f'label_replace({held}, "{SPELLING}", "$1", "{labels.node}", "(.*)")'
        lost = f"({lost} or on ({identity}) {unread(spelt)})"
    stopped = (f"max by ({identity}, {labels.node}, {uuid}) "
               f"({lost} + on ({spelling}) group_left ({labels.node}) (0 * {now_named}))")
    # a GPU whose last reading is older than its node's Node object read on another machine of that name (EKS names a
    # node by its private IP, which a later node may be given): where kube-state-metrics tells when it was made
    made = _either([selector(CREATED, branch) for branch in scope.matchers(labels)])
    if labels.node != "node":  # kube-state-metrics names the node in `node`
        made = f'label_replace({made}, "{labels.node}", "$1", "node", "(.*)")'
    # without it, the first reading of the GPUs reading now on the node: a GPU whose last reading is older than every
    # one of theirs (by ARRIVED_MARGIN: both times are read at LAST_STEP) never stood beside them
    first = _either([f"min_over_time((timestamp({selector(metric, branch)}) and {selector(metric, branch)} < {floor})"
                     f"[{FIRST_SECONDS}s:{LAST_STEP}])" for metric, branch in sources])
    first = f"min by ({by_uuid}) ({coalesced_gpu(first, labels)})"  # by UUID: the index a reboot changed or not
    arrived = (f"(min by ({node}) ((0 * {reporting}) + on ({by_uuid}) group_left () {first}) "
               f"- {ARRIVED_MARGIN})")
    # every node a stopped GPU is named on has a GPU reading in each period (it vouches), so a time to compare with;
    # a GPU's last reading is taken as no older than MEMORY back (a GPU carried past the hour keeps its place beside
    # GPUs reading all along: their first reading is found no earlier than MEMORY and 2 ARRIVED_MARGIN back). Both
    # are read where kube-state-metrics answers, the later kept: a Node object is kept where a machine replaced under
    # its name re-registers into it (it paged for each GPU the smaller machine lacks, held for as long as it read)
    # (the Node object's time apart from the first readings by a label of its own, so that `or` keeps both)
    since = f'max by ({node}) (label_replace(max by ({node}) ({made}), "gpudash_made", "1", "", "") or {arrived})'
    # another GPU reading at its node and index is the same GPU on other hardware (a GPU replaced, an instance
    # stopped and started), unless it read before the hour too: one a reboot indexed anew (by its UUID)
    before = FIRST_SECONDS - MEMORY_SECONDS + ARRIVED_MARGIN
    settled = _either([f"present_over_time({selector(metric, branch + more)}[{before}s] "
                       f"offset {MEMORY_SECONDS - ARRIVED_MARGIN}s)"
                       for metric, branch in sources for more in with_uuids])
    replacing = f"({reporting} unless on ({by_uuid}) max by ({by_uuid}) ({coalesced_gpu(settled, labels)}))"
    judged = (f"(clamp_min({stopped}, time() - {MEMORY_SECONDS}) >= on ({node}) group_left () {since} "
              f"unless on ({slot}) {replacing})")
    if labels.copies:  # exporter.virtual_gpus: no GPU of a node where a pod holds a GPU now (see HELD)
        judged = (f"({judged} unless on ({node}) ({reporting} and on ({identity}) "
                  f"{read(f'{period * periods}s', copies=True)}))")
    return judged


# scrapes a period of the rule holds at least: a node's other GPUs vouch for its exporter by a reading in each period (on
# CloudWatch, a datapoint of UNREAD in each), so a period of one scrape interval holds none when a scrape lands a
# little late (an exporter whose scrapes fall at a period's edge: most periods hold one, some two, some none) or
# fails; its CloudWatch alarm (every period breaching, no data not breaching) then missed a GPU stopped for an hour
# (60 s periods at 60 s scrapes landing within 0.3 s of the minute: in ALARM at 15 of the 78 minutes it should be,
# over an evaluation range one period longer than the alarm's), and its Prometheus rule let go of the GPU at any
# evaluation whose window held no scrape of the node. Two scrape intervals keep a reading in each period.
SCRAPES_PER_PERIOD = 2


def period_problem(period: int, interval: int, cloudwatch: bool) -> str:
    """Why the rule cannot judge periods of `period` seconds at scrapes every `interval` ("" where it can), by its
    Prometheus rule and, where it makes one (`cloudwatch`: not_on_cloudwatch says none), its CloudWatch alarm."""
    if period >= SCRAPES_PER_PERIOD * interval:
        return ""
    return (f"its period of {period} s is under {SCRAPES_PER_PERIOD} scrape intervals (scrape.interval {interval} s): "
            f"the rule judges a GPU against its node's other GPUs reading in each period, and a period that short "
            f"holds no scrape whenever one lands a little late or fails (a node's scrapes falling at a period's "
            f"edge): " + ("its CloudWatch alarm, every period breaching and no data not breaching, then misses the "
                          "lost GPU, and its Prometheus rule lets go of it" if cloudwatch else
                          "its Prometheus rule then lets go of it"))


def fields_read(catalog, settings: Settings, metric: str) -> tuple[str, ...]:
    """The fields a GPU reads by where the rule reads `metric`: it and, where a GPU may be split into MIG instances and
    MIG does not report it (GPU utilization), the field they report (Catalog.mig_presence: its stand-in, engine
    activity, else a framebuffer or memory gauge): a GPU split reads on."""
    beside = None if settings.no_mig else catalog.mig_presence(metric)
    return (metric, *((beside,) if beside else ()))


def read_fields(catalog, settings: Settings) -> tuple[str, ...]:
    """The fields a GPU reads by in UNREAD: those of the presence field the bundled rule reads (the first of PRESENCE
    the counters CSV collects), as the rule reads them (fields_read)."""
    from .catalog import PRESENCE

    return fields_read(catalog, settings, next((name for name in PRESENCE if name in catalog), PRESENCE[0]))


def not_on_cloudwatch(alarm, catalog, settings: Settings) -> str | None:
    """Why the rule has no CloudWatch alarm (lint AL027), None where it has one: each node's GPUs unread below its
    highest index, which the OTel pipeline's agent counts at each scrape (UNREAD) from the fields the rule reads
    (read_fields). The JSON path has no processor, the Container Insights add-on no GPU index, and with
    exporter.virtual_gpus an idle GPU's series end (NOT_WITH_COPIES)."""
    from .container_insights import enabled

    if enabled(settings):
        return f"{FROM_SERIES}; {NOT_ON_ADDON}"
    if settings.agent.pipeline != "otel":
        return f"{FROM_SERIES}; {NOT_ON_PIPELINE}"
    if settings.exporter.virtual_gpus:
        return f"{OTEL_ALARM}, but {NOT_WITH_COPIES}"
    counted, metric = read_fields(catalog, settings)[0], alarm.condition.query.metric
    return None if metric == counted else \
        f"{OTEL_ALARM}, by {counted} alone (the first presence field the counters CSV collects), not {metric}"


def unread_description(settings: Settings, period: int, periods: int) -> tuple[tuple[str, str], ...]:
    """What the rule's CloudWatch alarm sees, and what it cannot (data_missing.About: each sentence, its short form)."""
    minutes = period * periods // 60
    # (a GPU below the highest index that never read fires it too: one DCGM never answered for, or an exporter
    # serving some of its node's GPUs, -d/--devices; the Prometheus rule judges only a GPU read within the hour)
    return ((f"A GPU node whose every scrape over {counted(minutes, 'minute')} read a GPU below its highest index unread, "
             f"while it reported in each {period // 60}-minute period, is a contributor in ALARM: DCGM lost that GPU "
             f"or never read it.", ""),
            ("It names the node; a node's highest-indexed GPU lost, or left out by a reboot, is not seen.", ""),
            ("A node removed, an exporter restarted and a pod leaving its GPU do not fire it.", ""))


def no_cloudwatch(project) -> list[tuple[str, str]]:
    """(where, message) of each rule judged by its Prometheus rule alone (lint AL027): each not_on_cloudwatch gives a
    reason for."""
    return [(alarm.defined_at, f"alarm {alarm.id!r} has no CloudWatch alarm, only its Prometheus rule: {why}")
            for alarm in project.alarms if alarm.stopped
            for why in [not_on_cloudwatch(alarm, project.catalog, project.settings)] if why]
