"""Live progress: counts from many threads, drawn only on a terminal, names escaped."""

from __future__ import annotations

import io
import re
import sys
import threading

from reviewflow.providers.messages import Usage
from reviewflow.report.progress import ProgressDisplay, ProgressState
from tests.report.samples import TtyStream

SGR_OR_CURSOR = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
ENV = {"TERM": "xterm"}


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
    assert "Reviewing: 1/3 files  3 requests  1,244 tokens  b.py (+1)" in text
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
