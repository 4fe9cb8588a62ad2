"""The workspace as MCP resources (issue 49): every served file and directory is a ``file:`` resource, confined
exactly as the tools are. ``addresses`` (URIs, windows, cursors, the one not-found error), ``listings``
(``resources/list``, ``resources/directory/read``, completion), ``contents`` (``resources/read`` with content
identity), ``handlers`` (the SDK wiring). See ``docs/resources.md``.
"""
