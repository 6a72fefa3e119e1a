"""A reverse proxy that lets the A2A TCK (`a2aproject/a2a-tck`, branch `0.3.x`) test one
component of `agno serve`: the TCK reads the agent card only at the server root
(`/.well-known/agent-card.json`), while AgentOS serves one card per component under `/a2a`.

The proxy answers the root card with the component's card (its URLs pointed at the proxy) and
forwards everything else, streams included, to the server; `--header 'Name: value'` (repeatable)
is added to every forwarded request (the TCK has no auth options: pass a bearer token here).

Run it with the TCK's venv (it needs aiohttp), then point the TCK at the proxied endpoint:

    python a2a_card_proxy.py --card http://127.0.0.1:7777/a2a/agents/ID/.well-known/agent-card.json \
        --listen 127.0.0.1:9100 &
    cd a2a-tck && python run_tck.py --sut-url http://127.0.0.1:9100/a2a/agents/ID/v1/message:stream \
        --category mandatory --transports jsonrpc
"""

import argparse
import urllib.parse

from aiohttp import ClientSession, ClientTimeout, web

HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
       "transfer-encoding", "upgrade", "content-length", "host", "content-encoding"}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--card", required=True, help="upstream agent card URL")
    p.add_argument("--listen", default="127.0.0.1:9100")
    p.add_argument("--header", action="append", default=[], help="'Name: value' added upstream")
    a = p.parse_args()

    up = urllib.parse.urlparse(a.card)
    upstream = f"{up.scheme}://{up.netloc}"
    host, port = a.listen.rsplit(":", 1)
    mine = f"http://{a.listen}"
    extra = dict(h.split(":", 1) for h in a.header)
    extra = {k.strip(): v.strip() for k, v in extra.items()}
    session: dict = {}

    async def on_startup(app):
        session["s"] = ClientSession(timeout=ClientTimeout(total=None), auto_decompress=False)

    async def on_cleanup(app):
        await session["s"].close()

    async def card(request: web.Request) -> web.Response:
        async with session["s"].get(a.card, headers=extra) as r:
            if r.status != 200:
                return web.Response(status=r.status, body=await r.read())
            body = await r.json(content_type=None)

        def rewrite(u):
            return mine + u[len(upstream):] if isinstance(u, str) and u.startswith(upstream) else u

        body["url"] = rewrite(body.get("url"))
        for itf in (body.get("additionalInterfaces") or []) + (body.get("supportedInterfaces") or []):
            if isinstance(itf, dict):
                itf["url"] = rewrite(itf.get("url"))
        return web.json_response(body)

    async def forward(request: web.Request) -> web.StreamResponse:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP}
        headers["Host"] = up.netloc  # the upstream builds absolute URLs from Host
        headers.update(extra)
        data = await request.read()
        async with session["s"].request(request.method, upstream + request.rel_url.raw_path_qs,
                                        headers=headers, data=data, allow_redirects=False) as r:
            resp = web.StreamResponse(status=r.status, reason=r.reason)
            for k, v in r.headers.items():
                if k.lower() not in HOP:
                    resp.headers[k] = v
            await resp.prepare(request)
            async for chunk in r.content.iter_any():
                await resp.write(chunk)
            await resp.write_eof()
            return resp

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    app.router.add_get("/.well-known/agent-card.json", card)
    app.router.add_get("/.well-known/agent.json", card)
    app.router.add_route("*", "/{tail:.*}", forward)
    print(f"proxy {mine} -> {upstream}; root card <- {a.card}", flush=True)
    web.run_app(app, host=host, port=int(port), print=None)


if __name__ == "__main__":
    main()
