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


if __name__ == "__main__":
    sys.meta_path.insert(0, _Watch)
    from generator.cli import main

    try:
        main(sys.argv[1:])
    except SystemExit as exit:
        code = exit.code
    print("\n".join(["exit", str(code), *FIRST_ON_A_THREAD]))
