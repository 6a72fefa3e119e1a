"""Official provider SDKs (from PyPI) against the fake provider server of agno-rs's test kit:
the check that the fake server's wire formats are the providers' own, not only our reading.

    python scripts/interop/provider_sdks.py PROVIDER BASE_URL

Each provider makes a plain call, a streamed call and a tool call with the SDK, and prints one
JSON object of what the SDK parsed. The caller scripts the fake server's replies (in order:
"plain", "streamed", a tool call of `get_weather`) and asserts on the output.
"""

import json
import sys

TOOL_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def anthropic(base):
    import anthropic as sdk

    client = sdk.Anthropic(base_url=base, api_key="sk-ant-test", max_retries=0)
    plain = client.messages.create(
        model="claude-sonnet-4-5", max_tokens=64, system="Be brief.", messages=[{"role": "user", "content": "Hi"}]
    )
    with client.messages.stream(
        model="claude-sonnet-4-5", max_tokens=64, messages=[{"role": "user", "content": "Stream please"}]
    ) as stream:
        streamed = "".join(stream.text_stream)
        final = stream.get_final_message()
    tool = client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=64,
        tools=[{"name": "get_weather", "description": "Weather.", "input_schema": TOOL_SCHEMA}],
        messages=[{"role": "user", "content": "Weather in Oslo?"}],
    )
    call = next(b for b in tool.content if b.type == "tool_use")
    return {
        "plain": plain.content[0].text,
        "plain_usage": [plain.usage.input_tokens, plain.usage.output_tokens],
        "streamed": streamed,
        "streamed_stop": final.stop_reason,
        "tool": {"name": call.name, "input": call.input, "stop": tool.stop_reason},
    }


PROVIDERS = {"anthropic": anthropic}

if __name__ == "__main__":
    print(json.dumps(PROVIDERS[sys.argv[1]](sys.argv[2])))
