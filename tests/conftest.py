"""Shared fixtures: the reference data folder, the CLI runner, small projects on disk."""

from __future__ import annotations

import gc
import itertools
import os
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from generator.cli import main

REPO = Path(__file__).resolve().parent.parent
# CI lays shared/ beside the clone; GPUDASH_REFERENCE points elsewhere for other checkouts.
REFERENCE = Path(os.environ.get("GPUDASH_REFERENCE", REPO.parent / "shared" / "reference"))

# Hypothesis' too_slow health check times the drawing of examples by the wall clock: on a loaded machine (CI's two
# cores under five workers) it fails a property whose claim holds. No property here asserts anything about time, so
# every property test runs without it (each keeps its own example count and the other health checks).
hypothesis_settings.register_profile("gpudash", suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("gpudash")


# The test files that take longest start first, the longest first: every file that held a worker for 10 s or more in
# a whole-suite run with five workers, as `make test` runs it (GPUDASH_SUITE_CPU records the time per file,
# benchmarks/suite.py prints the longest), most of it waiting (servers starting, Prometheus scraping, Chromium,
# subprocesses), moto's CloudWatch or promtool. pytest-xdist (--dist loadfile --no-loadscope-reorder) hands each worker
# the next file in this order as its current one nears its end: longest first, no worker is left running a long file
# alone at the end while the others idle. Files written since are placed by their time in a later run (under load: each
# file's time there divided by the median ratio of the two runs' times of the files both hold). A file missing from
# this list keeps its place after them; the order does not change what any test asserts. test_live_panel_truth waits
# on its live scene (~80 s wall for ~5 CPU-s; the longest wall of any file at 378d1347, and a recording more when its
# n4 scrapes sit on the subquery grid): first. Later files placed so (one file at a time under load 5-28,
# the median ratio to an earlier whole-suite record 2.7): test_combined_fleet_story 77 CPU-s, ~138 s;
# test_phase_story_twins ~42 s; test_counter_rate_pod_picked ~22 s; test_dashboard_parts ~16 s;
# test_combined_fleet_counters 54 CPU-s, ~55 s.
START_FIRST = ("test_live_panel_truth.py", "test_pod_copies_tied.py", "test_verify.py", "test_gauge_twins.py",
               "test_combined_fleet_story.py", "test_pod_left_twins.py",
               "test_fleet_truth.py", "test_combined_fleet_counters.py",
               "test_data_missing.py", "test_grafana_claims.py", "test_cloudformation_quota.py",
               "test_mixed_fleet_twins.py", "test_benchmarks.py", "test_cloudwatch_projects.py",
               "test_cloudwatch_ownership.py", "test_grafana_push.py", "test_grafana_faults.py",
               "test_copy_choice_hostile.py", "test_evaluation_range_rules.py",
               "test_failed_scrape_twins.py", "test_phase_story_twins.py", "test_preview.py",
               "test_node_view_every_panel.py",
               "test_grafana_hostile_answers.py", "test_combined_periods.py", "test_cloudwatch_random_fleets.py",
               "test_mig_reconfigured_scrape.py", "test_pod_named_in_turn_one_scrape.py",
               "test_counter_rate_pod_picked.py", "test_dashboard_parts.py", "test_thread_imports.py",
               "test_cloudwatch_rollout_twins.py", "test_publish_from_build.py", "test_cloudwatch_mig.py",
               "test_verify_failed_scrape.py", "test_cloudwatch_write_proof.py", "test_alarm_texts.py",
               "test_pod_lookback_restart.py", "test_cloudwatch_write_retries.py", "test_feed_configs.py",
               "test_data_missing_daemonsets.py", "test_recorded_periods.py", "test_pod_named_in_turn_rules.py",
               "test_pod_lookback_energy_rename.py", "test_lint.py", "test_verify_exec_plugin.py",
               "test_pod_copy_overlap.py", "test_copy_choice_helm_release_pod.py", "test_pod_lookback_upgrade.py",
               "test_generate_lint_agree.py", "test_cloudwatch_write_answers.py", "test_pod_lookback_two_exporters.py",
               "test_pod_lookback_share_failed_scrape.py", "test_pod_lookback.py", "test_copy_choice_pod_like_nodes.py",
               "test_cloudwatch_over_500_mig.py", "test_pod_lookback_blank.py", "test_ci_workflow.py",
               "test_agent_otel.py", "test_generate.py", "test_node_variable.py", "test_alarm_share_sets.py",
               "test_counter_copies_hostile.py", "test_counter_twins.py", "test_grafana_delete_retries.py",
               "test_bad_input.py", "test_pod_gpu_totals.py", "test_cost.py", "test_prometheus_rules.py",
               "test_input_robustness.py", "test_counter_copies_flapping.py", "test_pod_lookback_overlap.py",
               "test_shared_gpu_counters.py", "test_replay_gaps_resets.py", "test_counter_blanks.py",
               "test_serialize.py",
               "test_grafana_prune_around.py", "test_scrape_with_prometheus.py", "test_first_steps.py",
               "test_agent_texts.py", "test_framebuffer_sums.py", "test_stale_alarm_twins.py", "test_virtual_gpus.py",
               "test_cloudwatch_apply.py", "test_dashboard_mig_instances_once.py", "test_mig_half_alarms.py",
               "test_imports.py", "test_mig_twins.py", "test_join_leave_twins.py", "test_cloudwatch_lines_cap.py",
               "test_cloudwatch_evidence.py", "test_pod_counters.py", "test_packaging.py")


def pytest_collection_modifyitems(items):
    rank = {name: index for index, name in enumerate(START_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file keeps its own order


def pytest_configure(config):
    """Python's collector of reference cycles runs its youngest generation every 700 net allocations, and walks every
    object that survived since at each of its older collections. Most survive here (the collected tests, the agent
    models' caches, a story's datapoints, botocore's models): that was a third of an agent-model test file's CPU.
    In each test process it runs every 100,000 (the oldest generation in effect only at each test module's start,
    below). What is not in a cycle is freed when its last reference goes, as before; no test relies on when a
    collection runs.

    The Go programs the tests start (promtool, Prometheus) collect their garbage when their heap has grown by GOGC
    percent since the last collection: 100 by default. The tests' rule files and stories are small, so their heaps
    are too: at 400 a `promtool test rules` of test_data_missing_daemonsets' pools spends 10.4 s CPU instead of 12.8
    (peak memory 113 MB instead of 60). A GOGC already set (by the user or CI) is kept. What a Go program computes
    does not depend on when it collects."""
    gc.set_threshold(100_000, 50, 100)
    os.environ.setdefault("GOGC", "400")
    from tests.support import suite_cpu

    suite_cpu.register(config)  # GPUDASH_SUITE_CPU set (benchmarks/suite.py): where the CPU goes, per file and process


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config):
    """As a test process ends, pytest collects garbage twice (its check for unraisable exceptions, at unconfigure and
    at cleanup), each walking every object the last test module left: 1.4 and 1.1 s CPU after test_data_missing.py.
    Collected once here and the rest frozen, neither walks them again. An unraisable exception raised by what this
    frees is still reported: pytest's hook stays installed until its cleanup."""
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True, scope="module")
def collector_skips_what_earlier_modules_left():
    """Python's cyclic garbage collector walks every object it tracks at each full collection: in a worker
    that is every module, botocore model, moto backend and build that earlier test modules imported or
    kept. Each test module starts by collecting what is garbage now and freezing the rest (gc.freeze: left
    out of later collections, still freed when its last reference goes), so later collections walk only
    what this module makes. No test relies on when a collection runs."""
    gc.collect()
    gc.freeze()
    yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """An expected failure (xfail) is expected as a wrong value: an assertion that fails. A test that fails by any other
    exception (an AttributeError from a renamed helper, a KeyError, a fixture's error) proves nothing about what its
    reason says, so it is reported as a failure, with its traceback, not counted as the expected failure. A test that
    calls pytest.xfail() itself is left as it is."""
    report = yield
    excinfo = call.excinfo
    if getattr(report, "wasxfail", None) is not None and excinfo is not None and not excinfo.errisinstance(
            (AssertionError, pytest.xfail.Exception)):
        del report.wasxfail
        report.outcome = "failed"
        report.longrepr = item.repr_failure(excinfo)
    return report


_FOLDERS = itertools.count()


@pytest.fixture(autouse=True)
def away_from_the_checkout(tmp_path_factory, monkeypatch):
    """Every test runs in a scratch folder with no GPUDASH_CONFIG: a gpudash.yaml or build/ that the
    user keeps in the checkout is neither read nor written by the tests. Each test's folder is new and
    empty, numbered by a counter (mktemp would list every folder the worker made so far, at every test)."""
    monkeypatch.delenv("GPUDASH_CONFIG", raising=False)
    folder = tmp_path_factory.getbasetemp() / "cwd" / str(next(_FOLDERS))
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)


