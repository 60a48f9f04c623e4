"""Runs on Dask end as cleanly as runs in one process (issue 35): Ctrl-C and SIGTERM end
``tilesim render`` and ``tilesim run`` with two workers within seconds, with one line and
exit 130 / 143, no Dask traceback and no worker process left, and a rerun resumes; a worker's
failure (a full disk) is its one-line error; a ``--scheduler`` address that is malformed or
not a Dask scheduler's is one line naming it, within a bounded time."""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from trace_helpers import sphere_trace

from tilesim.cli import main
from tilesim.errors import TilesimError
from tilesim.studies import dask_cluster as cluster
from tilesim.studies.batch import HANG_ENV

# What a Ctrl-C or SIGTERM may take to end a run whose workers are busy (Dask's own close
# waited for the running tasks and then its timeouts: 4-64 s).
PROMPT_S = 10


def frames_on_disk(folder: Path) -> int:
    return len(list(folder.rglob("frames/" + "[0-9]" * 6 + ".png")))


def left_in_group(pgid: int) -> list[str]:
    """The processes still running in the process group ``pgid`` (zombies aside)."""
    listing = subprocess.run(["ps", "-o", "pid=,stat=,args=", "-g", str(pgid)],
                             capture_output=True, text=True).stdout
    return [line for line in listing.splitlines() if line.split()[1][0] != "Z"]


