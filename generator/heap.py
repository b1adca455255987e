"""The C heap of a process that ends with its command (cli_base.ends_with_command), while it makes a large build.

A large build makes and frees texts of megabytes again and again (a rules file of 1,000 clusters is 21 MB, and so is
each text it is made from). glibc's malloc gives each block of more than its mmap threshold (128 KB, raised as such
blocks are freed, to 32 MB at most) pages of its own, and hands them back to the system when it is freed, and it hands
back the top of its heap once more than its trim threshold (twice the mmap threshold) is free there: the next text
then takes fresh pages, each zeroed by the kernel at its first touch (a page fault). 1,000 clusters' generate took
171,000 page faults, 0.45-0.54 s of system time, against 127,000 and 0.37 s with every block up to 32 MB taken from the
heap and none of it handed back (its peak resident memory 6 MB larger, of 473 MB): the process ends soon after, and
the system takes everything back at once.
"""

from __future__ import annotations

# mallopt's parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD_MAX = 32 << 20  # the largest mmap threshold glibc takes on 64-bit systems (HEAP_MAX_SIZE / 2)
_NEVER_TRIMMED = (1 << 31) - 1  # (an int: mallopt's value)
# The fewest clusters whose generate keeps its freed memory: a smaller build frees little, and importing ctypes to ask
# costs 2-3 ms
KEPT_FROM = 50


def keep_freed_memory() -> None:
    """Where the C library is glibc's, keep the memory freed for the next blocks (see above); elsewhere nothing."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):  # no mallopt (macOS), no C library to name (Windows)
        return
    mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX)
    mallopt(_M_TRIM_THRESHOLD, _NEVER_TRIMMED)
