"""The alarms of a build's cloudwatch/alarms.json by the rule that made them (their gpudash:rule tag)."""

from __future__ import annotations

import json


def alarm_request(files, rule: str) -> dict:
    """The request of the one alarm `rule` made."""
    (request,) = [a["Request"] for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]
                  if {"Key": "gpudash:rule", "Value": rule} in a["Request"]["Tags"]]
    return request


def alarm_requests(files) -> dict[str, dict]:
    """{rule: the request of its alarm} (one alarm a rule)."""
    return {next(t["Value"] for t in a["Request"]["Tags"] if t["Key"] == "gpudash:rule"): a["Request"]
            for a in json.loads(files["cloudwatch/alarms.json"])["alarms"]}
