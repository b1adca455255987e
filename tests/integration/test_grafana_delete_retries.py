"""A prune's delete retried after a 5xx (against the Grafana API test server over HTTP): Grafana's delete takes no
version, so gpudash looks at the dashboard again before every attempt, not only the first: a person's save between
two attempts is never deleted."""

from __future__ import annotations

import json

import pytest

from tests.integration.test_grafana_claims import TEAM, _file, _written
from tests.integration.test_grafana_push import _push, grafana, run  # noqa: F401 (fixtures)


@pytest.mark.parametrize("person_saves", [True, False], ids=["a person saves between", "nothing between"])
def test_a_delete_answered_503_looks_again_before_its_retry(grafana, run, tmp_path, person_saves):
    """A saves the team dashboard, then stops defining it and pushes --prune. The first DELETE is answered 503 (a
    proxy; not processed). A person's save during the wait was deleted by the retry, exit 0; now it is kept, the
    push fails (exit 3) saying why. With nothing saved between, the retry deletes it (exit 0)."""
    _written(run, _file(tmp_path, "a", ["alpha"]))
    real, deletes = grafana._delete, []

    def delete(uid):
        deletes.append(uid)
        if uid == TEAM and len(deletes) == 1:
            if person_saves:
                stored = grafana.state.dashboards[uid]
                grafana._store(uid, {**stored["dashboard"], "title": "Edited by alice"}, stored["folderUid"], "",
                               "alice")
            return 503, {"message": "Service Unavailable"}, None
        return real(uid)

    grafana._delete = delete
    code, stdout, stderr = _push(run, "--config", _file(tmp_path, "a2", ["alpha"], team=False), "--prune")
    if person_saves:
        assert code == 3 and deletes == [TEAM], stderr
        assert grafana.state.dashboards[TEAM]["dashboard"]["title"] == "Edited by alice"
        assert "changed in Grafana by alice since the plan; not deleted" in stdout, stdout
    else:
        assert code == 0 and json.loads(stdout)["written"] == [TEAM] and deletes == [TEAM, TEAM], stderr
        assert TEAM not in grafana.state.dashboards
