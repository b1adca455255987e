"""`python -m generator` runs the `gpudash` command."""

from .cli import run

run()
