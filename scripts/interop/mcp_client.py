"""An official MCP client (the `mcp` package from PyPI) against agno-rs's `/mcp` endpoint.

Usage: mcp_client.py --url http://127.0.0.1:PORT/mcp [--token JWT] [--tool AGENT --message TEXT
       [--session-id ID]]

Initialises a session, lists the tools and, with --tool, calls one. Prints one JSON object:
`{"tools": [...names], "result": {"is_error", "text", "structured"}}`, or `{"error": "..."}` when the
server refuses (for example 401 without a token). Exit status 0 either way; the caller asserts.
"""

import argparse
import asyncio
import json
import sys


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--token")
    parser.add_argument("--tool")
    parser.add_argument("--message", default="")
    parser.add_argument("--session-id")
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
                    out["tools"] = sorted(t.name for t in tools.tools)
                    if args.tool:
                        arguments = {"message": args.message}
                        if args.session_id:
                            arguments["session_id"] = args.session_id
                        result = await session.call_tool(args.tool, arguments)
                        text = "\n".join(getattr(c, "text", "") for c in result.content)
                        # mcp 2.x names fields in snake case; 1.x in camel case.
                        is_error = getattr(result, "is_error", None)
                        if is_error is None:
                            is_error = getattr(result, "isError", False)
                        structured = getattr(result, "structured_content", None)
                        if structured is None:
                            structured = getattr(result, "structuredContent", None)
                        out["result"] = {"is_error": bool(is_error), "text": text, "structured": structured}
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