@pytest.fixture(scope="session")
def reference() -> Path:
    if not REFERENCE.is_dir():
        pytest.skip(f"reference data not found at {REFERENCE} (it sits beside the repository in CI)")
    return REFERENCE


@pytest.fixture
def cli():
    """Run the CLI in-process; returns (exit code, stdout, stderr)."""

    def invoke(*args: str, env: dict[str, str] | None = None):
        result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
        return result.exit_code, result.stdout, result.stderr

    return invoke


@pytest.fixture
def project_dir(tmp_path: Path):
    """A user project: gpudash.yaml plus a dashboards/ folder with the given files."""

    def make(config: str = "", dashboards: dict[str, str] | None = None, csv: str | None = None) -> Path:
        lines = [textwrap.dedent(config)]
        if dashboards is not None:
            folder = tmp_path / "dashboards"
            folder.mkdir(exist_ok=True)
            for name, text in dashboards.items():
                (folder / name).write_text(textwrap.dedent(text))
            lines.append("definitions:\n  dashboards: [dashboards]\n")
        if csv is not None:
            (tmp_path / "counters.csv").write_text(textwrap.dedent(csv))
            lines.append("counters: counters.csv\n")
        (tmp_path / "gpudash.yaml").write_text("\n".join(lines))
        return tmp_path / "gpudash.yaml"

    return make


