"""The test harness's remembered answers (prometheus_server.Prometheus.remember_answers) are forgotten when the
server's data changes: a query asked again after recordings were written reads them, not the answer from before."""
from tests.support.prometheus_server import backfilled, recorded


def _counter(start):
    return "".join(f'x_total{{gpu="0"}} {k} {start + 30 * k}\n' for k in range(20)) + "# EOF\n"


def test_an_answer_is_asked_anew_after_the_data_changed(tmp_path):
    with backfilled(tmp_path, _counter, 600, 30) as (prometheus, start):
        group = {"interval": "30s", "rules": [{"record": "harness:x_doubled", "expr": "x_total * 2"}]}
        at = start + 300
        prometheus.remember_answers()
        assert prometheus.query("harness:x_doubled", at=at) == []  # nothing recorded yet
        recorded(prometheus, group, start, start + 600)
        after = prometheus.query("harness:x_doubled", at=at)
        assert [float(series["value"][1]) for series in after] == [20.0]  # x_total is 10 at start + 300
