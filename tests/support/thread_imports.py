"""Runs the gpudash command line (the arguments after the script's name) and then prints, one a line, each module
first imported on a thread other than the main one: a thread importing a module that another is importing can see it
half made ("cannot import name ... from partially initialized module"), so whatever a command's threads use is
imported before they start. A finder first on sys.meta_path is asked only for a module not yet in sys.modules."""

from __future__ import annotations

import sys
import threading

FIRST_ON_A_THREAD: list[str] = []


class _Watch:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if threading.current_thread() is not threading.main_thread():
            FIRST_ON_A_THREAD.append(f"{name} ({threading.current_thread().name})")
        return None


def _run(args: list[str]) -> int | str | None:
    from generator.cli import main

    try:
        main(args)
    except SystemExit as exit:
        return exit.code
    return 0


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if arguments[:1] == ["--in-process-moto"]:  # the command's calls answered by the tests' moto in this process
        import os

        from tests.support.moto_server import MotoServer

        with MotoServer() as moto:
            os.environ["AWS_ENDPOINT_URL"] = moto.url
            sys.meta_path.insert(0, _Watch)
            code = _run(arguments[1:])
    else:
        sys.meta_path.insert(0, _Watch)
        code = _run(arguments)
    print("\n".join(["exit", str(code), *FIRST_ON_A_THREAD]))
