"""tests/support/side_by_side.py: a module's live scenes set up at once, each test reading only its own."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from types import SimpleNamespace

import pytest

from tests.support.side_by_side import entered_together, used


def test_the_scenes_are_set_up_at_once_and_exited_in_the_reverse_of_their_order():
    # each scene's setup waits for all three to be in setup: one after another, the first would wait alone and break
    # the barrier (its timeout only ends a wait that would never end)
    together = threading.Barrier(3, timeout=60)
    log: list[str] = []

    @contextmanager
    def scene(name):
        together.wait()
        log.append(f"up {name}")
        yield name.upper()
        log.append(f"down {name}")

    with entered_together({key: (lambda key=key: scene(key)) for key in ("a", "b", "c")}) as scenes:
        assert [scenes.get(key) for key in ("a", "b", "c")] == ["A", "B", "C"]
        assert sorted(log) == ["up a", "up b", "up c"]
    assert log[3:] == ["down c", "down b", "down a"]


def test_a_scene_whose_setup_failed_fails_only_the_tests_that_read_it():
    exited = []

    @contextmanager
    def good():
        yield "fine"
        exited.append("good")

    @contextmanager
    def broken():
        raise RuntimeError("prometheus did not start")
        yield  # pragma: no cover

    with entered_together({"good": good, "broken": broken}) as scenes:
        assert scenes.get("good") == "fine"
        with pytest.raises(RuntimeError, match="prometheus did not start"):
            scenes.get("broken")
        with pytest.raises(KeyError, match="not set up"):
            scenes.get("never listed")
    assert exited == ["good"]


def _item(*fixtures: str, **params):
    return SimpleNamespace(fixturenames=list(fixtures), **({"callspec": SimpleNamespace(params=params)} if params else {}))


def test_a_scene_is_used_by_the_tests_that_name_its_fixture_and_its_param():
    assert used("tied", _item("tied", "tmp_path"))
    assert not used("tied", _item("three"))
    assert used(("mig_blank", "renamed"), _item("mig_blank", mig_blank="renamed"))
    assert not used(("mig_blank", "renamed"), _item("mig_blank", mig_blank="one-spelling"))
    assert not used(("mig_blank", "renamed"), _item("mig_blank"))
