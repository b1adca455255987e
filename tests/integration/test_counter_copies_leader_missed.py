"""Grafana's "Energy use rate" where two exporters read one nv-hostengine's collections (every 30 s, 18 s past each
half minute) at different lags, and the one reading the newer collection misses two scrapes in a row. Wrong
at 66a1829d (each step's seconds on one copy's clock).

Copy a is scraped 11 s past each half minute (23 s after the collection before), copy b 26 s past (8 s after it): in
each step b reads the collection a reads at the next, so b's reading is the larger and leads. b's scrapes at 716 and
746 s fail (a network blip, or its pod restarting); a reads every scrape. Each copy alone reads the GPU's 200,000 mW at
every minute (test_counter_copies_tied's stories are read the same way), and so must the two.

On 66a1829d the panel reads 222,222 mW at 13 and 14 minutes and 218,182 at 15 (on its parent, 200,000 at 13 and 14,
177,778 at 12 and 218,182 at 15): 13 and 14 are 66a1829d's, 15 is older. A third failed scrape of b (686 s) reads the
same at 13 to 15. The returning copy's seconds were counted from the other copy's scrape of the base (45 s for 60 s of
growth: the two copies' lags apart); now on its own clock, the share of its own 90 s its growth above the base is."""

from __future__ import annotations

from tests.integration.test_counter_copies_tied import _reads_the_power
from tests.support.promtool_rules import rules  # noqa: F401 (a fixture)


def test_grafanas_energy_rate_reads_the_gpus_power_where_the_lead_copy_misses_two_scrapes(rules, monkeypatch):
    _reads_the_power(rules, monkeypatch, "lead_missed_two.yaml",
                     {"a": (11, 30, 18, ()), "b": (26, 30, 18, (716, 746))})
