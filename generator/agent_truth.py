"""CloudWatch widgets and alarms that the agent's JSON path (agent.pipeline: classic) would feed a wrong number:
refused by generate and publish before anything is written or published, naming the setting that makes them
wrong. These are lint's errors CW017, CW018, AL013, AL014 and AL016: a build generate wrote would fail its own
lint, and the dashboards and alarms in it would read what no GPU did (a 90 % GPU that three pods share at 30 %
read as 45 %, a shared GPU's PCIe replays read k times)."""

from __future__ import annotations

from .errors import InputError
from .settings import setting_place

# The lint rules whose error means the agent's JSON path publishes series the item cannot read truly.
RULES = ("CW017", "CW018", "AL013", "AL014", "AL016")


def check_agent_truth(project, artifacts) -> None:
    """Raise an input error when a CloudWatch widget or alarm of the set reads, on agent.pipeline: classic, series
    that make its number wrong (the lint errors of RULES). Nothing is found on the OTel pipeline."""
    if all(agent.otel is not None for agent in artifacts.agents):
        return  # no cluster's agent publishes by its JSON path (agent.pipeline: classic): lint is not imported
    from .lint import run
    from .lint.cloudwatch_rules import RULES as CLOUDWATCH_RULES
    from .lint.subject import LintInput

    rules = [rule for rule in CLOUDWATCH_RULES if rule.id in RULES]
    subject = LintInput(artifacts, project.settings, project.catalog)
    errors = [f for f in run(rules, subject) if f.severity == "error"]
    if not errors:
        return
    found = {f.rule for f in errors}
    shares = bool(found & {"CW017", "AL013", "AL014"})
    setting = "agent.pipeline: classic" + (" with exporter.virtual_gpus: true" if shares else "")
    why = "the agent's JSON path " + "; it ".join(dict.fromkeys(WHY[rule] for rule in RULES if rule in found))
    named = ", ".join(f.where for f in errors[:SHOWN]) + (f" and {len(errors) - SHOWN} more" if len(errors) > SHOWN else "")
    what = f"{setting}: {len(errors)} CloudWatch widgets and alarms of this build would show a wrong number ({named}): {why}"
    catalog = project.catalog
    # the fix that keeps the JSON path for CW018 and AL016: the CSV typing each field as DCGM says
    retype = ("type each field the counters CSV types against DCGM's meaning as DCGM says, there and in the exporter's "
              "(the ConfigMap its DCGM_EXPORTER_COLLECTORS names) ("
              + ", ".join(f"{catalog.source}:{m.line}: type {m.name} {m.kind}" for m in catalog if m.retyped) + "), "
              if found & {"CW018", "AL016"} else "")
    hint = ("set agent.pipeline: otel (CloudWatch agent 1.300066.0 or later), which publishes these fields truly, "
            + retype + "or remove those widgets and alarms from the definitions; `gpudash lint` explains each ("
            + ", ".join(sorted(found)) + ")")
    if "AL013" in found:
        hint += "; an alarm on a counter's increase is true against threshold 0 (e.g. thresholds.pcie_replays_per_minute: 0)"
    raise InputError(what, where=setting_place(project.settings, ["agent", "pipeline"]), hint=hint)


SHOWN = 6  # items named in the message; lint lists every one
WHY = {  # each says what the JSON path does: the message names it once, then "it"
    "CW017": "publishes each pod's share of GPU utilization and framebuffer used under the per-GPU "
             "dimensions beside the device's value, and no statistic tells them apart (a GPU at 90 % that three pods "
             "share at 30 % reads 45 %)",
    "AL013": "publishes each pod's copy of a GPU's counter under the per-GPU dimensions, so a GPU k pods share "
             "reads k times its increase and the alarm fires at 1/k of its threshold",
    "CW018": "publishes a level the exporter serves as a counter (health, windowed counts, NVLink throughput) as "
             "its differences (a GPU whose health stays failing reads 0, NVLink holding 300 MB/s reads 0), and "
             "a running total it serves as a gauge as the total itself",
}
WHY["AL014"] = WHY["CW017"]
WHY["AL016"] = WHY["CW018"]
