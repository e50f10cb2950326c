"""MCP (Model Context Protocol): servers' tools in xclaw's registry, and xclaw's tools served.

- ``settings``: server definitions (user ``mcp.servers``, project ``.mcp.json``).
- ``trust``: the user's consent to a project's servers.
- ``connection``: one server, started on first use and always closed.
- ``tools``: server tools as ``mcp.<server>.<tool>`` under xclaw's policy.
- ``runtime``: ``mcp_tools(root, mcp_section)`` for a run; ``describe_servers`` for ``list``.
- ``serve``: ``xclaw mcp serve``, the coding tools over stdio, as ``fs_read`` (or ``fs.read``).
"""
