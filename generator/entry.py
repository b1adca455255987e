"""The `gpudash` command's first code (the console script and `python -m generator` start here).

Importing the command's modules takes a tenth of a second or more; Ctrl-C then, or while click reads the command
line, or after the command while its output is flushed, ends the command as Ctrl-C anywhere else does: one line on
stderr and exit 130, never a traceback (nor click's "Aborted!" and exit 1). Nothing is imported here before that
guard is in place."""


def run() -> None:
    """The `gpudash` command."""
    try:
        from .dataclass_code import install
        from .regex_code import install as install_regex_code

        install_regex_code()  # before any module that compiles a pattern
        install()  # before any module that makes a dataclass
        from .cli import run as command

        command()
    except KeyboardInterrupt:
        from .errors import interrupted

        interrupted()
