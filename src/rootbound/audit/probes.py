"""The probe catalogue: for each escape class, the spellings that reach an outside canary through a sloppy check.

A probe is a path string plus the class it tests and the outside location it aims at. Probes come in three shapes,
matching what the tool's positive control proved it takes: ``file`` (an existing file: read and metadata tools),
``dir`` (a directory: listing and search tools) and ``new`` (a file to create: write tools, only with ``--write``).
Every probe is spelt in absolute form; when the control showed the tool takes paths relative to a root or
``file:`` URIs, the same probes are added in that style too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote

from rootbound.audit.trap import CLEAN, Trap
from rootbound.core.escape_table import SPELLINGS, Layout

__all__ = [
    "LOOKALIKE_LEAVES",
    "TYPED_SHAPES",
    "Probe",
    "Shape",
    "Style",
    "catalogue",
    "control_paths",
    "landed_class",
]

# file: W's text marker; image, pdf, docx, md, json: W's marker of that type (tools that take only one type), and
# any type a tool asks for, planted on demand (``trap.typed``, :mod:`rootbound.audit.filetypes`); dir: W; clean: a
# subdirectory of W without links or a FIFO; new: a file to create
Shape = str
TYPED_SHAPES: tuple[Shape, ...] = ("image", "pdf", "docx", "md", "json")
Style = Literal["absolute", "relative", "uri"]


@dataclass(frozen=True)
class Probe:
    class_id: str
    path: str
    aim: str  # the outside location this spelling lands in if the check is sloppy


# New names beside W that a normalising or prefix check takes for W itself: a write of the name itself (not a
# child) creates an entry outside every root. (class, suffix or replacement of W's last component)
LOOKALIKE_LEAVES: tuple[tuple[str, str], ...] = (
    ("normaliser", '{w}"'),  # trailing quote (stripped by a "remove surrounding quotes" normaliser)
    ("normaliser", "{w}'"),
    ("normaliser", "{w}  "),  # trailing spaces ("ws " itself is an existing directory)
    ("normaliser", "{w}\t"),  # trailing tab (trim())
    ("normaliser", "{w}.."),  # trailing dots
    ("normaliser", "Ws"),  # case
    ("normaliser", "\uff57s"),  # Unicode folding (fullwidth w)
    ("prefix-bypass", "{w}-{new}"),  # a sibling sharing W's prefix
)


def landed_class(probe: Probe, location: str) -> str:
    """The class an escape is reported as: the probe's, unless the evidence came from somewhere the probe did not
    aim. A hard-linked inode is ``hardlink``; the server's cwd (a ``file:`` URI or a ``..`` spelling taken as a
    relative path and joined to the working directory) is ``cwd-relative``."""
    if location == "hardlink":
        return "hardlink"
    if location == "cwd" and probe.aim != "cwd":
        return "cwd-relative"
    return probe.class_id


def _uri(path: str) -> str:
    return "file://" + quote(path, safe="/")


def control_paths(trap: Trap, shape: Shape, style: Style, new_name: str) -> str:
    """W's own file (``file``), W itself (``dir``) or a new file in W (``new``), spelt in ``style``."""
    w = str(trap.workspace)
    if shape in trap.typed:
        leaf = trap.typed[shape]["ws"].name
    else:
        leaf = {"file": trap.marker.name, "dir": "", "new": new_name, "clean": CLEAN}[shape]
    if style == "relative":
        return leaf or "."
    full = f"{w}/{leaf}" if leaf else w
    return _uri(full) if style == "uri" else full