@pytest.fixture(autouse=True)
def deadline_clock(monkeypatch):
    """Publishing's backoff and Retry-After waits advance a fake clock: no test sleeps for them."""
    from generator.clients import deadline
    from tests.support.clock import FakeClock

    fake = FakeClock()
    monkeypatch.setattr(deadline, "CLOCK", fake)
    return fake


@pytest.fixture(autouse=True, scope="session")
def botocore_models_read_once():
    """Every boto3 session the CLI opens in-process reads botocore's service models (JSON, about 50 ms
    of CPU per client) from one shared loader instead of parsing them again: the models never change.
    Its event names are aliased through one shared cache too (a new session registers some 280 handlers,
    each name worked out again: half of a session and client's remaining 20 ms); an alias depends on the
    name alone. Whether a handler takes **kwargs (checked for each one a session registers, by reading its
    signature: most of what is left of a new session) is read once per handler: it depends on the function alone.
    gpudash's sessions use a loader of their own (clients.cloudwatch._model_loader: only the services gpudash
    calls), one per session: one is kept per search path, so its models and endpoint rules (endpoints.json,
    about 40 ms of CPU per session) are parsed once, as botocore's own loader's are above."""
    try:
        import botocore.hooks
        import botocore.loaders
        import botocore.session
    except ImportError:
        yield
        return
    from generator.clients import cloudwatch

    original, original_aliaser = botocore.session.create_loader, botocore.hooks.EventAliaser.__init__
    original_accepts, original_model_loader = botocore.hooks.accepts_kwargs, cloudwatch._model_loader
    loaders: dict = {}
    model_loaders: dict = {}
    aliases: dict = {}
    accepting: dict = {}

    def accepts_kwargs(func):
        try:
            if func not in accepting:
                accepting[func] = original_accepts(func)  # (a TypeError, for what is no function, is not kept)
        except TypeError:  # not hashable: read every time
            return original_accepts(func)
        return accepting[func]

    def create_loader(search_path_string=None):
        if search_path_string not in loaders:
            loaders[search_path_string] = original(search_path_string)
        return loaders[search_path_string]

    def model_loader(session):
        made = original_model_loader(session)  # (no file is read until a model is asked for)
        return model_loaders.setdefault(tuple(made.search_paths), made)

    def aliaser(self, event_emitter, event_aliases=None):
        original_aliaser(self, event_emitter, event_aliases)
        if event_aliases is None:  # botocore's own aliases: the same name always gets the same alias
            self._alias_name_cache = aliases

    botocore.session.create_loader = create_loader
    botocore.hooks.EventAliaser.__init__ = aliaser
    botocore.hooks.accepts_kwargs = accepts_kwargs
    cloudwatch._model_loader = model_loader
    yield
    botocore.session.create_loader = original
    botocore.hooks.EventAliaser.__init__ = original_aliaser
    botocore.hooks.accepts_kwargs = original_accepts
    cloudwatch._model_loader = original_model_loader


