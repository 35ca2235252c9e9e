"""An upstream MCP server that is its own OAuth 2.1 authorization server (the Python SDK's:
metadata, dynamic registration, PKCE, resource indicators, refresh), over streamable HTTP on
127.0.0.1, for tests/cli/oauth.rs.

    python oauth_server.py PORT EVENTS

- `/authorize` approves at once (no person to ask), redirecting with a code, as the
  conformance suite's authorization server does: a "browser" that follows redirects
  (`curl -sSL`) completes a login.
- Access tokens live `ACCESS_TTL` seconds (env, default 3600); refresh tokens rotate (each is
  good once). Every token issued, refreshed or refused is appended to EVENTS as a line
  (`issued <client>`, `refreshed <client>`, `refused <token kind>`), so a test can wait for
  and assert them.
- The tool `whoami` answers `hello <client id>`; it needs the scope `tools`.
- With JWT_KEY (a private RSA key's PEM file), JWT_KID and JWKS_FILE set, it is an external
  authorization server for codemode's own `server.auth.oauth` (tests/mcp/oauth_resource.rs):
  access tokens are RS256 JWTs (`iss` this server, `aud` the resource indicator, `sub` the
  client, `scope`), its OpenID configuration names `/jwks`, which serves JWKS_FILE as it is at
  each request (a test rotates keys by rewriting it) and appends `jwks` to EVENTS.
- SCOPES (env, space-separated, default `tools`): the scopes clients may register and ask for.
  WITHHOLD_ONCE (env): a scope left out of the first authorization that asks for it, as when
  the person unticks it on a consent page; with it set, each authorization appends `granted
  <scopes>`.
"""

import os
import secrets
import sys
import time
import warnings

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

warnings.simplefilter("ignore")

PORT = int(sys.argv[1])
EVENTS = sys.argv[2]
BASE = f"http://127.0.0.1:{PORT}"
ACCESS_TTL = int(os.environ.get("ACCESS_TTL", "3600"))
JWT_KEY = os.environ.get("JWT_KEY")
SCOPES = os.environ.get("SCOPES", "tools").split()
WITHHOLD_ONCE = os.environ.get("WITHHOLD_ONCE")
# Grants are reported only where a test withholds one (other tests count EVENTS' lines).
REPORT_GRANTS = WITHHOLD_ONCE is not None


def event(line: str) -> None:
    with open(EVENTS, "a") as f:
        f.write(line + "\n")


class Provider:
    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.access: dict[str, AccessToken] = {}

    async def get_client(self, client_id: str):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params: AuthorizationParams) -> str:
        global WITHHOLD_ONCE
        code = secrets.token_urlsafe(16)
        scopes = params.scopes or ["tools"]
        if WITHHOLD_ONCE in scopes:
            scopes = [s for s in scopes if s != WITHHOLD_ONCE]
            WITHHOLD_ONCE = None
        if REPORT_GRANTS:
            event("granted " + " ".join(scopes))
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=scopes,
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code: str):
        return self.codes.get(authorization_code)

    def tokens(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        if JWT_KEY:
            import jwt

            now = int(time.time())
            claims = {"iss": BASE, "sub": client_id, "aud": resource, "iat": now,
                      "exp": now + ACCESS_TTL, "scope": " ".join(scopes)}
            with open(JWT_KEY) as f:
                access = jwt.encode(claims, f.read(), algorithm="RS256",
                                    headers={"kid": os.environ["JWT_KID"]})
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + ACCESS_TTL,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=ACCESS_TTL,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )

    async def exchange_authorization_code(self, client, authorization_code: AuthorizationCode):
        del self.codes[authorization_code.code]
        event(f"issued {client.client_id}")
        return self.tokens(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token: str):
        token = self.refresh.get(refresh_token)
        if token is None:
            event("refused refresh")
        return token

    async def exchange_refresh_token(self, client, refresh_token: RefreshToken, scopes: list[str]):
        del self.refresh[refresh_token.token]
        event(f"refreshed {client.client_id}")
        return self.tokens(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str):
        found = self.access.get(token)
        if found is None or (found.expires_at or 0) < time.time():
            event("refused access")
            return None
        return found

    async def revoke_token(self, token) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


server = MCPServer(
    "guarded",
    auth_server_provider=Provider(),
    auth=AuthSettings(
        issuer_url=BASE,
        resource_server_url=f"{BASE}/mcp",
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=SCOPES, default_scopes=["tools"]
        ),
        required_scopes=["tools"],
        validate_token_resource=True,
    ),
)


@server.custom_route("/.well-known/openid-configuration", methods=["GET"])
async def openid_configuration(request):
    from starlette.responses import JSONResponse

    return JSONResponse({
        "issuer": BASE,
        "authorization_endpoint": f"{BASE}/authorize",
        "token_endpoint": f"{BASE}/token",
        "jwks_uri": f"{BASE}/jwks",
        "response_types_supported": ["code"],
    })


@server.custom_route("/jwks", methods=["GET"])
async def jwks(request):
    from starlette.responses import Response

    event("jwks")
    with open(os.environ["JWKS_FILE"]) as f:
        return Response(f.read(), media_type="application/json")


@server.tool()
async def whoami(ctx: Context) -> str:
    """Says which client called."""
    from mcp.server.auth.middleware.auth_context import get_access_token

    token = get_access_token()
    return f"hello {token.client_id if token else 'nobody'}"


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=PORT)
