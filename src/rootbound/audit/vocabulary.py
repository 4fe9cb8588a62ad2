"""The words ``rootbound audit`` reads tool and parameter names by (a hint only: what a call does decides).

Kept apart from the planner so that the lists can grow without burying its logic."""

from __future__ import annotations

__all__ = [
    "DANGEROUS",
    "DIR_SIBLING",
    "EDIT_VERB",
    "NOT_PATH",
    "READ_VERB",
    "SHELL_PARAM",
    "STRONG",
    "WEAK",
    "WIDEN_NOUN",
    "WIDEN_VERB",
    "WRITE_VERB",
]


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


# a path noun anywhere in a parameter's name makes it a path (unless the last word says otherwise)
STRONG = _set(
    "path paths pathname filepath filepaths filename filenames file files dir dirs dirname dirpath directory "
    "directories folder folders"
)
# a path noun only as the last word (``src``, ``to``; not ``task_id_to_resume``)
WEAK = _set(
    "uri uris root roots src source sources dst dest destination destinations target cwd from to repo "
    "repository location workspace base basedir workdir"
)
# a last word that says what else a parameter is (``fileType``, ``file_hash``, ``max_file_size``)
NOT_PATH = _set(
    "type types hash hashes sha digest id ids size sizes count counts mode format encoding kind extension ext "
    "extensions content contents text data body length limit offset depth max min number num index lines line "
    "flag enabled only visible hidden match matches"
)
# the directory a call works in: as a sibling of the probed leaf it gets W itself
DIR_SIBLING = _set("cwd dir dirs directory folder root base basedir workdir workspace repo repository")
# exec, shell, network: never called unless --allow-tool names the tool
DANGEROUS = _set(
    "exec execute shell bash sh command cmd run spawn eval script fetch http https url download upload send "
    "mail email post kill process sql install npm pip push deploy curl wget request browse navigate clone "
    "pull remote sync terminal ssh"
)
# a tool named with one of these (and no write verb) is read-only
READ_VERB = _set(
    "read list get stat info search find grep tree view cat head tail show glob ls du exists describe inspect "
    "load open check count lookup query directory metadata log diff status blame"
)
# a tool named with one of these may modify: called only with --write
WRITE_VERB = _set(
    "write edit create move rename delete remove mkdir copy append patch put update set save chmod chown "
    "touch truncate replace insert mv rm cp link symlink unzip extract unlink rmdir make new add modify apply "
    "commit checkout reset init stage unstage"
)
# a string parameter with one of these names takes a command line
SHELL_PARAM = _set("command cmd commands shell script argv command_line commandline")
# an editor changes a file that exists
EDIT_VERB = _set("edit patch replace insert append modify update prepend sed")
# a tool named with one of these and a WIDEN_NOUN moves the server's own bounds
WIDEN_VERB = _set("set add configure config allow grant change switch mount register use cd chdir push open")
# what a self-widening tool sets or adds: a directory, a root, a scope
WIDEN_NOUN = _set(
    "dir dirs directory directories root roots allowed allowlist workspace workspaces folder folders cwd "
    "working project projects scope scopes base sandbox"
)
