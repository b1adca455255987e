"""`python -m generator` runs the `gpudash` command."""

from .entry import run

run()
