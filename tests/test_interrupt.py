"""Ctrl-C stops a long simulation within seconds, whatever its record grid: one line, exit code
130, no run file. stderr is a pseudo-terminal, so the progress bar is drawn and tells when the
run is inside its jitted loop."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import time

ANSI = re.compile(rb"\x1b\[[0-9;?]*[a-zA-Z]")

# aim at d = 8 runs about 1.6e5 steps/s here (2 seeds): t_max = 40000 is 6.7e6 steps, one
# record segment of about 40 s (attndyn simulate --dry-run says 42.7 s)
LONG = ["--set", "d=8", "--set", "t_max=40000", "--set", "records=2", "--set", "batch=4"]
LONG += ["--set", "test_size=16", "--seeds", "2", "--yes"]


def _read(fd: int, until: float) -> bytes:
    ready, _, _ = select.select([fd], [], [], max(0.0, until - time.monotonic()))
    if not ready:
        return b""
    try:
        return os.read(fd, 65536)
    except OSError:  # the child closed the terminal
        return b""


def test_ctrl_c_stops_a_long_record_segment_within_seconds(tmp_path):
    out = tmp_path / "results"
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "attndyn", "simulate", "aim", *LONG, "--out", str(out)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
    )
    os.close(slave)
    try:
        seen = b""
        deadline = time.monotonic() + 60
        while b"steps" not in ANSI.sub(b"", seen):  # the bar counts the steps
            assert proc.poll() is None, seen.decode(errors="replace")
            assert time.monotonic() < deadline, "no progress line within 60 s"
            seen += _read(master, time.monotonic() + 0.5)
        time.sleep(0.5)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        after, said_at = b"", None
        while proc.poll() is None and time.monotonic() < sent + 10:
            after += _read(master, time.monotonic() + 0.05)
            if said_at is None and b"interrupted" in after:
                said_at = time.monotonic() - sent
        latency = time.monotonic() - sent
        after += _read(master, time.monotonic() + 0.2)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(master)
    text = ANSI.sub(b"", after).decode(errors="replace")
    print(f"message {said_at} s, exit {latency:.2f} s after SIGINT")
    assert latency < 3, f"exit took {latency:.1f} s (message after {said_at} s): {text[-2000:]}"
    assert proc.returncode == 130, text
    lines = [line.strip() for line in text.replace("\r", "\n").splitlines()]
    said = [line for line in lines if "interrupted" in line]
    assert said == ["interrupted: stored runs are kept; run the same command to finish"], text
    assert "Traceback" not in text
    assert proc.stdout.read() == b""
    runs = out / "runs"
    assert not runs.exists() or not list(runs.iterdir())  # no run file, partial or whole
