"""The scan helper's process as ``rootbound serve`` starts it: the server's Landlock rules applied read-only
first, then the helper's loop (:func:`rootbound.search.scan_helper.serve`).

Why here and not in the helper's own module: the sandbox is the server's policy (``workspace/sandbox.py``), and the
helper is spawned before the server restricts itself (a restricted process may not execute the interpreter), so it
must restrict itself: to reading the DIRs and the interpreter's own files, no write, no TCP. It holds no root: it
opens only names beneath the directory fds a chunk brings.

The DIRs come as the server's held fds (passed as they are, ``ScanHelper(holds=...)``), never as names: the wall
is built from them (Landlock's rules take an ``O_PATH`` fd), then they are closed. A DIR renamed, removed or
swapped for a link between the server's start and the helper's (an interpreter's start takes seconds under load)
changes nothing: the helper walls exactly the directories the server holds (issue 48 row 11).

Run as ``python -m rootbound.workspace.scan_process SOCKET_FD FLAG_FD (--sandbox | --no-sandbox) DIR_FD...``.
"""

from __future__ import annotations

import os
import sys

__all__ = ["helper_command", "main"]


def helper_command(*, sandbox: bool) -> tuple[str, ...]:
    """What :class:`~rootbound.search.scan_helper.ScanHelper` runs for ``serve`` (the DIRs' fds follow, its
    ``holds``)."""
    return (__name__, "--sandbox" if sandbox else "--no-sandbox")


def main(argv: list[str]) -> int:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the process group: the server decides
    # Everything the loop runs is imported before the sandbox: a restricted process may not map a shared library
    # outside the paths it may read (RE2's libstdc++), and reads nothing it does not need.
    from rootbound.search.scan_helper import serve
    from rootbound.workspace.sandbox import Sandbox, SandboxError

    sock_fd, flag_fd, mode, *held = argv
    dirs = [int(fd) for fd in held]
    sandbox = Sandbox(dirs, writable=False, listens=False, enabled=mode == "--sandbox")
    sandbox.serves = False  # no protocol stack to import first: the helper's start-up is its own modules only
    try:
        sandbox.apply()
    except SandboxError as error:  # the server scans alone: its grep is slower, never less walled
        print(f"rootbound serve: scan helper not started: cannot sandbox it: {error}", file=sys.stderr, flush=True)
        return 1
    finally:
        for fd in dirs:  # the rules hold what they were built from: the helper holds no root
            os.close(fd)
    return serve(int(sock_fd), int(flag_fd))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
