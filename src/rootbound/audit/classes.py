"""The escape classes ``rootbound audit`` probes for: one record per class, the single list the report and SARIF read.

A class is a *root cause* (how a confinement check goes wrong), not a payload; each class has several probes
(``probes.py``). Severity here is the class's default; the kind of evidence raises or lowers it (``severity_for``).
Add a class: append an :class:`EscapeClass` here, give it probes in ``probes.py`` (and a canary in ``trap.py`` if
it needs one), and a case in the flawed fixture server (``tests/audit/flawed_server.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["CLASSES", "SEVERITIES", "EscapeClass", "Kind", "Severity", "by_id", "severity_for"]

Severity = Literal["info", "low", "medium", "high", "critical"]
Kind = Literal["read", "list", "meta", "write", "roots", "hang"]

SEVERITIES: Final[tuple[Severity, ...]] = ("info", "low", "medium", "high", "critical")


@dataclass(frozen=True)
class EscapeClass:
    id: str
    title: str
    description: str
    cwe: str = "CWE-22"
    reference: str = ""


CLASSES: Final[tuple[EscapeClass, ...]] = (
    EscapeClass(
        "outside-absolute",
        "Absolute path outside the roots",
        "An absolute path to a file outside every root is served: there is no containment check at all.",
    ),
    EscapeClass(
        "prefix-bypass",
        "Sibling-prefix bypass",
        "Containment is a string-prefix test without a separator, so a sibling whose name extends the root's "
        "name (W-evil, W2) is inside.",
        reference="CVE-2025-53110",
    ),
    EscapeClass(
        "dot-dot",
        "Dot-dot traversal",
        "`..` components (absolute, relative, or through a subdirectory) leave the root: the check runs on the "
        "unnormalised string or before the join.",
    ),
    EscapeClass(
        "symlink-leaf",
        "Symlink leaf bypass",
        "A symlink inside the root that names a file outside it is followed: the check is lexical.",
        cwe="CWE-59",
        reference="CVE-2025-53109",
    ),
    EscapeClass(
        "symlink-parent",
        "Symlinked parent directory",
        "A path through a symlinked directory inside the root reaches files outside it.",
        cwe="CWE-59",
        reference="CVE-2025-53109",
    ),
    EscapeClass(
        "symlink-chain",
        "Chained or relative symlink",
        "A chain of links (or a relative link resolved from its own directory) leads outside; each hop but the "
        "last looks harmless.",
        cwe="CWE-59",
    ),
    EscapeClass(
        "symlink-prefix",
        "Symlink to a prefix sibling",
        "The symlink target is realpath'd but compared by string prefix, so a link to W-evil passes "
        "(the combination the CVE-2025-53109 write-up used).",
        cwe="CWE-59",
        reference="CVE-2025-53109",
    ),
    EscapeClass(
        "symlink-dangling-write",
        "Write through a dangling symlink",
        "A link to an absent outside target fails realpath with ENOENT; a 'check the parent' fallback approves "
        "it and the create follows the link out.",
        cwe="CWE-59",
    ),
    EscapeClass(
        "cwd-relative",
        "Relative path resolved against the working directory",
        "A relative path is joined to the server's working directory instead of a root.",
    ),
    EscapeClass(
        "tilde",
        "Tilde expansion of untrusted input",
        "`~/...` in a request is expanded to the server's HOME, outside the roots.",
    ),
    EscapeClass(
        "percent-encoding",
        "Percent-encoding decoded after the check",
        "`%2e%2e`, `%2F` or double encoding is decoded after (or more than once around) the containment check.",
        cwe="CWE-177",
    ),
    EscapeClass(
        "file-uri",
        "Malformed or hosted file: URI",
        "A `file:` URI with a host, a single slash or `..` in its path is parsed differently by the check and "
        "the open.",
    ),
    EscapeClass(
        "normaliser",
        "Normaliser differential",
        "The check compares a normalised name (Unicode NFKC look-alikes, case folding, trailing dots and "
        "spaces stripped) while the open uses the raw name, so a look-alike sibling is inside.",
        cwe="CWE-178",
    ),
    EscapeClass(
        "backslash",
        "Backslash separators",
        "The check treats `\\` as an ordinary character and the open as a separator (or the other way round).",
    ),
    EscapeClass(
        "nul-byte",
        "NUL byte truncation",
        "A NUL byte splits the path: the check sees one string, the open another.",
        cwe="CWE-158",
    ),
    EscapeClass(
        "hardlink",
        "Hard link to an outside file (info)",
        "A hard link inside the root shares its inode with a file outside. No path check can see it, and "
        "creating one needs write access to the root; reported as info so operators know the limit.",
        cwe="CWE-62",
    ),
    EscapeClass(
        "fifo-block",
        "FIFO blocks the server",
        "Reading a FIFO inside the root blocks the call (and, in many runtimes, a worker thread) until a writer "
        "appears. A denial of service, not an escape: reported as info.",
        cwe="CWE-400",
    ),
    EscapeClass(
        "stale-roots",
        "Stale roots after list_changed",
        "After the client removes a root and sends notifications/roots/list_changed (or answers the next request "
        "with fewer roots), the server still serves files under the removed root.",
        cwe="CWE-613",
    ),
    EscapeClass(
        "empty-roots",
        "Withdrawn roots still served",
        "After the client withdraws every root (an empty roots/list answer), the server still serves the "
        "workspace: an empty set read as 'no restriction', or the last roots kept.",
        cwe="CWE-613",
    ),
    EscapeClass(
        "self-widening",
        "A tool widens the server's own bounds",
        "A tool (configure(allowed_roots=...), set_working_dir, add_directory) moves the server's allowed set to "
        "any directory a caller names; after calling it with an outside directory, the server reads there.",
        cwe="CWE-284",
    ),
    EscapeClass(
        "ignores-roots",
        "Ignores the client's roots",
        "The server was started without a directory and given roots, but never asked for them.",
        cwe="CWE-284",
    ),
)

_BY_ID: Final = {cls.id: cls for cls in CLASSES}


def by_id(class_id: str) -> EscapeClass:
    return _BY_ID[class_id]


_KIND_SEVERITY: Final[dict[Kind, Severity]] = {
    "write": "critical",
    "read": "high",
    "list": "medium",
    "meta": "low",
    "roots": "high",
    "hang": "low",
}


def severity_for(class_id: str, kind: Kind) -> Severity:
    """A write outside the roots is critical, a read high, a listing medium, metadata low; hard links are info."""
    if class_id in ("hardlink", "fifo-block"):
        return "info"
    if class_id == "ignores-roots":
        return "medium"
    return _KIND_SEVERITY[kind]
