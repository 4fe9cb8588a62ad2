"""One table of escape spellings: the ways a sloppy containment check is walked out of a root, as templates over
a small fixture layout, so that the library's own escape tests, ``rootbound serve``'s wire tests and
``rootbound audit``'s probes use the same classes and the same spellings (Go's ``os.Root`` tests do this). A new
class or spelling is added here once.

The layout every consumer plants (``P`` is the root's parent, ``R = P/<name>`` the root)::

    P/far/                       an outside directory (holding the consumer's secret)
    P/<name>-evil/               a sibling sharing the root's name as a prefix
    P/<name>.  "P/<name> "  P/<NAME>  P/<fullwidth name>     look-alike siblings (trailing dot, space, case, NFKC)
    R/sub/                       a subdirectory
    R/link-dir -> P/far          R/link-chain-a -> link-chain-b -> P/far        R/sub/link-up -> ../../far
    R/link-prefix -> P/<name>-evil

A :class:`Spelling` renders to a path string naming an outside *directory* (``render``); a consumer appends a
child name with the spelling's ``joiner`` to name a file in it. Pure data and string formatting: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal
from urllib.parse import quote

__all__ = [
    "LINKS",
    "OUT",
    "SPELLINGS",
    "Layout",
    "Spelling",
    "lookalikes",
    "prefix_sibling",
]

Style = Literal["absolute", "relative", "uri"]
OUT: Final = "far"  # the outside directory beside the root


def prefix_sibling(name: str) -> str:
    return f"{name}-evil"


def lookalikes(name: str) -> tuple[str, ...]:
    """Siblings a normalising check takes for the root: trailing dot, trailing space, case, fullwidth (NFKC)."""
    fullwidth = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in name)
    return (f"{name}.", f"{name} ", name.upper() if name.upper() != name else name.lower(), fullwidth)


# (link inside the root, its target with {parent}/{out}/{sibling} placeholders, whether it names a directory)
LINKS: Final[tuple[tuple[str, str, bool], ...]] = (
    ("link-dir", "{parent}/{out}", True),
    ("link-prefix", "{parent}/{sibling}", True),
    ("link-chain-a", "link-chain-b", True),
    ("link-chain-b", "{parent}/{out}", True),
    ("sub/link-up", "../../{out}", True),
)


@dataclass(frozen=True)
class Layout:
    """Where one consumer's fixture lives: the root's parent and the root's name."""

    parent: str
    name: str

    @property
    def root(self) -> str:
        return f"{self.parent}/{self.name}"

    def values(self) -> dict[str, str]:
        dot, space, case, fullwidth = lookalikes(self.name)
        values = {
            "root": self.root,
            "parent": self.parent,
            "out": OUT,
            "sibling": prefix_sibling(self.name),
            "dot": dot,
            "space": space,
            "case": case,
            "fullwidth": fullwidth,
        }
        quoted = {f"q{k}": quote(v, safe="/") for k, v in values.items()}
        return {**values, **quoted}


@dataclass(frozen=True)
class Spelling:
    class_id: str  # the escape class (the audit's class ids)
    template: str  # names an outside directory; placeholders from Layout.values()
    style: Style
    joiner: str = "/"  # how a child name is appended
    lands: str = "out"  # where a sloppy check lands: "out", "sibling", or a look-alike ("dot", "space", ...)

    def render(self, layout: Layout) -> str:
        return self.template.format(**layout.values())

    def lands_in(self, layout: Layout) -> str:
        """The directory name (under the parent) this spelling reaches when the check is sloppy."""
        return layout.values()[self.lands]


def _abs(class_id: str, template: str, joiner: str = "/", lands: str = "out") -> Spelling:
    return Spelling(class_id, template, "absolute", joiner, lands)


def _rel(class_id: str, template: str, joiner: str = "/", lands: str = "out") -> Spelling:
    return Spelling(class_id, template, "relative", joiner, lands)


def _uri(class_id: str, template: str, joiner: str = "/", lands: str = "out") -> Spelling:
    return Spelling(class_id, template, "uri", joiner, lands)


_LOOKS = ("dot", "space", "case", "fullwidth")

SPELLINGS: Final[tuple[Spelling, ...]] = (
    _abs("outside-absolute", "{parent}/{out}"),
    _abs("prefix-bypass", "{parent}/{sibling}", lands="sibling"),
    _abs("dot-dot", "{root}/../{out}"),
    _abs("dot-dot", "{root}/sub/../../{out}"),
    _abs("dot-dot", "{root}/sub/../../{sibling}", lands="sibling"),
    _abs("symlink-parent", "{root}/link-dir"),
    _abs("symlink-chain", "{root}/link-chain-a"),
    _abs("symlink-chain", "{root}/sub/link-up"),
    _abs("symlink-prefix", "{root}/link-prefix", lands="sibling"),
    _abs("percent-encoding", "{root}/%2e%2e/{out}"),
    _abs("percent-encoding", "{root}/..%2f{out}", joiner="%2f"),
    _abs("percent-encoding", "{root}/%252e%252e/{out}"),
    _abs("backslash", "{root}/sub\\..\\..\\{out}", joiner="\\"),
    _abs("normaliser", "{root}/\uff0e\uff0e/{out}"),
    *[_abs("normaliser", "{parent}/{" + look + "}", lands=look) for look in _LOOKS],
    _abs("file-uri", "file://localhost{qroot}/../{out}"),
    _abs("file-uri", "file:{qroot}/../{out}"),
    _abs("file-uri", "file://rootbound-audit.invalid{qparent}/{out}"),
    _abs("file-uri", "file://{qroot}/..%2F{out}"),
    _abs("outside-absolute", "file://{qparent}/{out}"),
    _rel("dot-dot", "../{out}"),
    _rel("dot-dot", "sub/../../{out}"),
    _rel("prefix-bypass", "../{sibling}", lands="sibling"),
    _rel("symlink-parent", "link-dir"),
    _rel("symlink-chain", "link-chain-a"),
    _rel("symlink-chain", "sub/link-up"),
    _rel("symlink-prefix", "link-prefix", lands="sibling"),
    _rel("percent-encoding", "%2e%2e/{out}"),
    _rel("percent-encoding", "..%2f{out}", joiner="%2f"),
    _rel("backslash", "..\\{out}", joiner="\\"),
    _rel("normaliser", "\uff0e\uff0e/{out}"),
    *[_rel("normaliser", "../{" + look + "}", lands=look) for look in _LOOKS],
    _uri("dot-dot", "file://{qroot}/../{out}"),
    _uri("prefix-bypass", "file://{qparent}/{qsibling}", lands="sibling"),
    _uri("symlink-parent", "file://{qroot}/link-dir"),
    _uri("symlink-chain", "file://{qroot}/link-chain-a"),
    _uri("symlink-prefix", "file://{qroot}/link-prefix", lands="sibling"),
    _uri("percent-encoding", "file://{qroot}/%2e%2e/{out}"),
    _uri("percent-encoding", "file://{qroot}/..%2F{out}", joiner="%2F"),
    _uri("percent-encoding", "file://{qroot}/%252e%252e/{out}"),
    *[_uri("normaliser", "file://{qparent}/{q" + look + "}", lands=look) for look in _LOOKS],
)
