"""The `gpudash` command's first code (the console script and `python -m generator` start here).

Importing the command's modules takes a tenth of a second or more; Ctrl-C then, or while click reads the command
line, or after the command while its output is flushed, ends the command as Ctrl-C anywhere else does: one line on
stderr and exit 130, never a traceback (nor click's "Aborted!" and exit 1). Nothing is imported here before that
guard is in place."""


def run() -> None:
    """The `gpudash` command. Its modules are imported with the cycle collector off: importing makes objects that live
    until the process ends (modules, classes, functions) and next to no garbage cycles, and the collector would walk
    them again and again (some 20 collections, about 4 ms of a small `generate`'s CPU) to find none. Those objects are
    then left out of every later collection (gc.freeze), and the collector is back on for the command, which turns it
    off itself where it makes many objects (cli_base.no_cycle_collection)."""
    try:
        import gc

        gc.disable()
        from .dataclass_code import install
        from .regex_code import install as install_regex_code
        from .sdk_code import install as install_sdk_code

        install_regex_code()  # before any module that compiles a pattern
        install()  # before any module that makes a dataclass
        install_sdk_code()  # before the Grafana SDK is imported
        from .cli import run as command

        gc.freeze()  # what the imports made is never walked again (it lives until the process ends)
        gc.enable()
        command()
    except KeyboardInterrupt:
        from .errors import interrupted

        interrupted()
