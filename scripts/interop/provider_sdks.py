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


def aws_bedrock(base):
    """boto3 signs every call with SigV4 (the test kit's credentials); the fake server checks it."""
    import boto3

    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=base,
        aws_access_key_id="AKIDFAKEBEDROCK",
        aws_secret_access_key="fake/Secret+Key/For/The/Test/Kit",
        aws_session_token="session-token",
    )
    model = "anthropic.claude-sonnet-4-5-20250929-v1:0"
    plain = client.converse(
        modelId=model, system=[{"text": "Be brief."}], messages=[{"role": "user", "content": [{"text": "Hi"}]}]
    )
    streamed, stop = "", None
    response = client.converse_stream(modelId=model, messages=[{"role": "user", "content": [{"text": "Stream please"}]}])
    for event in response["stream"]:
        if "contentBlockDelta" in event:
            streamed += event["contentBlockDelta"]["delta"].get("text", "")
        if "messageStop" in event:
            stop = event["messageStop"]["stopReason"]
    tool = client.converse(
        modelId=model,
        messages=[{"role": "user", "content": [{"text": "Weather in Oslo?"}]}],
        toolConfig={"tools": [{"toolSpec": {"name": "get_weather", "description": "Weather.", "inputSchema": {"json": TOOL_SCHEMA}}}]},
    )
    call = next(b["toolUse"] for b in tool["output"]["message"]["content"] if "toolUse" in b)
    return {
        "plain": plain["output"]["message"]["content"][0]["text"],
        "plain_usage": [plain["usage"]["inputTokens"], plain["usage"]["outputTokens"]],
        "streamed": streamed,
        "streamed_stop": stop,
        "tool": {"name": call["name"], "input": call["input"], "stop": tool["stopReason"]},
    }


def chat_completions(client, model):
    plain = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Hi"}])
    stream = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Stream please"}], stream=True
    )
    streamed, stop = "", None
    for chunk in stream:
        for choice in chunk.choices:
            streamed += choice.delta.content or ""
            stop = choice.finish_reason or stop
    tool = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "Weather in Oslo?"}],
        tools=[{"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": TOOL_SCHEMA}}],
    )
    call = tool.choices[0].message.tool_calls[0]
    return {
        "plain": plain.choices[0].message.content,
        "plain_usage": [plain.usage.prompt_tokens, plain.usage.completion_tokens],
        "streamed": streamed,
        "streamed_stop": stop,
        "tool": {"name": call.function.name, "input": json.loads(call.function.arguments), "stop": tool.choices[0].finish_reason},
    }


def azure_openai(base):
    import openai as sdk

    client = sdk.AzureOpenAI(azure_endpoint=base, api_key="az-test", api_version="2024-10-21", max_retries=0)
    return chat_completions(client, "my-deployment")


def openai_chat(base):
    import openai as sdk

    return chat_completions(sdk.OpenAI(base_url=base, api_key="sk-test", max_retries=0), "gpt-4o-mini")


PROVIDERS = {"aws-bedrock": aws_bedrock, "azure-openai": azure_openai, "openai-chat": openai_chat, "anthropic": anthropic, "google": google, "ollama": ollama, "openai-responses": openai_responses}

if __name__ == "__main__":
    print(json.dumps(PROVIDERS[sys.argv[1]](sys.argv[2])))
