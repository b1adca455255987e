"""Project -> every artifact, as one typed set of plain data. Pure and deterministic.

Nothing here is text: `output.encode` turns the set into the files of a build, and `output.read`
turns a build back into the same set, so lint, verify and publish work on one form whether the
artifacts were just built or read from a reviewed build.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from typing import Any, Callable, Iterator

from . import dashboard_parts, grafana_inputs
from .grafana_inputs import grafanalib_json as _grafanalib_json, grafanalib_uid_of as _grafanalib_uid
from .errors import InputError
from .exporter_styles import named_daemonsets, style_for
from .markers import GRAFANA_OWNER_TAG
from .names import cloudwatch_dashboard_name
from .project import Project
from .settings import Cluster, Settings
from .render import agent, agent_otel, alarms as alarm_render, cloudformation, cloudwatch, scrape
from .render import grafana as grafana_render
from .render.grafana_files import provisioning


@dataclass(frozen=True)
class GrafanaDashboard:
    """One Grafana dashboard: its uid, title, where it was defined and its JSON model."""
    uid: str
    title: str
    # Where it came from (definition file:line, or the build file it was read from): provenance for
    # messages, not part of the dashboard, so a dashboard read from a build equals the one built.
    source: str = field(compare=False)
    model: dict[str, Any]
    # The model the cut measured, its file and the text its sidecar ConfigMap carries (output.grafana_dashboard_texts;
    # dashboard_parts.cut): written from these, not serialized again, while `model` is that model (written_texts).
    # None where not measured (a set read back).
    texts: tuple[dict[str, Any], bytes, bytes] | None = field(default=None, compare=False, repr=False)

    def written_texts(self) -> tuple[bytes, bytes] | None:
        """The texts the cut measured, where they are `model`'s: a copy given another model (dataclasses.replace)
        is serialized anew, not written with the texts of the model it replaced."""
        return self.texts[1:] if self.texts is not None and self.texts[0] is self.model else None


class _RenderedBody:
    """CloudWatchDashboard.body: the body given, or, given a render.cloudwatch.PendingBody (a build's), what it
    renders, rendered when first read. The dashboard holds what it was given (`held`)."""

    def __get__(self, dashboard: Any, owner: Any = None) -> dict[str, Any]:
        if dashboard is None:  # (asked by dataclasses for a default: there is none)
            raise AttributeError("body")
        body = dashboard.__dict__["_held"]
        return cloudwatch.rendered(body)

    def __set__(self, dashboard: Any, body: Any) -> None:
        dashboard.__dict__["_held"] = body


@dataclass(frozen=True)
class CloudWatchDashboard:
    """One CloudWatch dashboard: its name, its cluster's Region and its body."""
    name: str
    region: str  # where PutDashboard writes it: its cluster's Region
    # the DashboardBody, without the ownership stamp (added when it is encoded); a build's is rendered when first read
    body: dict[str, Any] = _RenderedBody()  # type: ignore[assignment]
    # What renders the body (render.cloudwatch.ClusterBodies and the cluster): the clusters' bodies of one dashboard
    # are written from one text (output.BodyStrings). None for a body read from a build.
    made: tuple[Any, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def held(self) -> Any:
        """The body as the dashboard holds it: the body, or a build's PendingBody, rendered or not (the object its
        template holds too, which output.BodyStrings knows the body by)."""
        return self.__dict__["_held"]


@dataclass(frozen=True)
class AlarmRequest:
    """One CloudWatch alarm: the PutMetricAlarm request and the Region it is made in."""
    region: str
    request: dict[str, Any]  # PutMetricAlarm's keyword arguments
    # What made the request of a cluster's alarm (render.alarms.Maker, the cluster and the request it made): the
    # clusters' requests of one maker are written from one text (alarm_texts.AlarmTexts). None for a fleet alarm and a
    # request read from a build.
    made: tuple[Any, Any, dict[str, Any]] | None = field(default=None, compare=False, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """The form cloudwatch/alarms.json lists it in, and the publishers take."""
        return {"Region": self.region, "Request": self.request}


@dataclass(frozen=True)
class AgentConfig:
    """One cluster's CloudWatch agent: its cwagentconfig.json and the scrape config it mounts."""
    cluster: str
    namespace: str
    config: dict[str, Any]  # cwagentconfig.json
    scrape: dict[str, Any]  # prometheus.yaml
    otel: dict[str, Any] | None = None  # gpudash-otel.yaml: the pipeline that publishes (agent.pipeline: otel)
    project: str | None = None  # the settings' project, which its ConfigMaps record (markers.kubernetes_publisher)
    # What made it (a function of the cluster giving its AgentConfig, and the cluster): the clusters' ConfigMaps of
    # one maker are written from one text (output.AgentTexts). None for a config read from a build.
    made: tuple[Any, Any] | None = field(default=None, compare=False, repr=False)

    def publishing(self) -> dict[str, Any]:
        """What the agent publishes, in the JSON path's terms whichever pipeline does it: cluster_name and
        emf_processor (metric_namespace, metric_unit, metric_declaration)."""
        if self.otel is None:  # the strings as the agent reads them (render/agent escapes a `$`)
            from .render.agent_otel import unescaped

            prometheus = self.config["logs"]["metrics_collected"]["prometheus"]
            emf = prometheus.get("emf_processor") or {}
            return {**prometheus, **{key: unescaped(prometheus[key]) for key in ("log_group_name",)
                                     if isinstance(prometheus.get(key), str)},
                    "emf_processor": {**emf, **({"metric_namespace": unescaped(emf["metric_namespace"])}
                                                if isinstance(emf.get("metric_namespace"), str) else {})}}
        from .render.agent_otel import publishing

        return publishing(self.otel)


@dataclass(frozen=True)
class Note:
    """Something the build left out and why, found while it was made (a lint note: DF001, CW013, AL011)."""
    rule: str
    where: str
    message: str


@dataclass(frozen=True)
class Artifacts:
    """Everything a build holds, as plain data: encoded and written only by output.py."""
    grafana: tuple[GrafanaDashboard, ...]
    grafana_folder: dict[str, str]  # {"uid", "title"}: the folder the dashboards go in
    grafana_provisioning: dict[str, Any]
    cloudwatch_dashboards: tuple[CloudWatchDashboard, ...]
    alarms: tuple[AlarmRequest, ...]  # sorted by Region and name
    primary_region: str  # the first cluster's: CloudFormation puts the (global) dashboards there
    # stack name -> template (one per cluster, one per Region of fleet alarms); a dashboard's DashboardBody is its body
    cloudformation: dict[str, dict[str, Any]]
    agents: tuple[AgentConfig, ...]  # empty with cloudwatch.source: container-insights
    addon: dict[str, Any] | None  # the Container Insights add-on's configuration values, or None
    additional_scrape_configs: dict[str, Any]
    service_monitor: dict[str, Any]
    prometheus_rules: dict[str, Any]
    prometheus_rule_objects: tuple[dict[str, Any], ...]  # the same rules as PrometheusRules, one per group
    # What publishing may prune, named as the build was made: the uids in its Grafana folder, alarm and
    # CloudWatch dashboard names ("" for dashboards: none are listed)
    grafana_uid_prefix: str
    alarm_prefix: str
    dashboard_prefix: str
    # What the build was made from, beyond its files: what it left out and why, and the counters CSV's sha256
    notes: tuple[Note, ...]
    counters_sha256: str
    # What the Grafana dashboards were made from (grafana_inputs.made_from; "" without them, or read from a build
    # that recorded none): verify reads their uids from a build made from the same, not rendering them
    grafana_made_from: str = field(default="", compare=False)
    project: str = ""  # the settings' `project`, which each CloudWatch dashboard's stamp binds ("" when unset)
    # The settings' cluster names, which a project's objects record they were published with (read from a
    # build, they come from the settings it is read with, as `project` does).
    clusters: tuple[str, ...] = field(default=(), compare=False)
    origin: str = field(default="<generated>", compare=False)  # the build folder it was read from
    # The annotations by which the build's Kubernetes objects record the settings that wrote them
    # (markers.kubernetes_publisher), which the dashboards' ConfigMaps carry: read from a build, as its ConfigMaps
    # carry them (none from a build written before they did)
    publisher: dict[str, str] = field(default_factory=dict)
    # the ServiceMonitors of the fleet's other deployment styles (clusters[].exporter.deployment), beside
    # service_monitor's, in its file
    more_service_monitors: tuple[dict[str, Any], ...] = ()
    # Each alarm resource of the templates and the request it was made from, by the resource's id (render.
    # cloudformation.templates): the resource is written from the request's text (alarm_texts.AlarmTexts). Empty for a set
    # read from a build.
    alarm_resources: dict[int, tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=dict, compare=False,
                                                                              repr=False)
    # The texts of the clusters' requests split at their names, by maker and kind of cluster (alarm_texts.AlarmTexts): the
    # build measured its templates' alarms by them, and the files are written from them. Empty for a set read back.
    alarm_references: dict[tuple[Any, ...], Any] = field(default_factory=dict, compare=False, repr=False)
    # The rules files (RULES and PROMETHEUS_RULE) generate's build writes with its rules (build's `ahead`: in a child,
    # or here), with the rules and objects it writes them from, the files given when called: output.encode writes
    # them while the set still holds those. None elsewhere.
    rule_files: tuple[dict[str, Any], tuple[dict[str, Any], ...], Callable[[], tuple[bytes, bytes]]] | None = \
        field(default=None, compare=False, repr=False)

    def agent(self, cluster: str) -> AgentConfig | None:
        return self._agents_by_cluster.get(cluster)

    @cached_property
    def _agents_by_cluster(self) -> dict[str, AgentConfig]:
        return {a.cluster: a for a in self.agents}


def grafana_dashboards(project: Project) -> list[GrafanaDashboard]:
    """Every Grafana dashboard: neutral definitions rendered, grafanalib ones serialized."""
    result = [GrafanaDashboard(grafana_render.uid_for(d, project.settings), d.title, d.defined_at,
                               grafana_render.render(d, project.catalog, project.settings))
              for d in project.grafana_definitions()]
    for item in project.grafanalib_dashboards:
        model = _grafanalib_json(item)
        model["uid"] = _grafanalib_uid(model)
        result.append(GrafanaDashboard(model["uid"], model.get("title", ""), item.where, model))
    for dashboard in result:
        tags = dashboard.model.setdefault("tags", [])
        if GRAFANA_OWNER_TAG not in tags:
            tags.append(GRAFANA_OWNER_TAG)
    _refuse_reused_uids([(dashboard.uid, dashboard.source) for dashboard in result])
    # a dashboard too large for the sidecar ConfigMap client-side kubectl apply takes: cut into dashboards that fit
    settings = project.settings
    return dashboard_parts.cut(result, settings.grafana.folder.title, scrape.publisher_annotations(settings),
                               settings.grafana.uid_prefix)


def rule_groups(project: Project) -> dict[str, Any]:
    """The Prometheus rules of `project` (its rule groups, each a PrometheusRule of the build). How many groups the
    alerts and the counters' recordings take follows the size of their rules (render.alarms.size_bounded), so their
    objects' names are known only once the rules are written. Made around the regex of a large fleet's clusters
    (rule_texts)."""
    from .rule_texts import made

    return made(project).rules


def grafana_uids(project: Project) -> list[str]:
    """The uid of each dashboard `grafana_dashboards` makes, in its order: what names a dashboard's sidecar ConfigMap
    (verify looks for those of this build's names). Rendered: whether a dashboard is cut into parts, and into how many
    (dashboard_parts), only its size tells."""
    return [dashboard.uid for dashboard in grafana_dashboards(project)]


def _refuse_reused_uids(uids: list[tuple[str, str]]) -> None:
    """Refuses a uid two dashboards give (each `(uid, where it is defined)`): Grafana keeps one dashboard of a uid."""
    seen: dict[str, str] = {}
    for uid, source in uids:
        if uid in seen:
            raise InputError(f"Grafana uid {uid!r} is used twice (also by {seen[uid]})",
                             where=source, hint="give each dashboard a unique id or uid")
        seen[uid] = source


def cloudwatch_dashboards(project: Project) -> tuple[CloudWatchDashboard, ...]:
    return tuple(CloudWatchDashboard(name, region, body, made) for name, region, body, made in
                 cloudwatch.dashboards(project.cloudwatch_definitions(), project.catalog, project.settings))


def _dashboard_owners(project: Project) -> dict[str, str]:
    """{CloudWatch dashboard name: its cluster}. Refuses two dashboards of one name: dashboards are global (PutDashboard
    overwrites one with the other, and a CloudFormation template cannot declare both). Names join their parts with
    "-", so cluster `c` with dashboard `x-health` meets cluster `c-x` with dashboard `health`."""
    prefix = project.settings.cloudwatch.dashboard_prefix
    owner: dict[str, str] = {}
    made_by: dict[str, Any] = {}
    for cluster in project.settings.clusters:
        for definition in project.cloudwatch_definitions():
            name = cloudwatch_dashboard_name(prefix, cluster.name, definition.id)
            if name in owner:
                first = made_by[name]
                raise InputError(f"CloudWatch dashboard {name!r} is made twice, by dashboard {first.id!r} of cluster "
                                 f"{owner[name]!r} (at {first.defined_at}) and dashboard {definition.id!r} of cluster "
                                 f"{cluster.name!r}: one would overwrite the other", where=definition.defined_at,
                                 hint="rename one dashboard, cluster or cloudwatch.dashboard_prefix so the names differ")
            owner[name], made_by[name] = cluster.name, definition
    return owner


def _alike(dashboard: CloudWatchDashboard) -> tuple[Any, str, int] | None:
    """A key the dashboards whose bodies a template holds in as many bytes share (cloudformation.templates measures
    one of them): one ClusterBodies' bodies in the clusters of one Region whose names are plain tokens (written as
    themselves, no escapes) of one length; None for any other body."""
    if dashboard.made is None or not cloudwatch.PLAIN_NAME.fullmatch(dashboard.made[1].name):
        return None
    bodies, cluster = dashboard.made
    return bodies, cluster.region, len(cluster.name)


def agents(project: Project) -> tuple[AgentConfig, ...]:
    """Each cluster's agent config and scrape config; none when the Container Insights add-on publishes."""
    from . import container_insights

    settings = project.settings
    if container_insights.enabled(settings):
        return ()
    # The scrape config differs between clusters only by their exporter's deployment style (clusters[].exporter.
    # deployment: the pod label the exporter job keeps, its Service) and DaemonSets (clusters[].exporter.namespace,
    # .daemonset, .more_daemonsets: the namespaces the exporter job looks in, the DaemonSets the kube-state-metrics job
    # keeps) and whether their agent publishes kube-state-metrics' counts (render/agent.reads_ksm): one object per
    # style, list and answer, which the clusters alike share.
    scrapes: dict[tuple, dict] = {}

    def scrape_config(cluster, ksm: bool) -> dict:
        key = (style_for(settings, cluster).key, named_daemonsets(settings, cluster), ksm)
        if key not in scrapes:
            scrapes[key] = scrape.prometheus_config(settings, cluster, ksm=ksm)
        return scrapes[key]

    # What each cluster's agent publishes is what its own widgets and alarms read (cloudwatch.reads_by_cluster): its
    # dashboards as made for its exporter.mig, its group's alarms and its Region's fleet-scope alarms. Over every
    # cluster together a cluster without MIG declared the MIG alarms' sets only the other clusters read (and, with
    # metric_selection: used, shipped their fields). Clusters that read alike share one maker: where every cluster
    # does, one, and the same bytes as before.
    reads = cloudwatch.reads_by_cluster(project.cloudwatch_definitions(), project.alarms, project.catalog, settings)
    makers: dict[int, Callable[[Cluster], AgentConfig]] = {}
    publishing: dict[str, Callable[[Cluster], AgentConfig]] = {}
    for cluster in settings.clusters:
        queried = reads[cluster.name]
        if id(queried) not in makers:
            makers[id(queried)] = _agent_maker(project, settings.for_clusters([cluster]), queried, scrape_config)
        publishing[cluster.name] = makers[id(queried)]
    return tuple(replace(publishing[cluster.name](cluster), made=(publishing[cluster.name], cluster))
                 for cluster in settings.clusters)


def _agent_maker(project: Project, held: Settings, queried: dict[str, set[tuple[str, ...]]],
                 scrape_config: Callable[[Cluster, bool], dict]) -> Callable[[Cluster], AgentConfig]:
    """How the agent config of the clusters that read alike is made: what their widgets and alarms read (`queried`;
    `held`: Settings.for_clusters of them, which their dashboards are made for), published the same for each."""
    settings = project.settings
    kinds = cloudwatch.node_mean_kinds(project.cloudwatch_definitions(), project.catalog, held)
    emf = agent.emf_processor(project.catalog, settings, queried, kinds)  # the same for each cluster of the group
    ksm = agent.reads_ksm(settings, queried)  # kube-state-metrics scraped only where its counts are published
    if settings.agent.pipeline == "classic":
        def made(cluster) -> AgentConfig:
            return AgentConfig(cluster.name, settings.agent.namespace,
                               agent.agent_config(project.catalog, settings, cluster, queried, emf),
                               scrape_config(cluster, ksm), project=settings.project)
        return made
    shipped = agent.selected_metrics(project.catalog, settings, queried.keys())
    pipeline = agent_otel.Pipeline(project.catalog, settings, emf, shipped)  # shared by the group's clusters

    def made_otel(cluster) -> AgentConfig:
        scraped = scrape_config(cluster, ksm)
        return AgentConfig(cluster.name, settings.agent.namespace, agent_otel.json_config(cluster),
                           scraped, pipeline.config(cluster, agent.log_group(cluster), scraped), settings.project)
    return made_otel


def notes(project: Project) -> tuple[Note, ...]:
    """What building the project leaves out, and why: panels whose fields the counters CSV does not
    collect, panels and alarms the Container Insights add-on does not publish, panels the agent's JSON path would
    publish as the exporter's image types their field (CW022), the data-missing alarm
    when nothing says GPUs are expected, panels and alarms on a counter that counts no code's first event (DF003),
    alarms that do not evaluate MIG GPUs on CloudWatch, charts by pod that rank
    pods by one GPU's reading (CW019), alarms that count a GPU's copies as GPUs (AL019), alarms that read a failed scrape
    as GPUs lost (AL024), alarms on a pod's count of GPUs that read the most one scrape counted (AL025), rules
    CloudWatch cannot judge (AL027)."""
    from . import stopped_gpus
    from .data_missing import left_out
    from .render.cloudwatch import left_out_as_served, left_out_on_addon, ranked_by_one_reading

    found = [Note("DF001", where, message) for where, message in project.notes]
    found += [Note("DF002", where, message) for where, message in empty_dashboards(project)]
    found += [Note("DF003", where, message) for where, message in first_events_uncounted(project)]
    found += [Note("CW013", where, message) for where, message in left_out_on_addon(project)]
    found += [Note("CW022", where, message) for where, message in left_out_as_served(project)]
    found += [Note("CW019", where, message) for where, message in ranked_by_one_reading(project)]
    found += [Note("AL011", where, message) for where, message in left_out(project)]
    found += [Note("AL012", where, message) for where, message in alarm_render.mig_left_out(project)]
    found += [Note("AL017", where, message) for where, message in alarm_render.ranked_past_500(project)]
    found += [Note("AL019", where, message) for where, message in alarm_render.copies_counted(project)]
    found += [Note("AL024", where, message) for where, message in alarm_render.failed_scrapes_read(project)]
    found += [Note("AL025", where, message) for where, message in alarm_render.counts_most_per_scrape(project)]
    found += [Note("AL027", where, message) for where, message in stopped_gpus.no_cloudwatch(project)]
    return tuple(found)


# What to do about a dashboard left with no panel (DF002). Not to drop it from the build by itself: a dashboard no
# longer built is one `push --prune` deletes from Grafana, worse than an empty one.
EMPTY_DASHBOARD_FIX = ("add its panels' fields to the counters CSV (`gpudash lint` lists each panel left out, DF001) "
                       "or give it a panel, or leave the dashboard out of definitions.dashboards (then `push --prune` "
                       "deletes it from Grafana)")


def empty_dashboards(project: Project) -> list[tuple[str, str]]:
    """(where, message) of each dashboard definition left with no panel, written, and published, empty: the counters
    CSV collects none of the fields its panels read (each panel a DF001 note), or it defines none (which of the two
    the dashboard does not record: a panel left out never reaches it)."""
    return [(dashboard.defined_at, f"dashboard {dashboard.id!r} ({dashboard.title}) has no panel, so it is written "
                                   "and published empty: the counters CSV collects none of the fields its panels read "
                                   "(each a DF001 note), or it defines none")
            for dashboard in project.dashboards if not any(True for _ in dashboard.panels())]


def first_events_uncounted(project: Project) -> list[tuple[str, str]]:
    """(where, message) of each panel and alarm reading a counter that counts no code's first event
    (catalog.FIRST_EVENT_UNCOUNTED), once per query and field."""
    from .catalog import FIRST_EVENT_UNCOUNTED

    def said(what: str, name: str, twin: str) -> str:
        return (f"{what} reads {name}, whose series for a code starts at the code's first event: no increase counts "
                f"a series' first sample, so a GPU's first event of each code is not counted (its only one reads 0); "
                f"{twin}, the count over the exporter's window, counts it")

    found = [(query.defined_at, said(f"panel {panel.title!r}", name, FIRST_EVENT_UNCOUNTED[name]))
             for dashboard in project.dashboards for panel in dashboard.panels() for query in panel.queries
             for name in dict.fromkeys(query.metrics) if name in FIRST_EVENT_UNCOUNTED and not query.raw_promql]
    found += [(alarm.defined_at, said(f"alarm {alarm.id!r}", name, FIRST_EVENT_UNCOUNTED[name]))
              for alarm in project.alarms
              for name in dict.fromkeys(n for query in alarm.queries for n in query.metrics)
              if name in FIRST_EVENT_UNCOUNTED]
    return found


# The fewest clusters whose build (`ahead`) makes its rules in a child: 1,000 clusters' take ~0.3 s and their files
# ~0.5 s of CPU, about a third of the build and its encoding; forking costs ~10 ms, more than a few clusters' rules.
RULES_AHEAD_FROM = 50


def _rules_ahead(project: Project) -> Iterator[Any]:
    """The rules and their PrometheusRules, then the two files they are written as, one by one (output.encode): what a
    build's child makes ahead (forked.Ahead), or this process where generate takes them (rule_texts writes a large
    fleet's files around its clusters' regex)."""
    from .rule_texts import made

    rules = made(project)
    objects = alarm_render.prometheus_rule_resources(rules.rules, project.settings)
    yield rules.rules, objects
    yield from rules.files(objects, project.settings)


def _taken_when_written(made: Any) -> Callable[[], tuple[bytes, bytes]]:
    """The two rules files `made` (a forked.Ahead, its rules taken) gives next, taken at the first call and kept, the
    child then collected. A large build's child writes them after the rules, while this process builds the rest: taken
    as the set was built, they left this process waiting for them (0.26-0.29 s of 1,000 clusters' build at load 8),
    though output.encode writes them last."""
    taken: list[bytes] = []

    def files() -> tuple[bytes, bytes]:
        if not taken:
            try:
                taken.extend((made.take(), made.take()))
            finally:
                made.close()
        return taken[0], taken[1]
    return files


def build(project: Project, grafana: bool = True, placed: cloudformation.Placed | None = None,
          ahead: bool = False) -> Artifacts:
    """The artifact set of `project`; without `grafana`, no Grafana dashboard is rendered (`grafana` is empty): a
    publishing command that sends none (apply, plan --no-grafana) does not pay for them. `placed` reads where the
    build before put the resources of a cluster split over several CloudFormation templates (generate's: the build
    in its folder; cloudformation.split_cluster). With `ahead` (generate's, which writes the files), a fleet of
    RULES_AHEAD_FROM clusters or more has its Prometheus rules and their two files made in a forked child meanwhile
    (`_rules_ahead`), any other with its rules here (`rule_files`). Never written as a build."""
    from . import container_insights
    from .alarm_texts import AlarmTexts
    from .forked import Ahead

    settings = project.settings
    rules_made = Ahead(lambda: _rules_ahead(project), fork=ahead and len(settings.clusters) >= RULES_AHEAD_FROM)
    owner = _dashboard_owners(project)
    dashboards = cloudwatch_dashboards(project)
    made: dict[int, alarm_render.Maker] = {}
    requests = alarm_render.cloudwatch_alarms(project.alarms, settings, project.catalog, made)
    clusters = {cluster.name: cluster for cluster in settings.clusters}
    alarms = tuple(AlarmRequest(item["Region"], item["Request"],
                                (made[id(item["Request"])], clusters[item["Cluster"]], item["Request"])
                                if id(item["Request"]) in made else None) for item in requests)
    alarm_resources: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
    alarm_texts = AlarmTexts(alarms, alarm_resources)  # measures each kind's alarms once for the templates
    primary = settings.clusters[0].region
    addon = container_insights.enabled(settings)
    # The Prometheus path's agent logs EMF events; the Container Insights add-on manages its own log groups.
    # A log group belongs to one stack: with agent.log_group_in_stack false another owns it (CloudFormation would
    # refuse to create it again).
    log_groups = [] if addon or not settings.agent.log_group_in_stack else \
        [(c.name, agent.log_group(c), settings.agent.log_retention_days) for c in settings.clusters]
    monitors = scrape.service_monitors(settings)
    rules, rule_objects = rules_made.take()
    rule_files = None
    if ahead:  # their files are taken as they are written (output.encode), not waited for here
        rule_files = (rules, rule_objects, _taken_when_written(rules_made))
    else:
        rules_made.close()
    try:
        return Artifacts(
            grafana=tuple(grafana_dashboards(project)) if grafana else (),
            grafana_folder=asdict(settings.grafana.folder),
            grafana_provisioning=provisioning(settings),
            cloudwatch_dashboards=dashboards,
            alarms=alarms,
            primary_region=primary,
            cloudformation=cloudformation.templates([(c.name, c.region) for c in settings.clusters],
                                                    [(d.name, owner[d.name], d.held, _alike(d)) for d in dashboards],
                                                    requests,
                                                    log_groups, settings.project, placed, alarm_resources,
                                                    alarm_texts.bound),
            agents=agents(project),
            addon=container_insights.addon_configuration(settings) if addon else None,
            additional_scrape_configs=scrape.additional_scrape_configs(settings),
            service_monitor=monitors[0],
            more_service_monitors=tuple(monitors[1:]),
            prometheus_rules=rules,
            prometheus_rule_objects=rule_objects,
            rule_files=rule_files,
            grafana_uid_prefix=settings.grafana.uid_prefix,
            alarm_prefix=settings.alarms.name_prefix,
            dashboard_prefix=settings.cloudwatch.dashboard_prefix,
            notes=notes(project),
            counters_sha256=project.catalog.sha256,
            grafana_made_from=grafana_inputs.made_from(project) if grafana else "",
            project=settings.project or "",
            clusters=tuple(cluster.name for cluster in settings.clusters),
            publisher=scrape.publisher_annotations(settings),
            alarm_resources=alarm_resources,
            alarm_references=alarm_texts.references,
        )
    except BaseException:
        rules_made.close()  # (a child still making the files is stopped: nothing will take them)
        raise
