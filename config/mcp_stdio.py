"""MCP on stdio (B1): a local server that forwards to the host's Streamable HTTP endpoint.

Coding agents that start MCP servers as commands run `memory-host mcp`.
Nothing is decided here: the host checks the token and runs every tool, so the
rules are exactly those of /mcp/; tools, resources and the host's `instructions`
(a bank's startup context) pass through. No Django in this module.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

PROJECT_HEADER = "X-Memory-Project"
PROJECT_NAME_HEADER = "X-Memory-Project-Name"


def proxy_server(
    *, base_url: str, token: str, project_key: str = "", project_name: str = ""
) -> Server[Any]:
    headers = {"Authorization": f"Bearer {token}"}
    if project_key:
        headers[PROJECT_HEADER] = project_key
    if project_key and project_name:
        # Header values are Latin-1: a folder named in any script travels percent-encoded.
        headers[PROJECT_NAME_HEADER] = quote(project_name)
    url = base_url.rstrip("/") + "/mcp/"

    @asynccontextmanager
    async def lifespan(_: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300))
        async with http, Client(streamable_http_client(url, http_client=http)) as remote:
            yield {"remote": remote}

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        listed: types.ListToolsResult = await ctx.lifespan_context["remote"].list_tools()
        return types.ListToolsResult(tools=listed.tools)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        result: types.CallToolResult = await ctx.lifespan_context["remote"].call_tool(
            params.name, dict(params.arguments or {})
        )
        return types.CallToolResult(content=result.content, is_error=result.is_error)

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        listed: types.ListResourcesResult = await ctx.lifespan_context["remote"].list_resources()
        return types.ListResourcesResult(resources=listed.resources)

    async def read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        read: types.ReadResourceResult = await ctx.lifespan_context["remote"].read_resource(
            str(params.uri)
        )
        return types.ReadResourceResult(contents=read.contents)

    async def upstream_instructions(
        ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        # The host's instructions depend on the caller (a bank's startup context); the
        # lifespan has already connected, so they are known before the client's handshake.
        result = await call_next(ctx)
        if ctx.method in ("initialize", "server/discover") and isinstance(result, dict):
            result["instructions"] = ctx.lifespan_context["remote"].instructions
        return result

    server: Server[Any] = Server(
        "memory-host",
        version="1",
        lifespan=lifespan,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )
    server.middleware.append(upstream_instructions)
    return server


def serve_stdio(*, base_url: str, token: str, project_key: str = "", project_name: str = "") -> int:
    server = proxy_server(
        base_url=base_url, token=token, project_key=project_key, project_name=project_name
    )

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(main)
    except Exception as error:
        reason = _first_cause(error)
        print(
            f"error: the MCP proxy to {base_url} stopped: {reason}. Check that the host is "
            "running (MEMORY_HOST_URL) and that MEMORY_HOST_TOKEN is a valid API token.",
            file=sys.stderr,
        )
        return 1
    return 0


def _first_cause(error: BaseException) -> str:
    """The innermost error of an exception group (anyio wraps task failures)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    status = getattr(getattr(error, "response", None), "status_code", None)
    if status == 401:
        return "the host refused the token (HTTP 401)"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
