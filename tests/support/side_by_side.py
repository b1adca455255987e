"""Live scenes of one test module set up side by side: each scene (exporters served from this process, a Prometheus
scraping them every second) waits in real time for its scrapes, 15 to 25 s, and uses little CPU meanwhile. One after
another, a module of nine scenes held its worker for over three minutes; side by side, about as long as its longest.

A module lists its scenes once (`scenes = module_scenes({key: maker})`, a module-scoped fixture) and each scene's
fixture reads its own (`tied = scene("tied")`). A key is a fixture's name, or (name, param) for a parametrized fixture.
Only the scenes that the module's selected tests use are set up (`-k` picks one test: one scene), all at the first
test that needs any, each in its own thread; they stay up until the module ends and are exited from the main thread,
in the reverse of their listed order. A scene whose setup raised raises that exception in the tests that use it (and
only in them), as its own fixture would have. What each scene holds and what each test asserts is unchanged."""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any, Callable, Hashable, Iterator

import pytest

Maker = Callable[[pytest.TempPathFactory], AbstractContextManager]


class Scenes:
    def __init__(self, values: dict[Hashable, Any]):
        self._values = values

    def get(self, key: Hashable) -> Any:
        if key not in self._values:
            raise KeyError(f"scene {key!r} was not set up: no selected test of the module was seen to use it")
        value = self._values[key]
        if isinstance(value, BaseException):
            raise value
        return value


def used(key: Hashable, item: pytest.Item) -> bool:
    """Whether the test `item` uses the scene `key` (a fixture's name, or (name, param))."""
    name, param = (key, None) if isinstance(key, str) else key
    if name not in item.fixturenames:
        return False
    if param is None:
        return True
    callspec = getattr(item, "callspec", None)
    return callspec is not None and callspec.params.get(name) == param


@contextmanager
def entered_together(makers: dict[Hashable, Callable[[], AbstractContextManager]]) -> Iterator[Scenes]:
    """Each of `makers`' context managers entered in its own thread, all at once; exited from this thread, in the
    reverse of `makers`' order, when this context ends (an exception a setup raised is the scene's value)."""
    entered: dict = {}

    def enter(key):
        scene = makers[key]()
        value = scene.__enter__()
        entered[key] = scene
        return value

    with ExitStack() as stack, ThreadPoolExecutor(max(1, len(makers))) as pool:
        futures = {key: pool.submit(enter, key) for key in makers}
        wait(futures.values())
        for key in makers:
            if key in entered:
                stack.push(entered[key].__exit__)
        yield Scenes({key: future.exception() or future.result() for key, future in futures.items()})


def module_scenes(makers: dict[Hashable, Maker]):
    """A module-scoped fixture: the scenes `makers` make (each called with tmp_path_factory, returning a context
    manager whose __enter__ sets the scene up and returns what tests read) that this module's selected tests use,
    entered side by side; a `Scenes`."""

    @pytest.fixture(scope="module")
    def scenes(request, tmp_path_factory):
        mine = [item for item in request.session.items if item.module is request.module]
        tmp_path_factory.getbasetemp()  # made here, once: pytest makes it on first use, and two threads would both try
        with entered_together({key: functools.partial(maker, tmp_path_factory) for key, maker in makers.items()
                               if any(used(key, item) for item in mine)}) as scenes:
            yield scenes

    return scenes


def scene(name: str, params: tuple | None = None):
    """The module-scoped fixture `name`: what its scene's setup returned (with `params`: the scene (name, param))."""

    @pytest.fixture(scope="module", name=name, params=params)
    def read(scenes, request):
        return scenes.get(name if params is None else (name, request.param))

    return read
