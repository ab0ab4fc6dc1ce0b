"""`multi_processing` workers forked from a process that has imported what they need.

A `multi_processing` worker of the in-process runner is a new Python process that imports
Beam's SDK harness before it takes any work: ~1.3 s of CPU (Beam imports all of itself,
pandas included), paid by every worker of every run. The command-line jobs start a zygote
instead (`start`): a child forked right after the command's own imports, while the command
has no thread but jemalloc's and has opened no gRPC channel. Each worker is then a small
client (`CLIENT`: Python without `site`, no imports beyond the standard library's) that hands
its environment, arguments and standard streams to the zygote over a Unix socket (an
abstract name, answered for processes of this user only); the zygote
forks a worker from itself, which runs Beam's SDK harness with them, as
`subprocess_worker` does, and sends its exit status back; the client exits with it. A worker
whose client dies (the runner kills it) exits too, and the zygote dies with the command.
Where no zygote can start (not Linux, other threads running, no Unix sockets), or a client
finds none, the worker is started as `subprocess_worker.COMMAND` is.
"""

from __future__ import annotations

import atexit
import ctypes
import json
import logging
import os
import secrets
import shlex
import signal
import socket
import struct
import sys
import threading
import time

__all__ = ["CLIENT", "ENV", "forked_worker", "start", "zygote_pid"]

_LOGGER = logging.getLogger(__name__)

_FORKED = False  # this process is a worker a zygote forked
_PID: int | None = None  # this process's zygote

#: The variable that names the zygote's socket, `@` for Linux's abstract namespace (set in
#: the command's environment, which the runner gives its workers).
ENV = "BEAM_TENSORIZE_WORKER_ZYGOTE"

_CLIENT_CODE = r"""
import json, os, socket, struct, sys
args = sys.argv[1:]
try:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect("\0" + os.environ["BEAM_TENSORIZE_WORKER_ZYGOTE"][1:])
except (KeyError, OSError):
    os.execv(sys.executable, [sys.executable, "-m", "beam_tensorize.runners.subprocess_worker", *args])
request = json.dumps({"env": dict(os.environ), "argv": args, "cwd": os.getcwd()}).encode()
socket.send_fds(conn, [struct.pack("!I", len(request)) + request], [0, 1, 2])
status = b""
while len(status) < 4:
    part = conn.recv(4 - len(status))
    if not part:
        sys.exit(1)
    status += part
sys.exit(struct.unpack("!i", status)[0])
"""

#: The command line of a worker that a zygote forks (where none answers: `subprocess_worker`).
CLIENT = f"exec {shlex.quote(sys.executable)} -S -c {shlex.quote(_CLIENT_CODE)}"

_PR_SET_PDEATHSIG = 1


def start() -> bool:
    """Fork this process's worker zygote and name its socket in `ENV`; False (nothing started)
    where it cannot be done safely. Call it before the job opens any gRPC channel or starts a
    thread; the zygote is killed when this process exits."""
    if not sys.platform.startswith("linux") or os.environ.get(ENV) or threading.active_count() != 1:
        return False
    try:
        others = _other_threads()
        if others:
            _LOGGER.info("no worker zygote: threads %s run in this process", others)
            return False
        name = f"@beam_tensorize-workers-{os.getpid()}-{secrets.token_hex(8)}"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind("\0" + name[1:])  # Linux's abstract names: no file, no length limit to mind
        listener.listen(64)
    except OSError as error:
        _LOGGER.info("no worker zygote: %s", error)
        return False
    parent = os.getpid()
    for stream in (sys.stdout, sys.stderr):  # nothing of the command's is written twice
        stream.flush()
    pid = os.fork()
    if pid == 0:  # the zygote
        code = 0
        try:
            _serve(listener, parent)
        except BaseException:  # noqa: BLE001 - nothing of the command's may run here
            code = 1
        finally:
            os._exit(code)
    global _PID
    listener.close()
    _PID = pid
    os.environ[ENV] = name
    atexit.register(_stop, pid)
    _LOGGER.info("multi_processing workers fork from zygote process %d (%s)", pid, name)
    return True


def _other_threads() -> list[str]:
    """The names of this process's other threads but jemalloc's background thread, which
    forks safely. A thread still named as the process (it may not have named itself yet) is
    looked at again for up to ~0.1 s."""
    me = threading.get_native_id()
    for _ in range(10):
        names = {}
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/comm") as f:
                names[int(task)] = f.read().strip()
        own = names.pop(me)
        others = [n for n in names.values() if n != "jemalloc_bg_thd"]
        if not others or any(n != own for n in others):
            return others
        time.sleep(0.01)
    return others


def zygote_pid() -> int | None:
    """The process id of this process's zygote, if `start` started one."""
    return _PID


def forked_worker() -> bool:
    """Whether this process is a worker that a zygote forked."""
    return _FORKED


def _stop(pid: int) -> None:
    os.environ.pop(ENV, None)
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except OSError:
        pass


def _die_with(parent: int) -> None:
    """Have the kernel kill this process when `parent` exits."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it exited before the call
        os._exit(0)


def _serve(listener: socket.socket, parent: int) -> None:
    _die_with(parent)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the workers
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the command handles Ctrl-C; this dies with it
    uid = os.getuid()
    while True:
        conn, _ = listener.accept()
        try:
            _, peer, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
            if peer != uid:  # an abstract name is open to every user: only ours may ask
                raise ValueError(f"a process of user {peer} asked")
            request, fds = _receive(conn)
        except (OSError, ValueError):
            conn.close()
            continue
        if os.fork() == 0:  # a worker
            code = 1
            try:
                listener.close()
                code = _work(conn, request, fds)
            finally:
                os._exit(code)
        conn.close()
        for fd in fds:
            os.close(fd)


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    """A client's request (environment, arguments, working folder) and its 3 standard streams."""
    head, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    try:
        if len(fds) != 3 or len(head) < 4:
            raise ValueError("incomplete request")
        (size,) = struct.unpack("!I", head[:4])
        data = head[4:]
        while len(data) < size:
            part = conn.recv(size - len(data))
            if not part:
                raise ValueError("incomplete request")
            data += part
        return json.loads(data), fds
    except (OSError, ValueError):
        for fd in fds:
            os.close(fd)
        raise


def _work(conn: socket.socket, request: dict, fds: list[int]) -> int:
    """Run Beam's SDK harness as the client's process would (its environment, arguments,
    folder and standard streams); its exit status goes back to the client."""
    global _FORKED
    _FORKED = True
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    root = logging.getLogger()  # the command's handlers (its log file, its console filter) stay its own
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.argv = [sys.argv[0], *request["argv"]]
    threading.Thread(target=_exit_without_client, args=(conn,), name="worker-client", daemon=True).start()
    code = 0
    try:
        from beam_tensorize.runners.subprocess_worker import main

        main(sys.argv)
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except BaseException:  # noqa: BLE001 - reported as the exit status, as a process would
        import traceback

        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    try:
        conn.sendall(struct.pack("!i", code))
    except OSError:
        pass
    return code


def _exit_without_client(conn: socket.socket) -> None:
    """Exit when the client goes away (it sends nothing more: any read that returns ends)."""
    try:
        conn.recv(1)
    except OSError:
        pass
    os._exit(1)