def _as_from_a_terminal() -> None:
    """A program started from a terminal takes Ctrl-C; one started in the background by a
    shell without job control (``nohup pytest &``) inherits SIGINT ignored. The run under
    test is the terminal's."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupt(argv: list[str], out: Path, pngs: int, number: int, *, group: bool):
    """Start ``tilesim argv`` in its own process group with the test hook that holds each
    worker after its first frame, wait until ``pngs`` frames are on disk (the workers busy in
    their tasks), send signal ``number`` to the whole group (a terminal's Ctrl-C) or to the
    tilesim process alone (``kill``); returns the exit code, stderr and the seconds it took
    to end. No process of the group may be left."""
    proc = subprocess.Popen([sys.executable, "-m", "tilesim.cli", *argv],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **{HANG_ENV: "1"}), start_new_session=True,
                            preexec_fn=_as_from_a_terminal)
    try:
        deadline = time.monotonic() + 300
        while frames_on_disk(out) < pngs:
            assert proc.poll() is None, f"ended early: {proc.stderr.read()}"
            assert time.monotonic() < deadline, "the workers never wrote their first frames"
            time.sleep(0.05)
        sent = time.monotonic()
        if group:
            os.killpg(proc.pid, number)
        else:
            os.kill(proc.pid, number)
        try:
            stderr = proc.communicate(timeout=120)[1]
        except subprocess.TimeoutExpired:
            pytest.fail("the run did not end within 120 s of the signal")
        took = time.monotonic() - sent
        deadline = time.monotonic() + 10
        while left := left_in_group(proc.pid):
            assert time.monotonic() < deadline, f"processes left running: {left}"
            time.sleep(0.1)
        return proc.returncode, stderr, took
    finally:
        if proc.poll() is None or left_in_group(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stderr.close()


SIGNALS = [pytest.param(signal.SIGINT, True, 130, id="ctrl-c"),
           pytest.param(signal.SIGTERM, False, 143, id="sigterm")]


@pytest.mark.slow
@pytest.mark.parametrize(("number", "group", "code"), SIGNALS)
def test_a_signal_ends_a_two_worker_render_at_once_in_one_line_and_it_resumes(
        tmp_path, number, group, code):
    a = sphere_trace(tmp_path / "a.tsim", 3)
    b = sphere_trace(tmp_path / "b.tsim", 3)
    out = tmp_path / "out"
    argv = ["render", str(a), str(b), "--out", str(out), "--workers", "2"]
    returncode, stderr, took = interrupt(argv, out, 2, number, group=group)
    assert (returncode, stderr) == (code, "tilesim: interrupted\n")
    assert took < PROMPT_S
    # the rerun renders what is missing into the same folders
    done = subprocess.run([sys.executable, "-m", "tilesim.cli", *argv], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for job in ("a", "b"):
        listed = json.loads((out / job / "frames.json").read_text())["frames"]
        assert [f["frame"] for f in listed] == [0, 1, 2]


@pytest.mark.slow
@pytest.mark.parametrize(("number", "group", "code"), SIGNALS)
def test_a_signal_ends_a_render_in_one_process_in_one_line(tmp_path, number, group, code):
    """SIGTERM ended the process at once (exit -15, a temporary left behind); now it is
    Ctrl-C's clean-up, with its own exit code."""
    trace = sphere_trace(tmp_path / "a.tsim", 3)
    out = tmp_path / "out"
    returncode, stderr, took = interrupt(["render", str(trace), "--out", str(out)], out, 1,
                                         number, group=group)
    assert (returncode, stderr) == (code, "tilesim: interrupted\n")
    assert took < PROMPT_S
    assert not list(out.rglob("*.tmp"))


@pytest.mark.slow
@pytest.mark.parametrize(("number", "group", "code"), SIGNALS)
def test_a_signal_ends_a_two_worker_study_at_once_in_one_line_and_it_resumes(
        tmp_path, number, group, code):
    a = sphere_trace(tmp_path / "a.tsim", 2, size=(64, 48))
    b = sphere_trace(tmp_path / "b.tsim", 2, size=(64, 48))
    out = tmp_path / "study"
    argv = ["run", "--trace", str(a), "--trace", str(b), "--techniques", "te", "--out",
            str(out), "--workers", "2"]
    returncode, stderr, took = interrupt(argv, out, 2, number, group=group)
    assert (returncode, stderr) == (code, "tilesim: interrupted\n")
    assert took < PROMPT_S
    done = subprocess.run([sys.executable, "-m", "tilesim.cli", *argv], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert (out / "results.json").is_file()


@pytest.mark.slow
def test_a_full_disk_in_a_worker_is_its_one_line_naming_the_file(tmp_path):
    """A file size limit fails a worker's first write as a full disk does (EFBIG, the same
    OSError path): the user sees that error's one line, not Dask's "Compute Failed" log."""
    a = sphere_trace(tmp_path / "a.tsim", 2)
    b = sphere_trace(tmp_path / "b.tsim", 2)
    # Rendered once unlimited first, in a process of its own: the JIT compiler's cache files
    # (in a folder named by a digest of the source as a new process reads it) are written.
    warm = subprocess.run([sys.executable, "-m", "tilesim.cli", "render", str(a), "--out",
                           str(tmp_path / "warm")], capture_output=True, text=True, timeout=300)
    assert warm.returncode == 0, warm.stderr

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    out = tmp_path / "out"
    run = subprocess.run([sys.executable, "-m", "tilesim.cli", "render", str(a), str(b),
                          "--out", str(out), "--workers", "2"], capture_output=True, text=True,
                         timeout=300, preexec_fn=limit)
    assert run.returncode == 2
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith(f"tilesim: error: {out}/")
    assert lines[0].endswith(": File too large")


def blocked_signals() -> int:
    """This process's blocked signals (a bit mask, bit n-1 for signal n), from /proc."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1], 16) for line in status if line.startswith("SigBlk"))


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc")
def test_local_workers_never_see_ctrl_c_and_this_process_still_does():
    """The terminal sends Ctrl-C to the whole process group: a worker seeing it printed its
    traceback while this process closed the cluster (it may still be starting). Starting
    multiprocessing's resource tracker unblocks SIGINT in the thread that starts it; Dask's
    event loop thread did, and the workers it started saw Ctrl-C."""
    with cluster.dask_client(2) as client:
        masks = client.run(blocked_signals)
        assert blocked_signals() & (1 << (signal.SIGINT - 1)) == 0
    assert len(masks) == 2
    for mask in masks.values():
        assert mask & (1 << (signal.SIGINT - 1))
        assert not mask & (1 << (signal.SIGTERM - 1))


@pytest.mark.slow
def test_a_worker_process_that_dies_is_one_tilesim_error(capfd):
    """Was Dask's KilledWorker, a traceback (and its nanny's warnings on stderr)."""
    import dask
    import distributed  # noqa: F401  (its configuration, which the set below would drop)

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        with pytest.raises(TilesimError, match="^a worker process died"):
            with cluster.dask_client(1) as client:
                cluster.map_in_order(client, os._exit, [(3,)], desc="die", progress=False)
    assert capfd.readouterr().err == ""


# --scheduler


def test_a_malformed_scheduler_address_is_one_line(tmp_path, capsys):
    trace = sphere_trace(tmp_path / "a.tsim", 1, size=(32, 32))
    code = main(["render", str(trace), "--out", str(tmp_path / "o"), "--scheduler",
                 "garbage!!"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == ("tilesim: error: --scheduler: 'garbage!!' is not a scheduler address "
                   "(expected e.g. tcp://host:8786): missing port number in address "
                   "'garbage!!'\n")


def serve(reply: str) -> tuple[socket.socket, str]:
    """A TCP server on a free local port that is not Dask: on each connection it answers as
    an HTTP server, closes at once, or says nothing (``reply``)."""
    server = socket.create_server(("127.0.0.1", 0))
    held = []

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            if reply == "http":
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" * 8)
            elif reply == "close":
                conn.close()
                continue
            held.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    return server, f"tcp://127.0.0.1:{server.getsockname()[1]}"


CANNOT = "cannot connect to a Dask scheduler there: "
SILENT = "no answer from a Dask scheduler within 2 s"


@pytest.mark.parametrize(("reply", "reasons"), [
    ("http", (CANNOT + "it does not answer in Dask's protocol (another kind of server?)",)),
    # the two that wait out the 2 s answer limit
    pytest.param("close", (CANNOT, SILENT), marks=pytest.mark.slow),
    pytest.param("silent", (SILENT,), marks=pytest.mark.slow)])
def test_a_server_that_is_not_a_dask_scheduler_is_named_within_bounded_time(
        tmp_path, capsys, monkeypatch, reply, reasons):
    """Was "out of memory" (the HTTP reply read as a frame of exabytes), or a wait without
    end (a server that says nothing)."""
    monkeypatch.setattr(cluster, "CONNECT_S", 2, raising=False)
    trace = sphere_trace(tmp_path / "a.tsim", 1, size=(32, 32))
    server, address = serve(reply)
    try:
        started = time.monotonic()
        code = main(["render", str(trace), "--out", str(tmp_path / "o"), "--scheduler",
                     address])
        took = time.monotonic() - started
    finally:
        server.close()
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(tuple(f"tilesim: error: --scheduler: {address}: {reason}"
                                for reason in reasons)), err
    assert err.count("\n") == 1
    assert "memory" not in err.lower()
    assert took < 10
    assert not list((tmp_path / "o").glob("frames/*.png"))


@pytest.mark.slow
def test_a_dask_scheduler_address_renders_there(tmp_path, capsys):
    from dask.distributed import LocalCluster

    trace = sphere_trace(tmp_path / "a.tsim", 2, size=(64, 48))
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      protocol="tcp://", dashboard_address=None) as local:
        assert main(["render", str(trace), "--out", str(tmp_path / "o"), "--scheduler",
                     local.scheduler_address]) == 0
    assert sorted(p.name for p in (tmp_path / "o" / "frames").glob("*.png")) == [
        "000000.png", "000001.png"]


# The race, made certain: Dask's event loop reports a connection the close cut ("Batched
# Comm Closed", as CI saw after a SIGTERM) just as the cluster's close has restored its log
# handlers. Run in a process of its own: pytest's log capture replaces Dask's stderr handler.
REPORTS_AS_IT_CLOSES = """
import logging
from dask.distributed import LocalCluster
from tilesim.studies.dask_cluster import dask_client

real_close = LocalCluster.close

def close_then_report(self, *args, **kwargs):
    done = real_close(self, *args, **kwargs)
    logging.getLogger("distributed.batched").info("Batched Comm Closed")
    return done

LocalCluster.close = close_then_report
assert logging.getLogger("distributed").handlers, "Dask logs to stderr"
with dask_client(1) as client:
    assert client.submit(sum, [1, 2]).result() == 3
"""


@pytest.mark.slow
def test_dask_logs_a_cluster_reports_as_it_closes_stay_silent():
    """Silenced before the cluster starts, not after it closes (that lost the race)."""
    done = subprocess.run([sys.executable, "-c", REPORTS_AS_IT_CLOSES], capture_output=True,
                          text=True, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
