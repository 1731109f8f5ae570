"""The bench's RSS watchdog: a measurement child whose resident memory
passes the limit is killed with the figure it reached; one under the
limit runs to its end untouched."""

from __future__ import annotations

import subprocess
import sys

from bench.common import memory_total_mb, resident_mb, watch

GROW = "import time; b = bytearray(256 << 20); b[::4096] = b'x' * len(b[::4096]); time.sleep(60)"


def test_a_child_past_the_limit_is_killed_with_its_rss():
    child = subprocess.Popen([sys.executable, "-c", GROW])
    killed_at = watch(child, rss_limit_mb=128)
    assert killed_at is not None and killed_at > 128
    assert child.returncode == -9
    assert resident_mb(child.pid) == 0.0  # gone


def test_a_child_under_the_limit_finishes():
    child = subprocess.Popen([sys.executable, "-c", "print('done')"])
    assert watch(child, rss_limit_mb=1024) is None
    assert child.returncode == 0


def test_the_machine_memory_is_read():
    assert 256 < memory_total_mb() < 1 << 24