def _dir_spellings(trap: Trap, style: Style, home: bool) -> list[tuple[str, str, str, str]]:
    """(class, spelling of an outside directory, joiner for a child name, location it lands in): the shared escape
    table (:mod:`rootbound.core.escape_table`) over the trap's layout, plus what only an audit can plant (the
    server's HOME, the canaries beyond the trap)."""
    layout = Layout(str(trap.base), trap.workspace.name)
    out = [(sp.class_id, sp.render(layout), sp.joiner, sp.lands_in(layout)) for sp in SPELLINGS if sp.style == style]
    if style == "absolute":
        # beyond the trap: the system temp dir, the user's home, the server's own cwd (granted without asking)
        # (the whole path of W case-folded is a look-alike of W: ``normaliser``)
        out += [
            ("normaliser" if loc == "casefold" else "outside-absolute", str(where), "/", loc)
            for loc, where in sorted(trap.extra_dirs.items())
        ]
        if home:
            out.append(("tilde", "~", "/", "home"))
    return out


def catalogue(trap: Trap, shape: Shape, style: Style, *, home: bool, new_name: str = "") -> list[Probe]:
    """Every probe of ``shape`` in ``style`` (absolute probes are always included by the caller)."""
    probes: list[Probe] = []
    for class_id, spelling, joiner, loc in _dir_spellings(trap, style, home):
        if shape in ("dir", "clean"):
            probes.append(Probe(class_id, spelling, loc))
        elif shape == "file":
            probes.append(Probe(class_id, f"{spelling}{joiner}{_quoted(trap.canaries[loc].name, spelling)}", loc))
        elif shape in trap.typed:
            typed = trap.typed[shape].get(loc)
            if typed is not None:
                probes.append(Probe(class_id, f"{spelling}{joiner}{_quoted(typed.name, spelling)}", loc))
        else:
            probes.append(Probe(class_id, f"{spelling}{joiner}{new_name}", loc))
    w = str(trap.workspace)
    far = trap.canaries["far"]
    if style == "absolute" and shape == "file":
        probes += [
            Probe("symlink-leaf", f"{w}/link-leaf-abs", "far"),
            Probe("symlink-chain", f"{w}/link-leaf-rel", "far"),
            Probe("nul-byte", f"{far.path}\x00/../../ws/{trap.marker.name}", "far"),
            Probe("cwd-relative", trap.canaries["cwd"].name, "cwd"),
            Probe("cwd-relative", f"./{trap.canaries['cwd'].name}", "cwd"),
            Probe("hardlink", f"{w}/rbt-hardlink.txt", "hardlink"),
        ]
        if home:
            probes.append(Probe("tilde", f"~/{trap.canaries['home'].name}", "home"))
    elif style == "relative" and shape == "file":
        probes += [
            Probe("symlink-leaf", "link-leaf-abs", "far"),
            Probe("symlink-chain", "link-leaf-rel", "far"),
            Probe("hardlink", "rbt-hardlink.txt", "hardlink"),
        ]
    elif style == "uri" and shape == "file":
        probes += [
            Probe("symlink-leaf", f"{_uri(w)}/link-leaf-abs", "far"),
            Probe("hardlink", f"{_uri(w)}/rbt-hardlink.txt", "hardlink"),
        ]
    elif shape == "new":
        prefix = {"absolute": f"{w}/", "relative": "", "uri": f"{_uri(w)}/"}[style]
        probes += [
            Probe("symlink-leaf", f"{prefix}link-leaf-abs", "far"),
            Probe("symlink-chain", f"{prefix}link-leaf-rel", "far"),
            Probe("symlink-dangling-write", f"{prefix}link-dangling", "far"),
            Probe("hardlink", f"{prefix}rbt-hardlink.txt", "hardlink"),
        ]
        if style == "absolute":
            probes.append(Probe("cwd-relative", new_name, "cwd"))
        if style in ("absolute", "relative"):
            base = f"{trap.base}/" if style == "absolute" else "../"
            for class_id, leaf in LOOKALIKE_LEAVES:
                name = leaf.format(w=trap.workspace.name, new=new_name or "rbt-new")
                probes.append(Probe(class_id, base + name, name))
    return probes


def _quoted(name: str, spelling: str) -> str:
    """A child name in the spelling's own encoding (URIs percent-encode it)."""
    return quote(name) if spelling.lower().startswith("file:") else name
