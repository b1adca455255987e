"""The kubeconfig files kubectl reads (which the official client is given: clients/kube), and the contexts they name:
read before a run, so a `--context` that names none of them is a usage error, said before anything is asked."""

from __future__ import annotations

import os


def kubeconfig_files() -> list[str]:
    """The files KUBECONFIG names (empty is unset, as to kubectl), else ~/.kube/config."""
    named = os.environ.get("KUBECONFIG") or ""
    return [path for path in named.split(os.pathsep) if path] or [os.path.expanduser("~/.kube/config")]


UPDATE = "for EKS: aws eks update-kubeconfig --name <cluster> --region <region>"


def no_kubeconfig() -> tuple[str, str] | None:
    """(what, fix) when none of the kubeconfig files exists (a KUBECONFIG naming none of them said as such: the client
    says only that it found no configuration), else None."""
    files = kubeconfig_files()
    missing = [path for path in files if not os.path.exists(path)]
    if len(missing) < len(files):
        return None
    if os.environ.get("KUBECONFIG"):
        return (f"KUBECONFIG names {', '.join(missing)}, which {'does' if len(missing) == 1 else 'do'} not exist",
                f"point KUBECONFIG at your kubeconfig file, or unset it to read ~/.kube/config; {UPDATE}")
    return (f"KUBECONFIG is not set and {missing[0]} does not exist", f"set KUBECONFIG to your kubeconfig file; {UPDATE}")


def known_contexts() -> list[str] | None:
    """The context names of the kubeconfig files that exist (merged as kubectl merges them), or None when none can be
    read as a kubeconfig (none there, not YAML, shaped otherwise): the run's kube check says what is wrong then."""
    import yaml

    names: list[str] = []
    read = False
    for path in kubeconfig_files():
        try:
            with open(path, encoding="utf-8") as file:
                config = yaml.safe_load(file)
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        contexts = config.get("contexts") if isinstance(config, dict) else None
        if not isinstance(contexts, list):
            continue
        read = True
        names += [c["name"] for c in contexts if isinstance(c, dict) and isinstance(c.get("name"), str)
                  and c["name"] not in names]
    return names if read else None
