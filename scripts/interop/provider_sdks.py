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


def google(base):
    from google import genai
    from google.genai import types

    client = genai.Client(api_key="gm-test", http_options=types.HttpOptions(base_url=base))
    plain = client.models.generate_content(
        model="gemini-2.5-flash", contents="Hi", config=types.GenerateContentConfig(system_instruction="Be brief.")
    )
    streamed = "".join(chunk.text or "" for chunk in client.models.generate_content_stream(model="gemini-2.5-flash", contents="Stream please"))
    declaration = types.FunctionDeclaration(name="get_weather", description="Weather.", parameters_json_schema=TOOL_SCHEMA)
    tool = client.models.generate_content(
        model="gemini-2.5-flash",
        contents="Weather in Oslo?",
        config=types.GenerateContentConfig(
            tools=[types.Tool(function_declarations=[declaration])],
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        ),
    )
    call = tool.function_calls[0]
    return {
        "plain": plain.text,
        "plain_usage": [plain.usage_metadata.prompt_token_count, plain.usage_metadata.candidates_token_count],
        "streamed": streamed,
        "streamed_stop": "end_turn",
        "tool": {"name": call.name, "input": call.args, "stop": str(tool.candidates[0].finish_reason.value)},
    }


def ollama(base):
    import ollama as sdk

    client = sdk.Client(host=base)
    plain = client.chat(model="llama3.2", messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])
    chunks = list(client.chat(model="llama3.2", messages=[{"role": "user", "content": "Stream please"}], stream=True))
    tool = client.chat(
        model="llama3.2",
        messages=[{"role": "user", "content": "Weather in Oslo?"}],
        tools=[{"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": TOOL_SCHEMA}}],
    )
    call = tool.message.tool_calls[0]
    return {
        "plain": plain.message.content,
        "plain_usage": [plain.prompt_eval_count, plain.eval_count],
        "streamed": "".join(c.message.content or "" for c in chunks),
        "streamed_stop": chunks[-1].done_reason,
        "tool": {"name": call.function.name, "input": dict(call.function.arguments), "stop": tool.done_reason},
    }


def openai_responses(base):
    import openai as sdk

    client = sdk.OpenAI(base_url=base, api_key="sk-test", max_retries=0)
    plain = client.responses.create(model="gpt-5-mini", instructions="Be brief.", input="Hi")
    streamed, stop = "", None
    for event in client.responses.create(model="gpt-5-mini", input="Stream please", stream=True):
        if event.type == "response.output_text.delta":
            streamed += event.delta
        if event.type == "response.completed":
            stop = event.response.status
    tool = client.responses.create(
        model="gpt-5-mini",
        input="Weather in Oslo?",
        tools=[{"type": "function", "name": "get_weather", "description": "Weather.", "parameters": TOOL_SCHEMA, "strict": False}],
    )
    call = next(item for item in tool.output if item.type == "function_call")
    return {
        "plain": plain.output_text,
        "plain_usage": [plain.usage.input_tokens, plain.usage.output_tokens],
        "streamed": streamed,
        "streamed_stop": stop,
        "tool": {"name": call.name, "input": json.loads(call.arguments), "stop": tool.status},
    }


PROVIDERS = {"anthropic": anthropic, "google": google, "ollama": ollama, "openai-responses": openai_responses}

if __name__ == "__main__":
    print(json.dumps(PROVIDERS[sys.argv[1]](sys.argv[2])))
