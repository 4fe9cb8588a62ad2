"""The README's client: roots from a RootsProvider, changed mid-session.

``python examples/readme_client.py URL PROJECT_DIR DOCS_DIR`` against ``rootbound serve DIR --http HOST:PORT``
(both directories inside DIR). ``tests/docs/test_readme_runs.py`` checks that this file holds the README's block
and runs the block as written, in both protocol eras.
"""

import sys

import anyio

from mcp import Client
from rootbound.mcp import RootsProvider


async def main(server: str, project: str, docs: str) -> None:
    provider = RootsProvider([project])  # paths, file: URIs or rootbound.Root
    async with Client(server, **provider.client_kwargs()) as client:
        print((await client.call_tool("list_roots", {})).structured_content)
        await provider.add(docs)  # reaches every live session of this provider
        await provider.remove(project)
        await provider.flush()  # handshake-era servers: list_changed is batched (50 ms); flush sends it now
        print((await client.call_tool("list_roots", {})).structured_content)


if __name__ == "__main__":  # python client.py http://127.0.0.1:8765/mcp ~/projects/app ~/projects/docs
    server, project, docs = sys.argv[1:4]
    anyio.run(main, server, project, docs)
