"""How long the CloudWatch agent holds a counter's previous reading, and how late a reading reaches CloudWatch:
the bounds on scrape.interval and agent.force_flush_interval that keep every counter's increase and every value
that means now true. Settings refuse what breaks them; lint checks a build's agent configs by the same rule.

Counters are published as the difference to the series' previous reading, which the agent keeps in a cache that
forgets a reading after a while (CACHE_TTL, per pipeline):

* classic (plugins/inputs/prometheus/delta_calculator.go): a map with expiry (CacheTTL 5 minutes, from the
  wall-clock time the reading was stored), cleaned on a reading at least a minute after the last clean-up. A
  reading is handled when its scrape's samples reach the handler: the scrape interval after the previous one,
  give or take how much longer the scrape took (up to its timeout). At 5 minutes about half of the increases
  are lost (a target's first counter cleans the others' readings of it).
* otel (awsemf, internal/aws/metrics metric_calculator.go of the amazon-contributing fork, which the agent builds
  in place of upstream's from 1.300058.0 on, so in every agent the otel pipeline runs on): readings stored with the
  datapoint's timestamp (the scrape's start), swept every 15 minutes (`cleanInterval`) from the exporter's start,
  a reading 15 minutes old or more deleted (upstream's copy: 5 minutes). A point reaches awsemf after the scrape
  (up to its timeout) and the batch processor (up to its timeout, agent.force_flush_interval); a node whose
  scrapes fall just before a sweep loses every increase.

So the next reading must be handled within the pipeline's CACHE_TTL - MARGIN of the previous one: scrape interval
plus the scrape timeout (classic), plus the batch timeout (otel). MARGIN covers what neither timeout bounds (a slow export,
a busy agent).

Values that mean now (render/cloudwatch.now_period) and the data-missing alarm read a period a minute after it
ends: each reading must be in CloudWatch by then. It is sent after the scrape (up to its timeout) and the flush
(agent.force_flush_interval on either pipeline), and CloudWatch extracts EMF metrics within seconds; so the
flush interval is at most MAX_FLUSH.
"""

from __future__ import annotations

# seconds: each pipeline's cache of a counter's previous reading (classic: delta_calculator.go CacheTTL; otel: the
# fork's metric_calculator.go cleanInterval, 306057926a7b0902da29f4dc9a9b77cbec6161cf)
CACHE_TTL = {"classic": 300, "otel": 900}
MARGIN = 30  # seconds kept free before the cache forgets a reading
SCRAPE_TIMEOUT = 10  # seconds; a scrape job's timeout is this or its interval when shorter
MAX_FLUSH = 30  # seconds: the longest agent.force_flush_interval that reaches CloudWatch within the minute


def scrape_timeout(interval: int) -> int:
    """The scrape timeout gpudash writes for a job of `interval` seconds (a timeout may not exceed its interval)."""
    return min(interval, SCRAPE_TIMEOUT)


def processing_delay(pipeline: str, timeout: int, flush: int) -> int:
    """The longest time from a scrape's start to its counters' deltas being worked out, beyond the interval."""
    return timeout + (flush if pipeline == "otel" else 0)


def timing_problem(pipeline: str, interval: int, timeout: int, flush: int) -> tuple[str, str, str] | None:
    """(the setting at fault, what goes wrong, what to write) when a counter's previous reading can be forgotten
    before the next one is handled, or a reading can reach CloudWatch after the minute the now values read;
    None when both hold."""
    if flush > MAX_FLUSH:
        return ("agent.force_flush_interval",
                f"agent.force_flush_interval {flush} s: the agent would send a reading up to {flush} s after its "
                f"scrape, and the CloudWatch values that mean now (GPUs reporting, total power, pods on GPUs) and "
                f"the data-missing alarm read each minute a minute after it ends: they would miss the GPUs whose "
                f"readings are still waiting",
                f"set agent.force_flush_interval to {MAX_FLUSH} or less (default 5)")
    ttl = CACHE_TTL[pipeline]
    delay = processing_delay(pipeline, timeout, flush)
    if interval + delay <= ttl - MARGIN:
        return None
    largest = ttl - MARGIN - delay
    at_fault = "scrape.interval" if interval > ttl - MARGIN - processing_delay(pipeline, timeout, 1) \
        else "agent.force_flush_interval"
    if pipeline == "otel":
        what = f"scrape.interval {interval} s and agent.force_flush_interval {flush} s (agent.pipeline otel)"
        parts = f"the interval, the scrape timeout {timeout} s and the batch timeout {flush} s"
        lost = "every increase of the nodes whose scrapes fall just before awsemf's cache sweep would be lost"
        fix = f"keep scrape.interval + the scrape timeout + agent.force_flush_interval within {ttl - MARGIN} s: " \
              f"lower agent.force_flush_interval, or use a scrape.interval of {max(largest, 0)} s or less"
    else:
        what = f"scrape.interval {interval} s (agent.pipeline classic)"
        parts = f"the interval and the scrape timeout {timeout} s"
        lost = "about half the increases would be lost (a target's first counter makes the agent forget the others'"\
               " previous readings)"
        fix = f"keep scrape.interval + the scrape timeout within {ttl - MARGIN} s: a scrape.interval of " \
              f"{max(largest, 0)} s or less"
    return (at_fault,
            f"{what}: a counter's next reading is handled up to {interval + delay} s after the previous one "
            f"({parts}), and the agent forgets a counter's previous reading {ttl} s after it: {lost}, with "
            f"every rate, increase and counter alarm read from them",
            fix + " that divides cloudwatch.period (e.g. 100s for 300)")
