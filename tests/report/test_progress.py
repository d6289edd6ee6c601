"""Live progress: counts from many threads, drawn only on a terminal, names escaped."""

from __future__ import annotations

import io
import re
import sys
import threading

from reviewflow.config import ModelPrice
from reviewflow.cost.prices import PriceInfo
from reviewflow.providers.messages import Usage
from reviewflow.report.progress import ProgressDisplay, ProgressState, bar, time_left
from tests.report.samples import TtyStream

SGR_OR_CURSOR = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
ENV = {"TERM": "xterm", "COLUMNS": "120"}


def drive(progress: ProgressDisplay) -> None:
    progress.file_started("a.py")
    progress.request_done(Usage(prompt_tokens=1000, completion_tokens=234, total_tokens=1234))
    progress.file_started("b.py")
    progress.file_done("a.py")
    progress.request_done(Usage(total_tokens=10), attempts=2)


def test_counts() -> None:
    with ProgressDisplay(io.StringIO(), ENV, files_total=3) as progress:
        drive(progress)
        assert progress.state() == ProgressState(
            files_total=3, files_done=1, requests=3, tokens=1244, current=("b.py",)
        )


def test_nothing_is_drawn_off_a_terminal_or_when_disabled() -> None:
    pipe = io.StringIO()
    with ProgressDisplay(pipe, ENV, files_total=3) as progress:
        assert not progress.enabled
        drive(progress)
    tty = TtyStream()
    with ProgressDisplay(tty, ENV, files_total=3, enabled=False) as progress:
        drive(progress)
    assert pipe.getvalue() == "" and tty.getvalue() == ""


def test_drawn_live_on_a_terminal_with_escaped_names() -> None:
    tty = TtyStream()
    stdout, stderr = sys.stdout, sys.stderr
    progress = ProgressDisplay(tty, ENV, files_total=3)
    assert progress.enabled
    assert (sys.stdout, sys.stderr) == (stdout, stderr)  # the report's stdout is left alone
    progress.file_started("evil\x1b[2J\rname.py")
    drive(progress)
    progress.close()
    progress.close()  # closing twice is harmless
    text = SGR_OR_CURSOR.sub("", tty.getvalue())
    assert re.search(
        r"Reviewing ━{5}╺━{10} 1/3 files  ETA 0:0\d  3 requests  1,244 tokens  b.py \(\+1\)", text
    )
    assert "evil\\x1b[2J\\x0dname.py" in text
    assert "\x1b[2J" not in tty.getvalue()


def test_thread_safe_counting() -> None:
    progress = ProgressDisplay(TtyStream(), ENV, files_total=400)

    def work(n: int) -> None:
        for i in range(50):
            path = f"f{n}-{i}.py"
            progress.file_started(path)
            progress.request_done(Usage(total_tokens=2))
            progress.file_done(path)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    progress.close()
    assert progress.state() == ProgressState(
        files_total=400, files_done=400, requests=400, tokens=800, current=()
    )


def test_the_cost_so_far_and_the_time_left() -> None:
    """With a price the line adds up what the answers cost; once a file is done it says how
    long the rest will take at the time per file so far."""
    now = [100.0]
    price = PriceInfo(price=ModelPrice(input=2.0, output=10.0), source="config")
    tty = TtyStream()
    progress = ProgressDisplay(tty, ENV, files_total=4, price=price, clock=lambda: now[0])
    progress.file_started("a.py")
    progress.request_done(Usage(prompt_tokens=10_000, completion_tokens=1_000, total_tokens=11_000))
    now[0] += 30.0  # the first file took 30 s: three more, 90 s
    progress.file_done("a.py")
    progress.close()
    assert progress.state().cost == (10_000 * 2.0 + 1_000 * 10.0) / 1e6
    last = SGR_OR_CURSOR.sub("", tty.getvalue()).splitlines()[-1]
    assert "1/4 files  ETA 1:30  $0.0300  1 request  11,000 tokens" in last
    euro = PriceInfo(price=ModelPrice(input=2.0, output=10.0), source="config", currency="EUR")
    progress = ProgressDisplay(TtyStream(), ENV, files_total=1, price=euro)
    progress.request_done(Usage(prompt_tokens=1_000_000, total_tokens=1_000_000))
    assert "2.00 EUR" in progress._render().plain
    progress.close()


def test_the_bar_and_the_clock() -> None:
    assert bar(0, 4, width=8).plain == "╺━━━━━━━" and bar(2, 4, width=8).plain == "━━━━╺━━━"
    assert bar(4, 4, width=8).plain == "━" * 8 and bar(0, 0, width=8).plain == "━" * 8
    assert time_left(10.0, 0, 5) is None and time_left(10.0, 5, 5) is None
    assert time_left(10.0, 1, 5) == "0:40" and time_left(3600.0, 1, 3) == "2:00:00"


def test_a_narrow_terminal_crops_the_line_instead_of_wrapping_it() -> None:
    tty = TtyStream()
    progress = ProgressDisplay(tty, {"TERM": "xterm", "COLUMNS": "40"}, files_total=3)
    progress.file_started("a_rather_long/path/to/a_file.py")
    progress.close()
    [line] = SGR_OR_CURSOR.sub("", tty.getvalue()).split("\r")[-1].splitlines()
    assert len(line) <= 40 and line.startswith("Reviewing ╺") and line.endswith("…")