@pytest.fixture(autouse=True, scope="session")
def definitions_compiled_once_per_text():
    """Each in-process CLI run compiles every definition file from its source (generator/definitions.py:
    never Python's bytecode cache) and parses its syntax tree again for the line of each `dashboards(ctx)`
    return: the same few bundled files, hundreds of times in a worker (a tenth of a publishing test's CPU).
    Here the code and the tree of a file are kept by its exact bytes and name: a file edited, even within
    the same second at the same size, is compiled and parsed anew; a file that does not compile still
    raises every time (nothing is kept). The trees are only read."""
    from generator import definitions

    codes: dict = {}
    trees: dict = {}
    parse = definitions._syntax_tree

    def compiled(source, filename, mode, flags=0, dont_inherit=False, *args, **kwargs):
        key = (source, filename, mode, flags, dont_inherit, args, tuple(sorted(kwargs.items())))
        if key not in codes:
            if len(codes) > 512:  # generated sources (hypothesis) must not grow it without bound
                codes.clear()
            codes[key] = compile(source, filename, mode, flags, dont_inherit, *args, **kwargs)
        return codes[key]

    def syntax_tree(path):
        key = (str(path), Path(path).read_bytes())
        if key not in trees:
            if len(trees) > 512:
                trees.clear()
            trees[key] = parse(path)
        return trees[key]

    definitions.compile = compiled  # the module's name `compile` (a global) before the builtin
    definitions._syntax_tree = syntax_tree
    yield
    del definitions.compile
    definitions._syntax_tree = parse


@pytest.fixture(autouse=True, scope="session")
def builds_read_once_per_content():
    """`push --from` and `lint --from` read a build folder back: every file checked against the manifest, then
    parsed (YAML, JSON) into the artifact set, at every command. Here what is parsed is kept by the folder's exact
    content: the path, every file's bytes under it (the manifest's sha256 checks and the search for files the
    manifest does not list still run at each call, in `read` itself on a miss and in `_read_build` on a hit), and
    the arguments (origin, settings compared by value, consequence). A folder changed in any byte is read anew."""
    from generator import output

    read = output.read
    kept: list = []

    def content(directory):
        root = Path(directory)
        try:
            if not root.is_dir():
                return None
            return tuple(sorted((str(p.relative_to(root)), p.read_bytes()) for p in root.rglob("*") if p.is_file()))
        except OSError:  # a folder or file that cannot be read: nothing kept, `read` itself says what is wrong
            return None

    def read_once(directory, origin=None, settings=None, consequence=output.LINTED, waiting=None, option="--from"):
        key = (str(directory), content(directory), origin, consequence)
        if key[1] is not None:
            for known, known_settings, artifacts in kept:
                if known == key and known_settings == settings:
                    output._read_build(Path(directory), option)  # its checks (and errors) at every read
                    return artifacts
        artifacts = read(directory, origin=origin, settings=settings, consequence=consequence, waiting=waiting,
                         option=option)
        if key[1] is not None:
            if len(kept) >= 16:
                del kept[0]
            kept.append((key, settings, artifacts))
        return artifacts

    output.read = read_once
    yield
    output.read = read


_DEFAULT_DESIRED: dict = {}  # with Grafana's dashboards or without -> (project, desired)


@pytest.fixture
def defaults_built_once(monkeypatch):
    """plan/push/apply on the bundled default settings (no --config, GPUDASH_CONFIG or ./gpudash.yaml, no
    --csv or --from) build them once per session: nothing a test does changes them. Any other input is
    built at every call, as the command does."""
    import click

    from generator import cli_publish
    from generator.settings import discover

    build = cli_publish._desired

    def desired(config, csv, from_dir, grafana=True):
        if config or csv or from_dir or discover(None).path is not None:
            return build(config, csv, from_dir, grafana=grafana)
        if grafana not in _DEFAULT_DESIRED:
            _DEFAULT_DESIRED[grafana] = build(config, csv, from_dir, grafana=grafana)
        else:
            click.echo(f"settings: {discover(None).describe()}", err=True)  # as loading says it, from this folder
        return _DEFAULT_DESIRED[grafana]

    monkeypatch.setattr(cli_publish, "_desired", desired)
