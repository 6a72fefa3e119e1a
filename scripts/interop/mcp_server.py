"""An MCP server written with the official Python SDK (PyPI `mcp` 2.x), for agno-mcp's tests.

    python scripts/interop/mcp_server.py PORT [streamable-http|sse]

Tools: `add(a, b)`, `slow(seconds)` (answers "done" after sleeping), `whoami()` (the
`x-agno-user` header of the request that called it) and `calls()` (how many tool calls this
process has served, so a test can tell a restarted server from the old one).
"""

import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("agno-rs-python-test")
served = 0


def count() -> None:
    global served
    served += 1


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    count()
    return str(a + b)


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    count()
    await anyio.sleep(seconds)
    return "done"


@server.tool()
def whoami(ctx: Context) -> str:
    """The caller's x-agno-user header."""
    count()
    request = ctx.request_context.request
    headers = getattr(request, "headers", None) or {}
    return headers.get("x-agno-user", "nobody")


@server.tool()
def calls() -> str:
    """Tool calls served by this process, this one included."""
    count()
    return str(served)


if __name__ == "__main__":
    port = int(sys.argv[1])
    transport = sys.argv[2] if len(sys.argv) > 2 else "streamable-http"
    server.settings.log_level = "WARNING"
    server.run(transport, host="127.0.0.1", port=port)
