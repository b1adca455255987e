"""`gpudash verify` against exporter.mig: none, which says no GPU of the fleet is split into MIG instances (the
CloudWatch alarms of GPU utilization are then built for whole GPUs only): an exporter whose series carry a MIG
instance (GPU_I_PROFILE or GPU_I_ID not blank) fails, naming it; blank MIG labels, as an exporter writes them on a
whole GPU, pass."""

from __future__ import annotations

from generator.checks.exporter import analyse
from generator.project import load_project

HEAD = "# HELP {m} x.\n# TYPE {m} gauge\n"
LABELS = 'gpu="{g}",UUID="GPU-{g}",device="nvidia{g}",modelName="NVIDIA A100-SXM4-40GB",Hostname="node-a",' \
         'GPU_I_PROFILE="{profile}",GPU_I_ID="{instance}",container="main",namespace="team",pod="p{g}"'


def _payload(*devices: tuple[int, str, str]) -> str:
    """GPU utilization (whole GPUs) and engine activity (every device) of each (gpu, profile, instance)."""
    text = HEAD.format(m="DCGM_FI_DEV_GPU_UTIL") + "".join(
        f"DCGM_FI_DEV_GPU_UTIL{{{LABELS.format(g=g, profile=p, instance=i)}}} 50\n" for g, p, i in devices if not i)
    return text + HEAD.format(m="DCGM_FI_PROF_GR_ENGINE_ACTIVE") + "".join(
        f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{LABELS.format(g=g, profile=p, instance=i)}}} 0.5\n" for g, p, i in devices)


def _checks(tmp_path, settings: str, text: str) -> dict:
    (tmp_path / "gpudash.yaml").write_text(settings)
    return {c.name: c for c in analyse(load_project(tmp_path / "gpudash.yaml"), text, "node-a")}


def test_mig_none_fails_an_exporter_reporting_mig_instances_naming_them(tmp_path):
    checks = _checks(tmp_path, "exporter:\n  mig: none\n", _payload((0, "", ""), (1, "3g.20gb", "1"), (1, "3g.20gb", "2")))
    said = checks["no MIG"]
    assert said.status == "fail"
    assert "2 MIG instance(s) report on node node-a: node-a gpu 1 MIG instance 1 (3g.20gb), node-a gpu 1 MIG " \
           "instance 2 (3g.20gb)" in said.detail
    assert said.fix.startswith("remove exporter.mig: none")


def test_a_profile_without_an_instance_id_is_a_mig_instance_too(tmp_path):
    checks = _checks(tmp_path, "exporter:\n  mig: none\n", _payload((0, "1g.5gb", "")))
    assert checks["no MIG"].status == "fail" and "gpu 0 (1g.5gb)" in checks["no MIG"].detail


def test_mig_none_passes_whole_gpus_with_blank_mig_labels(tmp_path):
    checks = _checks(tmp_path, "exporter:\n  mig: none\n", _payload((0, "", ""), (1, "", "")))
    assert checks["no MIG"].status == "ok"
    assert "MIG" not in checks


def test_without_the_setting_mig_instances_are_no_failure(tmp_path):
    checks = _checks(tmp_path, "", _payload((0, "", ""), (1, "3g.20gb", "1")))
    assert "no MIG" not in checks and checks["MIG"].status == "warn"
