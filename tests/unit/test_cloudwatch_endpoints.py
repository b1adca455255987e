"""The CloudWatch client's data loader reads the endpoints of the services its session makes clients of from a copy
it keeps (botocore's endpoints.json, 1.2 MB, read as ordered dictionaries, was about a tenth of verify's CloudWatch
side): botocore resolves every one of them, in every Region of every partition, as with the whole document."""

from __future__ import annotations

import json
import os
import sys

import pytest
from botocore.loaders import Loader
from botocore.regions import EndpointResolver

from generator.clients import cloudwatch
from generator.clients.cloudwatch import CREDENTIAL_SERVICES, SERVICES, known_endpoints


def _whole():
    return Loader().load_data("endpoints")


def _resolved(resolver, *args, **kwargs):
    """What the resolver answers, or the error it raises (a variant a Region lacks)."""
    try:
        return resolver.construct_endpoint(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the same error either way is the same answer
        return type(exc).__name__


def test_the_endpoints_kept_resolve_as_the_whole_document():
    whole = _whole()
    kept = cloudwatch._called_only(whole)
    assert sum(len(p["services"]) for p in kept["partitions"]) < sum(len(p["services"]) for p in whole["partitions"])
    full, cut = EndpointResolver(whole), EndpointResolver(kept)
    regions = {region for partition in whole["partitions"] for region in partition["regions"]}
    regions |= {"us-east-9", "eu-north-3", "cn-west-9", "us-gov-east-2", "mars-1"}  # a Region botocore does not list
    compared, found = 0, 0
    for service in SERVICES + CREDENTIAL_SERVICES:
        for region in sorted(regions):
            for fips in (False, True):
                for dualstack in (False, True):
                    kwargs = {"use_fips_endpoint": fips, "use_dualstack_endpoint": dualstack}
                    assert _resolved(cut, service, region, **kwargs) == _resolved(full, service, region, **kwargs), \
                        (service, region, kwargs)
                    compared += 1
                    found += isinstance(_resolved(full, service, region, **kwargs), dict)
        for partition in full.get_available_partitions():
            assert cut.get_available_endpoints(service, partition) == full.get_available_endpoints(service, partition)
    assert compared > 500 and found > 300  # endpoints, not only the same errors


def test_the_copy_is_read_while_the_file_is_the_same_file(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    source = tmp_path / "endpoints.json"
    source.write_text(json.dumps({"version": 3, "partitions": [
        {"partition": "aws", "regions": {"us-east-1": {}}, "services": {"cloudwatch": {"endpoints": {"us-east-1": {}}},
                                                                        "s3": {"endpoints": {}}}}]}))
    kept = str(tmp_path / "cache" / "kept.json")
    loads = []

    def load(path):
        loads.append(path)
        with open(path + ".json") as whole:
            return json.load(whole)

    first = known_endpoints(str(tmp_path / "endpoints"), load, kept)
    assert list(first["partitions"][0]["services"]) == ["cloudwatch"] and first["version"] == 3
    assert known_endpoints(str(tmp_path / "endpoints"), load, kept) == first and len(loads) == 1  # the copy
    source.write_text(source.read_text().replace('"s3"', '"sts"'))  # botocore upgraded: another file
    assert list(known_endpoints(str(tmp_path / "endpoints"), load, kept)["partitions"][0]["services"]) == \
        ["cloudwatch", "sts"] and len(loads) == 2
    with open(kept, "w") as broken:
        broken.write("{not json")
    assert known_endpoints(str(tmp_path / "endpoints"), load, kept)["partitions"][0]["services"].keys() == \
        {"cloudwatch", "sts"} and len(loads) == 3
    os.remove(kept)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # PYTHONDONTWRITEBYTECODE: nothing written
    known_endpoints(str(tmp_path / "endpoints"), load, kept)
    assert not os.path.exists(kept) and len(loads) == 4


def test_a_document_of_another_shape_is_used_whole():
    odd = {"partitions": [{"partition": "aws", "services": ["cloudwatch"]}]}
    assert cloudwatch._called_only(odd) is odd
