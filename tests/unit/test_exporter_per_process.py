"""`gpudash verify` on dcgm-exporter's output with KUBERNETES_VIRTUAL_GPUS=true (4.5.3 and later): GPU
utilization and framebuffer come once per device without pod labels and once per sharing pod with that pod's
processes' value. verify names the mode and does not call the device series unlabelled."""

from __future__ import annotations

from generator.checks.exporter import analyse
from generator.project import load_project

HEAD = ('# HELP {m} x.\n# TYPE {m} gauge\n')
DEVICE = 'gpu="{g}",UUID="GPU-{g}",device="nvidia{g}",modelName="NVIDIA A10G",Hostname="node-a"'


def _series(metric: str, gpu: int, value: int, pod: str = "") -> str:
    labels = DEVICE.format(g=gpu)
    if pod:
        labels += f',container="main",namespace="team",pod="{pod}",pod_uid="uid-{pod}"'
    return f"{metric}{{{labels}}} {value}\n"


def _payload(shared: bool) -> str:
    text = ""
    for metric, device, each in (("DCGM_FI_DEV_GPU_UTIL", 90, 30), ("DCGM_FI_DEV_FB_USED", 12000, 4000)):
        text += HEAD.format(m=metric)
        if shared:  # GPU 0 shared by three pods: the device's series, then each pod's processes' value
            text += _series(metric, 0, device) + "".join(_series(metric, 0, each, f"p{i}") for i in range(3))
        else:  # the default: the device's series carries one pod's labels
            text += _series(metric, 0, device, "p2")
        text += _series(metric, 1, device, "solo")
    return text


def test_per_process_copies_are_named_and_the_device_series_is_not_called_unlabelled():
    checks = {c.name: c for c in analyse(load_project(), _payload(shared=True), "node-a")}
    copies = checks["per-process copies"]
    assert copies.status == "warn"
    assert copies.detail.endswith("(KUBERNETES_VIRTUAL_GPUS=true): node-a gpu 0")
    assert "DCGM_FI_DEV_FB_USED, DCGM_FI_DEV_GPU_UTIL" in copies.detail
    assert "reads 45 %" in copies.fix and copies.fix.startswith("set exporter.virtual_gpus: true")
    assert checks["pod labels"].status == "ok"


def test_with_exporter_virtual_gpus_the_copies_are_read_apart(tmp_path):
    (tmp_path / "gpudash.yaml").write_text("exporter:\n  virtual_gpus: true\n")
    checks = {c.name: c for c in analyse(load_project(tmp_path / "gpudash.yaml"), _payload(shared=True), "node-a")}
    assert checks["per-process copies"].status == "ok"
    assert checks["per-process copies"].detail.endswith("node-a gpu 0; exporter.virtual_gpus reads them apart")


def test_one_series_per_device_is_not_flagged():
    checks = {c.name: c for c in analyse(load_project(), _payload(shared=False), "node-a")}
    assert "per-process copies" not in checks
    assert checks["pod labels"].status == "ok"


def test_a_busy_gpu_without_pods_still_fails_pod_labels():
    text = HEAD.format(m="DCGM_FI_DEV_GPU_UTIL") + _series("DCGM_FI_DEV_GPU_UTIL", 0, 90)
    checks = {c.name: c for c in analyse(load_project(), text, "node-a")}
    assert checks["pod labels"].status == "fail"
    assert "per-process copies" not in checks


def _pods_only(values: tuple[int, ...]) -> str:
    """GPU 0 with one copy per pod and no device series (4.5.2 with KUBERNETES_VIRTUAL_GPUS=true)."""
    text = ""
    for metric in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"):
        text += HEAD.format(m=metric) + "".join(_series(metric, 0, v, f"p{i}") for i, v in enumerate(values))
    return text


def test_an_exporter_before_per_process_copies_is_named():
    """4.5.2 with the setting on writes each sharing pod the device's value: per-pod views would show each pod the
    whole GPU's use."""
    checks = {c.name: c for c in analyse(load_project(), _pods_only((90, 90)), "node-a")}
    assert checks["shared GPUs read whole"].status == "warn"
    assert checks["shared GPUs read whole"].detail.endswith(": node-a gpu 0")
    assert "upgrade it to 4.5.3" in checks["shared GPUs read whole"].fix
    assert "shared GPUs read whole" not in {c.name for c in analyse(load_project(), _pods_only((90,)), "node-a")}
    assert "shared GPUs read whole" not in {c.name for c in analyse(load_project(), _payload(shared=True), "node-a")}


def test_a_busy_gpu_whose_pods_all_read_zero_is_named():
    text = ""
    for metric in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"):
        text += HEAD.format(m=metric) + _series(metric, 0, 90) + "".join(_series(metric, 0, 0, f"p{i}") for i in range(2))
    checks = {c.name: c for c in analyse(load_project(), text, "node-a")}
    assert checks["per-process utilization"].status == "warn"
    assert checks["per-process utilization"].detail.endswith("reads 0: node-a gpu 0")
    assert "per-process utilization" not in {c.name for c in analyse(load_project(), _payload(shared=True), "node-a")}
