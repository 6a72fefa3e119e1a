"""Google's Toolbox SDK (PyPI `toolbox-core`) against a Toolbox server, for agno-mcp's tests:
the check that the test kit's Toolbox server speaks what the official client speaks.

    python scripts/interop/toolbox_client.py URL

Loads the `hotels` toolset with an auth token getter and a bound parameter, calls two tools and
prints a JSON object: the tool names, each tool's parameters as the SDK exposes them, and the
results.
"""

import asyncio
import inspect
import json
import sys

from toolbox_core import ToolboxClient


async def main(url: str) -> None:
    async with ToolboxClient(url) as client:
        tools = await client.load_toolset(
            "hotels",
            auth_token_getters={"my-google-auth": lambda: "test-id-token:sdk@example.com"},
            bound_params={"region": "eu"},
        )
        by_name = {tool._name: tool for tool in tools}
        out = {
            "tools": sorted(by_name),
            "parameters": {name: sorted(inspect.signature(tool).parameters) for name, tool in by_name.items()},
            "search": await by_name["search-hotels-by-name"](name="Basel"),
            "book": await by_name["book-hotel"](hotel_id=7),
        }
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
