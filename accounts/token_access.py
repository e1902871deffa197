"""What a personal API token of each scope may reach (pure rules, no Django).

read_write  every endpoint and tool, except managing tokens (that needs a signed-in session);
read_only   reads only: GET endpoints, the read-like POSTs below, read tools, `view`;
bank_only   the project-bank endpoints and the bank tools (a project key is required).

Paths are relative to the API root (`/api`).
"""

from __future__ import annotations

READ_WRITE = "read_write"
READ_ONLY = "read_only"
BANK_ONLY = "bank_only"

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# POST endpoints that only read; their tool or command is checked by the endpoint.
READ_POSTS = frozenset(
    {"/memory/turn-context", "/memory/tools/call", "/memory/memory-tool", "/knowledge/retrieve"}
)
BANK_EXACT = frozenset({"/me", "/memory/tools", "/memory/tools/call", "/memory/memory-tool"})
BANK_PREFIX = "/memory/banks/"
TOKENS_PREFIX = "/tokens"

# bank_status reads; its `create` flag is checked against the scope by the MCP server.
READ_TOOLS = frozenset(
    {"context_read", "list_memory", "read_memory", "search", "bank_status", "search_conversations"}
)
READ_COMMANDS = frozenset({"view"})


def request_refusal(scope: str, method: str, api_path: str) -> str | None:
    """Why a token of `scope` may not make this request, or None when it may."""
    path = "/" + api_path.strip("/")
    if path == TOKENS_PREFIX or path.startswith(TOKENS_PREFIX + "/"):
        return "Tokens are managed while signed in (Settings → API tokens), not with a token."
    if scope == BANK_ONLY and not (path in BANK_EXACT or path.startswith(BANK_PREFIX)):
        return "This token may only use project memory banks."
    if scope == READ_ONLY and method.upper() not in SAFE_METHODS and path not in READ_POSTS:
        return "This token is read-only."
    if scope not in (READ_WRITE, READ_ONLY, BANK_ONLY):
        return "This token has an unknown scope."
    return None


def tool_refusal(scope: str, name: str, *, bank: bool) -> str | None:
    """Why a token of `scope` may not call this tool, or None when it may."""
    if scope == BANK_ONLY and not bank:
        return "This token may only use project memory banks; send a project_key."
    if scope == READ_ONLY and name not in READ_TOOLS:
        return f"This token is read-only; {name} would write."
    return None


def command_refusal(scope: str, command: str, *, bank: bool) -> str | None:
    """The same rule for a memory-tool command (B2)."""
    if scope == BANK_ONLY and not bank:
        return "This token may only use project memory banks; send a project_key."
    if scope == READ_ONLY and command not in READ_COMMANDS:
        return f"This token is read-only; {command} would write."
    return None
