"""What the server under test prints, kept out of the auditor's way and bounded.

* stderr goes through a pipe to :class:`StderrSink`, whose thread keeps the first ``keep`` bytes in a file the
  report names and only the last few KiB in memory (a server writing gigabytes costs a pipe drain, not memory);
* stdout lines that are not JSON-RPC make the SDK log a traceback each; :class:`StdoutNoise` counts them instead
  and keeps one short, escaped sample for the report.
"""

from __future__ import annotations

import logging
import os
import re
import select
import threading
from types import TracebackType
from typing import IO

from rootbound.audit.shown import shown

__all__ = ["StderrSink", "StdoutNoise", "informative_line"]

_TAIL = 4096


class StderrSink:
    """A pipe whose write end is the server's stderr; a thread drains it into ``path`` (at most ``keep`` bytes in
    all) and a small in-memory tail. One sink serves every mode of an audit (a header line marks each)."""

    def __init__(self, path: str, keep: int = 1 << 20) -> None:
        self.path = path
        self.keep = keep
        self.written = 0
        self.total = 0
        self._file = open(path, "ab")  # noqa: SIM115 - closed by close()
        self._tail = b""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._read_fd = -1
        self.writer: IO[bytes] | None = None

    def open(self, label: str) -> IO[bytes]:
        """A fresh pipe for the next server process; its write end (pass it as the child's stderr)."""
        self.close_pipe()
        self._header(f"== {label} ==\n".encode())
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        self._read_fd = read_fd
        self.writer = os.fdopen(write_fd, "wb")
        self._stop = threading.Event()
        self._tail = b""
        self._thread = threading.Thread(target=self._drain, args=(read_fd, self._stop), daemon=True)
        self._thread.start()
        return self.writer

    def _header(self, data: bytes) -> None:
        if self.written < self.keep:
            self._file.write(data)
            self._file.flush()
            self.written += len(data)

    def _drain(self, fd: int, stop: threading.Event) -> None:
        while True:
            try:
                ready, _, _ = select.select([fd], [], [], 0.2)
            except (OSError, ValueError):
                return
            if not ready:
                if stop.is_set():
                    return
                continue
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self.total += len(chunk)
                self._tail = (self._tail + chunk)[-_TAIL:]
                room = self.keep - self.written
                if room > 0:
                    self._file.write(chunk[:room])
                    self.written += min(room, len(chunk))

    def close_pipe(self) -> None:
        """Close our write end and stop the drain (a grandchild still holding the pipe cannot keep it alive)."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        alive = False
        if self._thread is not None:
            self._thread.join(timeout=1.0)  # EOF once the server is gone; else the stop flag below
            self._stop.set()
            self._thread.join(timeout=1.0)
            alive = self._thread.is_alive()
            self._thread = None
        if self._read_fd >= 0:
            if not alive:
                os.close(self._read_fd)
            self._read_fd = -1
        with self._lock:
            self._file.flush()

    def tail(self, limit: int = 600) -> str:
        """The last bytes the current server wrote, decoded, *not* escaped (the caller escapes what it shows)."""
        with self._lock:
            data = self._tail[-limit:]
        return data.decode("utf-8", "replace").strip()

    def note(self) -> str:
        if self.total <= self.written:
            return f"{self.total} bytes"
        return f"{self.total} bytes, the first {self.keep} kept"

    def close(self) -> None:
        self.close_pipe()
        self._file.close()


class StdoutNoise(logging.Filter):
    """Counts the SDK's "Failed to parse JSONRPC message" records (one per non-JSON stdout line) and drops them."""

    LOGGER = "mcp.client.stdio"

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.sample = ""

    def filter(self, record: logging.LogRecord) -> bool:
        if "Failed to parse" not in str(record.msg):
            return True
        self.count += 1
        if not self.sample and record.exc_info and record.exc_info[1] is not None:
            self.sample = _input_of(record.exc_info[1])
        return False

    def __enter__(self) -> StdoutNoise:
        logging.getLogger(self.LOGGER).addFilter(self)
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        logging.getLogger(self.LOGGER).removeFilter(self)


def _input_of(exc: BaseException) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            items = errors()
        except Exception:
            items = []
        if items and isinstance(items[0], dict) and "input" in items[0]:
            return repr(shown(items[0]["input"], 80))
    return shown(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, 80)


# lines that say where to read more, not what went wrong (npm's last line is "A complete log of this run can be
# found in: ..."): the error above them is the informative one
_BOILERPLATE = re.compile(
    r"complete log of this run|can be found in|for more info|run with --verbose|--help for|^\s*at |^\s*\^+\s*$"
    r"|^\s*(npm (ERR!|error)\s*)?$|^node:internal|^Node\.js v\d",
    re.IGNORECASE,
)
_ERROR = re.compile(
    r"\b(E404|404|ENOENT|EACCES|EPERM|E[A-Z]{3,}|[A-Za-z]*Error|error|ERR!|not found|no such|cannot|can't|unable|"
    r"failed|fatal|denied|invalid|usage:|required|missing)\b",
    re.IGNORECASE,
)

_SPECIFIC = re.compile(
    r"not found|no such|not in (this|the) registry|\b[A-Za-z]*Error\b|fatal|denied|cannot|can't|unable|"
    r"no module named|not recognized|unknown (option|argument|command)",
    re.IGNORECASE,
)

_PREFIX = re.compile(r"^(npm (error|ERR!)|yarn error|pnpm error)\s*", re.IGNORECASE)


def informative_line(text: str) -> str:
    """The one stderr line that best says why a server did not start: the last line that names an error and is
    not boilerplate (npm's ``404 Not Found`` over "A complete log ... can be found in"), else the last line that is
    not boilerplate, else the last line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    useful = [line for line in lines if not _BOILERPLATE.search(line)]
    errors = [line for line in useful if _ERROR.search(line)]
    # what went wrong, not a code or advice (npm's "npm error" prefix on every line says nothing by itself)
    specific = [line for line in errors if _SPECIFIC.search(_PREFIX.sub("", line))]
    for pick in (specific, errors, useful, lines):
        if pick:
            return pick[-1]
    return ""
