"""A fleet whose exporter writes fields split by labels of their own, and the truth about it.

dcgm-exporter writes `DCGM_EXP_XID_ERRORS_COUNT` as one series per XID code seen in its window
(label `xid`, beside `window_size_in_ms`), and one series without `xid` reading 0 for a GPU
that saw none (its xid collector); newer exporters add `err_code` / `err_msg` to
`DCGM_FI_DEV_XID_ERRORS`. A GPU's XID count is the sum over its codes.
"""

from __future__ import annotations

from pathlib import Path

NODE = "ip-10-0-1-7"
WINDOW = "300000"
# GPU index -> (workload pod or None, {XID code: errors in the window})
GPUS = {0: (("ml", "train-0"), {"79": 2, "48": 1}), 1: (None, {"13": 5, "79": 1}), 2: (("ml", "train-0"), {})}
COUNTS = "DCGM_EXP_XID_ERRORS_COUNT"
CSV = (f"DCGM_FI_DEV_GPU_TEMP, gauge, GPU die temperature (in C).\n"
       f"{COUNTS}, gauge, Count of XID Errors within user-specified time window (see xid-count-window-size param).\n")
DASHBOARD = f'''
from generator.model import Dashboard, Panel, Query, Row


def dashboards(ctx):
    panels = [Panel("XID errors", Query("{COUNTS}", "max", ("node", "gpu")), description="per GPU, all codes"),
              Panel("XID errors (mean)", Query("{COUNTS}", "avg", ("node", "gpu")), description="per GPU"),
              Panel("XID errors by pod", Query("{COUNTS}", "sum", ("pod",)), description="per pod"),
              Panel("XID errors in the cluster", Query("{COUNTS}", "sum"), description="all GPUs"),
              Panel("XID errors by code", Query("{COUNTS}", "sum", ("xid",)), description="per code")]
    yield Dashboard(id="xid", title="XID", rows=[Row("errors", panels)])
'''


def write_project(folder: Path) -> Path:
    """A project in `folder` with the counters CSV and the dashboard above; its gpudash.yaml."""
    (folder / "dashboards").mkdir()
    (folder / "dashboards" / "xid.py").write_text(DASHBOARD)
    (folder / "counters.csv").write_text(CSV)
    (folder / "gpudash.yaml").write_text("counters: counters.csv\ndefinitions:\n  dashboards: [dashboards]\n")
    return folder / "gpudash.yaml"


def payload(scale: int = 1) -> str:
    """The node's /metrics, the counts multiplied by `scale` (a later scrape: the window filled up)."""
    lines = ["# TYPE DCGM_FI_DEV_GPU_TEMP gauge", f"# TYPE {COUNTS} gauge"]
    for index, (pod, codes) in GPUS.items():
        labels = (f'gpu="{index}",UUID="GPU-{index}",pci_bus_id="00000000:0{index}:00.0",device="nvidia{index}",'
                  f'modelName="NVIDIA H100 80GB HBM3",Hostname="{NODE}"')
        if pod:
            labels += f',pod="{pod[1]}",namespace="{pod[0]}",container="main"'
        lines.append(f"DCGM_FI_DEV_GPU_TEMP{{{labels}}} {50 + index}")
        for code, count in codes.items():
            lines.append(f'{COUNTS}{{{labels},window_size_in_ms="{WINDOW}",xid="{code}"}} {count * scale}')
        if not codes:
            lines.append(f'{COUNTS}{{{labels},window_size_in_ms="{WINDOW}"}} 0')
    return "\n".join(lines) + "\n"


def truth(title: str, scale: float = 1) -> dict[str, float]:
    """{legend: value} of each test panel at one scrape (counts times `scale`)."""
    per_gpu = {f"{NODE} GPU {i}": sum(codes.values()) * scale for i, (_, codes) in GPUS.items()}
    if title in ("XID errors", "XID errors (mean)"):
        return per_gpu
    if title == "XID errors by pod":
        return {"Pod ml/train-0": sum(sum(c.values()) for p, c in GPUS.values() if p == ("ml", "train-0")) * scale}
    if title == "XID errors in the cluster":
        return {"": sum(per_gpu.values())}
    if title == "XID errors by code":
        codes: dict[str, float] = {}
        for _, counts in GPUS.values():
            for code, count in counts.items():
                codes[f"xid {code}"] = codes.get(f"xid {code}", 0) + count * scale
        return codes
    raise AssertionError(title)
