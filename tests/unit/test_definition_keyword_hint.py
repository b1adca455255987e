"""A keyword a class does not take, in a definition: the fix names the fields gpudash's model class takes only when the
class called is gpudash's. A grafanalib Dashboard (users drop them into dashboards/) shares the name `Dashboard` with
gpudash's model class, but takes other fields (`panels`, which gpudash's does not)."""

from __future__ import annotations

import textwrap

import pytest

GRAFANALIB = {
    "from-import": """
        from grafanalib.core import Dashboard, TimeSeries, Target

        dashboard = Dashboard(
            title="Legacy GPU board",
            panelz=[TimeSeries(title="util", targets=[Target(expr="DCGM_FI_DEV_GPU_UTIL")])],
        ).auto_panel_ids()
        """,
    "module": """
        import grafanalib.core as core

        dashboard = core.Dashboard(title="Legacy GPU board", panelz=[]).auto_panel_ids()
        """,
}


@pytest.mark.parametrize("form", sorted(GRAFANALIB))
def test_a_grafanalib_dashboards_unknown_keyword_is_not_answered_with_gpudashs_fields(form, tmp_path, cli,
                                                                                      monkeypatch):
    (tmp_path / "dashboards").mkdir()
    (tmp_path / "dashboards" / "legacy.py").write_text(textwrap.dedent(GRAFANALIB[form]))
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  dashboards: [dashboards]\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("generate", "--out", str(tmp_path / "out"))
    assert code == 2 and "Traceback" not in err, err
    assert "unexpected keyword argument 'panelz'" in err
    assert "Dashboard takes id, title, rows" not in err  # gpudash's fields, not grafanalib's


def test_a_model_classs_unknown_keyword_still_names_its_fields(tmp_path, cli, monkeypatch):
    (tmp_path / "dashboards").mkdir()
    (tmp_path / "dashboards" / "mine.py").write_text(textwrap.dedent("""
        from generator.model import Dashboard

        def dashboards(ctx):
            return [Dashboard(id="mine", title="Mine", rowz=[])]
        """))
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  dashboards: [dashboards]\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("generate", "--out", str(tmp_path / "out"))
    assert code == 2 and "did you mean 'rows'? Dashboard takes id, title, rows" in err, err


def test_the_fields_are_named_after_python_3_13s_own_guess(tmp_path, cli, monkeypatch):
    """Python 3.13 ends the message with its own guess where a field is close ("Alarm.__init__() got an unexpected
    keyword argument 'sevrity'. Did you mean 'severity'?"): the fix still names the fields the class takes. The
    definition raises the message as 3.13 writes it (the suite runs on the oldest Python gpudash takes)."""
    (tmp_path / "alarms").mkdir()
    (tmp_path / "alarms" / "mine.py").write_text(textwrap.dedent("""
        from generator.model import Alarm

        def alarms(ctx):
            raise TypeError("Alarm.__init__() got an unexpected keyword argument 'sevrity'. Did you mean 'severity'?")
        """))
    (tmp_path / "gpudash.yaml").write_text("definitions:\n  alarms: [alarms]\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("generate", "--out", str(tmp_path / "out"))
    assert code == 2 and "did you mean 'severity'? Alarm takes id, title" in err, err
