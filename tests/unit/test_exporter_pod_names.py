"""The names Kubernetes gives the pods of the exporter DaemonSets the settings name (exporter_styles.exporter_pod_names,
Labels.exporter_pods): the evidence promql.gpus_named ranks a node spelling by. Checked with RE2's semantics as
Prometheus applies a matcher (anchored at both ends)."""

from __future__ import annotations

import re

from generator.project import load_project

CLUSTERS = """clusters:
  - name: a
    region: us-east-1
  - name: b
    region: us-east-1
    exporter: {deployment: helm, namespace: monitoring, daemonset: gpu-metrics-dcgm-exporter}
"""
LONG = "a-very-long-release-name-for-the-gpu-fleet-of-team-x-dcgm-exporter"  # 66 characters


def _matches(tmp_path, settings: str, names: list[str]) -> dict[str, bool]:
    (tmp_path / "gpudash.yaml").write_text(settings)
    pattern = load_project(tmp_path / "gpudash.yaml").settings.labels.exporter_pods
    return {name: re.fullmatch(pattern, name) is not None for name in names}


def test_the_pods_of_every_clusters_and_more_daemonsets_are_named_and_nodes_of_their_shape_are_not(tmp_path):
    settings = CLUSTERS + "exporter:\n  more_daemonsets: [other/dcgm-exporter-b]\n"
    assert _matches(tmp_path, settings, [
        "nvidia-dcgm-exporter-q8w2z", "gpu-metrics-dcgm-exporter-7x9kq", "dcgm-exporter-b-4tq2x",
        "aks-gpunp-9fz2k", "gpu-md-0-7b9c5d8f4-x2kqz", "nvidia-dcgm-exporter-q8w2za", "nvidia-dcgm-exporter-qaw2z",
        "xnvidia-dcgm-exporter-q8w2z", "ip-10-0-1-2.ec2.internal"]) == {
        "nvidia-dcgm-exporter-q8w2z": True, "gpu-metrics-dcgm-exporter-7x9kq": True, "dcgm-exporter-b-4tq2x": True,
        "aks-gpunp-9fz2k": False, "gpu-md-0-7b9c5d8f4-x2kqz": False,
        "nvidia-dcgm-exporter-q8w2za": False,  # six characters
        "nvidia-dcgm-exporter-qaw2z": False,  # `a` is no character of Kubernetes' generated names
        "xnvidia-dcgm-exporter-q8w2z": False, "ip-10-0-1-2.ec2.internal": False}


def test_a_long_daemonsets_pods_are_named_by_its_first_58_characters(tmp_path):
    assert _matches(tmp_path, f"exporter:\n  deployment: helm\n  daemonset: {LONG}\n", [
        f"{LONG[:57]}-q8w2z", f"{LONG[:58]}q8w2z", f"{LONG}-q8w2z"]) == {
        f"{LONG[:57]}-q8w2z": False, f"{LONG[:58]}q8w2z": True, f"{LONG}-q8w2z": False}


def test_a_dot_in_a_daemonsets_name_is_no_wildcard(tmp_path):
    assert _matches(tmp_path, "exporter:\n  deployment: helm\n  daemonset: dcgm.exporter\n",
                    ["dcgm.exporter-q8w2z", "dcgmxexporter-q8w2z"]) == {
        "dcgm.exporter-q8w2z": True, "dcgmxexporter-q8w2z": False}


def test_the_generated_suffix_matches_the_alphabet_kubernetes_writes_and_no_other_character():
    """GENERATED_SUFFIX is written as ranges (6 bytes less in each of the 148 places the multi-region all-metrics
    dashboard reads it): every character Kubernetes' generated names use, and no other one (of every ASCII character,
    and a sample beyond)."""
    from generator.exporter_styles import GENERATED_ALPHABET, GENERATED_SUFFIX

    assert GENERATED_ALPHABET == "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand
    one = GENERATED_SUFFIX.removesuffix("{5}")
    assert {c for c in map(chr, range(0x2FF)) if re.fullmatch(one, c)} == set(GENERATED_ALPHABET)
    assert re.fullmatch(GENERATED_SUFFIX, "q8w2z") and not re.fullmatch(GENERATED_SUFFIX, "q8w2a")
