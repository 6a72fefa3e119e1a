"""An official MCP client (the `mcp` package from PyPI) against an AgentOS `/mcp` endpoint
(agno-rs's, or Python AgentOS's for comparison).

Usage: mcp_client.py --url http://127.0.0.1:PORT/mcp [--token JWT] [--call TOOL JSON_ARGS ...]

Initialises a session, lists the tools and makes each call in order. Prints one JSON object:
`{"tools": {name: {"required": [...], "properties": [...]}}, "calls": [{"is_error", "text",
"structured"}, ...]}`, or `{"error": "..."}` when the server refuses (for example 401 without a
token). Exit status 0 either way; the caller asserts.
"""

import argparse
import asyncio
import json
import sys


def field(obj, snake, camel, default=None):
    """mcp 2.x names fields in snake case; 1.x in camel case."""
    value = getattr(obj, snake, None)
    return value if value is not None else getattr(obj, camel, default)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--token")
    parser.add_argument("--call", nargs=2, action="append", default=[], metavar=("TOOL", "JSON_ARGS"))
    args = parser.parse_args()

    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {args.token}"} if args.token else None
    out = {}
    try:
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(args.url, http_client=http) as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    tools = await session.list_tools()
                    out["tools"] = {}
                    for t in tools.tools:
                        schema = field(t, "input_schema", "inputSchema", {}) or {}
                        out["tools"][t.name] = {
                            "required": sorted(schema.get("required", [])),
                            "properties": sorted(schema.get("properties", {})),
                        }
                    out["calls"] = []
                    for name, arguments in args.call:
                        result = await session.call_tool(name, json.loads(arguments))
                        text = "\n".join(getattr(c, "text", "") for c in result.content)
                        out["calls"].append({
                            "is_error": bool(field(result, "is_error", "isError", False)),
                            "text": text,
                            "structured": field(result, "structured_content", "structuredContent"),
                        })
    except BaseException as exc:  # noqa: BLE001 - the caller asserts on the message
        messages = []
        stack = [exc]
        while stack:
            e = stack.pop()
            inner = getattr(e, "exceptions", None)
            if inner:
                stack.extend(inner)
            else:
                messages.append(f"{type(e).__name__}: {e}")
        out["error"] = "; ".join(messages)
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    asyncio.run(main())
