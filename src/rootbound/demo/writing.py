"""The ``make demo`` step for ``rootbound serve --writable``: a dry-run edit with its diff, the edit, and refusals.

``demo.script.run`` calls :func:`writable_session` after the read-only sessions.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp.client.stdio import StdioServerParameters

from rootbound import Root
from rootbound.demo.console import call, heading, served
from rootbound.mcp import RootsProvider

__all__ = ["writable_session"]


def _writable_params(*dirs: Path) -> StdioServerParameters:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    args = ["-m", "rootbound", "serve", "--writable", *map(str, dirs)]
    return StdioServerParameters(command=sys.executable, args=args, env=env)


async def writable_session(workspace: Path, secret: Path) -> None:
    """Edit ``app/src/main.py`` (preview, then apply), create and move inside, and show what stays refused."""
    app = workspace / "app"
    provider = RootsProvider([Root.from_path(app, "App")])
    heading("--writable: targeted edits with a diff, create, move; nothing outside")
    async with served(_writable_params(workspace), mode="legacy", **provider.client_kwargs()) as client:
        edits = [{"old_text": "    # TODO: read the config\n", "new_text": '    config = read_config("app.toml")\n'}]
        await call(client, "edit_file", path="src/main.py", edits=edits, dry_run=True)
        await call(client, "edit_file", path="src/main.py", edits=edits)
        await call(client, "write_file", path="src/config/__init__.py", content="", create_parents=True)
        await call(client, "move_file", source="src/config/__init__.py", destination="src/config/loader.py")
        heading("Refused: writing through the planted symlink, outside the roots, onto a root")
        await call(client, "edit_file", path="notes.txt", edits=[{"old_text": "key", "new_text": "mine"}])
        await call(client, "write_file", path=str(secret), content="overwritten")
        await call(client, "move_file", source="src/main.py", destination=str(app))
