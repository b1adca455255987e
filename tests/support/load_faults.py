"""Opt-in pytest plugin: the faults a loaded machine brings to the live scenes' exporters, on purpose, so a test that
holds only on an idle machine fails here first. Load it with `-p tests.support.load_faults` and pick the fault with
GPUDASH_TEST_FAULTS:

- `late`: every second exporter made answers its first scrape after the 1 s scrape timeout (its copy's first stored
  sample comes a scrape after the others');
- `late3`: the same for its first three scrapes;
- `miss`: every second exporter answers one scrape, its 4th to 9th, after the timeout (a failed scrape mid-run:
  staleness markers for its series);
- `slow`: every answer computed 0 to 0.6 s after the request came (a counter's reading later than the sample's stamp).

Nothing changes without the variable. Plain CPU load did not reproduce the CI's flakes (the tests get their CPU);
these did."""

from __future__ import annotations

import os
import random
import threading
import time

from tests.support import replay_exporter

FAULT = os.environ.get("GPUDASH_TEST_FAULTS", "")
PAST_TIMEOUT = 1.3  # seconds: past the live scenes' 1 s scrape timeout


def _wait(fault: str, made: int, answer: int, rng: random.Random, missed: int) -> float:
    """Seconds the `answer`th answer (from 1) of the `made`th exporter (from 0) waits."""
    odd = made % 2 == 1
    if fault == "late":
        return PAST_TIMEOUT if odd and answer == 1 else 0.0
    if fault == "late3":
        return PAST_TIMEOUT if odd and answer <= 3 else 0.0
    if fault == "miss":
        return PAST_TIMEOUT if odd and answer == missed else 0.0
    if fault == "slow":
        return rng.uniform(0, 0.6)
    return 0.0


def _faulty(made: int, payload):
    rng = random.Random(made * 7919 + os.getpid())
    missed = rng.randint(4, 9)
    answers = [0]
    lock = threading.Lock()

    def answer(*args):
        with lock:
            answers[0] += 1
            number = answers[0]
        time.sleep(_wait(FAULT, made, number, rng, missed))
        return payload(*args) if callable(payload) else payload

    return answer


if FAULT:
    _made = [0]
    _plain = replay_exporter.ReplayExporter.__init__

    def _init(self, payload, counted: bool = False):
        _made[0] += 1
        _plain(self, _faulty(_made[0] - 1, payload), counted)

    replay_exporter.ReplayExporter.__init__ = _init
