"""What a client without a usable token is told: a 401 with a Bearer challenge that points
at OAuth 2.0 protected-resource metadata (RFC 9728), and that metadata itself.

The host has no authorization server: the metadata names none, and sends people to the
token page. MCP clients and SDKs that follow `resource_metadata` then show that page
instead of falling into an interactive sign-in that cannot work.
"""

from __future__ import annotations

import json

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse
from django.views.decorators.http import require_GET

METADATA_PATH = "/.well-known/oauth-protected-resource"


def bearer_challenge(base_url: str, *, token_sent: bool, resource: str) -> str:
    """The WWW-Authenticate value; `base_url` is scheme and host without a slash, and
    `resource` the first path segment of what was asked for (`api`, `mcp`)."""
    parts = ['Bearer realm="memory-host"']
    if token_sent:
        parts.append('error="invalid_token"')
    parts.append(f'resource_metadata="{base_url}{METADATA_PATH}/{resource}"')
    return ", ".join(parts)


def unauthenticated_detail() -> str:
    return (
        "Send a personal API token: Authorization: Bearer mh_… "
        "(create one under Settings → API tokens)."
    )


def unauthenticated_response(request: HttpRequest) -> HttpResponse:
    """The JSON 401 of the REST API."""
    response = JsonResponse({"detail": unauthenticated_detail()}, status=401)
    base = request.build_absolute_uri("/").rstrip("/")
    sent = bool(request.headers.get("Authorization"))
    response["WWW-Authenticate"] = bearer_challenge(base, token_sent=sent, resource="api")
    return response


@require_GET
def protected_resource_metadata(request: HttpRequest, resource: str = "") -> HttpResponse:
    """RFC 9728 metadata for the API (`/api/`) and the MCP endpoint (`/mcp/`)."""
    base = request.build_absolute_uri("/").rstrip("/")
    path = "/" + resource.strip("/") + "/" if resource.strip("/") else "/api/"
    body = {
        "resource": base + path,
        "resource_name": "Memory host",
        "bearer_methods_supported": ["header"],
        "resource_documentation": base + reverse("accounts:api_tokens"),
    }
    return HttpResponse(json.dumps(body), content_type="application/json")
