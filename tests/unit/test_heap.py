"""A large build's process keeps the memory it frees (heap.keep_freed_memory): a text of megabytes made again after
one was freed takes the pages the first had, not fresh pages the kernel zeroes at their first touch."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

# Makes four texts of 8 MB and frees them, four times; prints the page faults of the last three rounds
_CHURN = """
import resource, sys
if sys.argv[1] == "kept":
    from generator.heap import keep_freed_memory
    keep_freed_memory()
texts = [b"x" * (8 << 20) for _ in range(4)]
del texts
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(3):
    texts = [b"x" * (8 << 20) for _ in range(4)]
    del texts
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    return int(subprocess.run([sys.executable, "-c", _CHURN, mode], capture_output=True, text=True, check=True).stdout)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc and its page faults")
def test_texts_made_again_take_the_pages_freed_before():
    pages = 3 * 4 * (8 << 20) // 4096
    assert _faults("as-is") >= pages // 2  # each text its own fresh pages
    assert _faults("kept") < pages // 20
