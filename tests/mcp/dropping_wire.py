"""The reference driver with an MCP endpoint that ends the client's session once.

Run as ``python dropping_wire.py``: it serves the reference host over driver protocol v1, as
``python -m reference_impl.driver`` does, but the first ``tools/call`` its MCP endpoint receives
ends the session it came on: that request and every later one on the session are answered
HTTP 404, as a server that terminated the session answers (MCP Streamable HTTP). A session the
client opens afterwards is served as ever. It is a test's hostile host: it never prints a value.
"""

from __future__ import annotations

from typing import Any

from reference_impl import driver, mcp_server

#: The header that names a Streamable HTTP session.
SESSION_HEADER = b"mcp-session-id"


def dropping(app: Any) -> Any:
    """Wrap the endpoint's ASGI ``app``: the first ``tools/call`` ends its session."""
    dropped: set[bytes] = set()

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST":
            await app(scope, receive, send)
            return
        session = dict(scope.get("headers", ())).get(SESSION_HEADER, b"")
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = bool(message.get("more_body", False))
        if session and (session in dropped or (not dropped and b'"tools/call"' in body)):
            dropped.add(session)
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await app(scope, replay, send)

    return wrapped


def main() -> int:
    """Serve the reference driver with an MCP endpoint that ends one session."""
    original = mcp_server.build_server

    def build_server(backend: Any, approval: Any = None, name: str = "secref") -> Any:
        server = original(backend, approval, name)
        make_app = server.streamable_http_app

        def streamable_http_app(*args: Any, **kwargs: Any) -> Any:
            return dropping(make_app(*args, **kwargs))

        server.streamable_http_app = streamable_http_app  # type: ignore[method-assign]
        return server

    mcp_server.build_server = build_server
    return driver.main([], name="hostile MCP host (ends a session)")


if __name__ == "__main__":
    raise SystemExit(main())
