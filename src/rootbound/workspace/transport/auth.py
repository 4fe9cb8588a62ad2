"""Bearer-token authentication for ``rootbound serve --http``, on the SDK's own resource-server hooks.

The SDK ships the pieces of an OAuth 2.1 resource server: a ``TokenVerifier`` protocol, a Starlette backend that
asks it about the ``Authorization: Bearer`` header, and a middleware that answers 401 with ``WWW-Authenticate``
when nobody was authenticated. ``--auth-token-env`` plugs a static-token verifier into them; an operator with an
authorization server passes their own verifier (JWT validation or RFC 7662 introspection) to
:func:`~rootbound.workspace.transport.http.http_app` instead (docs/security.md, "Defence in depth"). Either way an
authenticated request carries a principal, which the SDK's session manager binds each handshake-era session to.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Set
from typing import Any

from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken, TokenVerifier
from starlette.middleware.authentication import AuthenticationMiddleware

__all__ = ["StaticTokenVerifier", "require_bearer"]

OPERATOR_CLIENT_ID = "rootbound-operator-token"


class StaticTokenVerifier:
    """Accepts exactly one token, compared in constant time (digests, so not even the length leaks)."""

    def __init__(self, token: str) -> None:
        self._digest = hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()

    async def verify_token(self, token: str) -> AccessToken | None:
        given = hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()
        if not hmac.compare_digest(given, self._digest):
            return None
        return AccessToken(token="", client_id=OPERATOR_CLIENT_ID, scopes=[])


class _RequireBearer:
    """Every HTTP request must authenticate, except on ``public`` paths (RFC 9728 metadata) and the lifespan."""

    def __init__(self, app: Any, backend: BearerAuthBackend, resource_metadata_url: Any, public: Set[str]) -> None:
        self.app = app
        self.public = public
        gate = RequireAuthMiddleware(app, required_scopes=[], resource_metadata_url=resource_metadata_url)
        self.guarded = AuthenticationMiddleware(gate, backend=backend)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan" or scope.get("path") in self.public:
            await self.app(scope, receive, send)
        else:
            await self.guarded(scope, receive, send)


def require_bearer(
    app: Any,
    verifier: TokenVerifier,
    *,
    resource_server_url: Any = None,
    resource_metadata_url: Any = None,
    public_paths: Set[str] = frozenset(),
) -> Any:
    """``app`` behind a bearer check: no valid token, a 401 that says only ``invalid_token``.

    ``resource_server_url`` makes the SDK refuse a token issued for another resource (its RFC 8707 audience);
    ``resource_metadata_url`` is announced in ``WWW-Authenticate`` so an OAuth client can find the authorization
    server; ``public_paths`` (that metadata) are served without a token.
    """
    backend = BearerAuthBackend(verifier, resource_server_url=resource_server_url)
    return _RequireBearer(app, backend, resource_metadata_url, frozenset(public_paths))
