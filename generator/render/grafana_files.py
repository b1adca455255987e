"""Files that deliver Grafana dashboards: file provisioning and sidecar ConfigMaps. Pure."""

from __future__ import annotations

from typing import Any

from ..markers import KUBERNETES_MANAGED_BY, KUBERNETES_PART, part_note
from ..names import PROVISIONING_PROVIDER, dashboard_configmap_key, dashboard_configmap_name
from ..settings import Settings

PROVISIONING_PATH = "/var/lib/grafana/dashboards/gpudash"
SIDECAR_LABEL = "grafana_dashboard"
SIDECAR_FOLDER_ANNOTATION = "grafana_folder"


def provisioning(settings: Settings) -> dict[str, Any]:
    """A dashboards provider for Grafana's provisioning/dashboards/ folder."""
    folder = settings.grafana.folder
    return {
        "apiVersion": 1,
        "providers": [{
            "name": PROVISIONING_PROVIDER,
            "orgId": 1,
            "type": "file",
            "folder": folder.title,
            "folderUid": folder.uid,
            "disableDeletion": False,
            "allowUiUpdates": False,
            "updateIntervalSeconds": 60,
            "options": {"path": PROVISIONING_PATH, "foldersFromFilesStructure": False},
        }],
    }


def configmap(uid: str, dashboard_json: str | bytes, folder_title: str, publisher: dict[str, str],
              part: tuple[int, int] | None = None) -> dict[str, Any]:
    """One ConfigMap per dashboard (its JSON as text, or as UTF-8 bytes serialize.to_yaml writes as that text), found
    by kube-prometheus-stack's Grafana sidecar; it records the settings that wrote it (`publisher`, the annotations
    markers.kubernetes_publisher makes), which verify reads back: every settings file names a dashboard's ConfigMap
    alike. A part of a dashboard cut into parts (`part`: k of n, dashboard_parts.part_said) says so (KUBERNETES_PART):
    verify's evidence that a part no longer made is gpudash's part."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": dashboard_configmap_name(uid),
            "labels": {SIDECAR_LABEL: "1", **KUBERNETES_MANAGED_BY},
            "annotations": {SIDECAR_FOLDER_ANNOTATION: folder_title, **publisher,
                            **({KUBERNETES_PART: part_note(part)} if part else {})},
        },
        "data": {dashboard_configmap_key(uid): dashboard_json},
    }
