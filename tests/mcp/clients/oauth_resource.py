"""A real OAuth client of codemode as a protected resource (tests/mcp/oauth_resource.rs): the
Python SDK's OAuthClientProvider meets codemode's `401`, reads its protected-resource metadata,
registers with the authorization server it names, logs in (authorization code + PKCE with a
resource indicator; the "browser" follows the authorization URL's redirect headlessly) and runs
one eval. Emits {tools, eval, token, logins}: the last access token, for the test to check its
claims, and how many times the client was sent to the authorization server (a `403
insufficient_scope` makes it log in again for the scopes named: a step-up).

Environment (besides harness.py's): CODEMODE_AUTH_URL, codemode's /mcp URL; EVAL_TOOL, the eval
tool to call (default `eval`).
"""

from __future__ import annotations

import os
from urllib.parse import parse_qs, urlparse

import httpx2
from harness import Client, MODE, evaluate, run, tool_names
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

REDIRECT = "http://127.0.0.1:1/callback"


class Memory:
    def __init__(self) -> None:
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens) -> None:
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, info) -> None:
        self.client = info


async def main() -> dict:
    url = os.environ["CODEMODE_AUTH_URL"]
    redirected: dict[str, str] = {}
    logins = []

    async def browse(authorization_url: str) -> None:
        logins.append(authorization_url)
        # The authorization server approves at once; its redirect carries the code.
        async with httpx2.AsyncClient() as http:
            response = await http.get(authorization_url, follow_redirects=False)
        query = parse_qs(urlparse(response.headers["location"]).query)
        redirected.update({k: v[0] for k, v in query.items()})

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=redirected["code"], state=redirected.get("state"))

    storage = Memory()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="oauth-resource-test",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=browse,
        callback_handler=callback,
    )
    http = create_mcp_http_client(auth=provider)
    async with Client(streamable_http_client(url, http_client=http), mode=MODE) as client:
        names = await tool_names(client)
        result = await evaluate(client, "return 6 * 7", os.environ.get("EVAL_TOOL", "eval"))
    return {"tools": names, "eval": result, "token": storage.tokens.access_token, "logins": len(logins)}


run(main)
