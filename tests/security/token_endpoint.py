"""TEST FIXTURE: an OAuth 2.0 token endpoint (client-credentials grant, RFC 6749 4.4) on a local
port, stdlib ``http.server`` on a thread. It hands out unsecured JWTs (alg "none") whose subject
is the client id, which the SASL front (``sasl_front.py``) accepts, and records every request."""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def unsecured_jwt(claims: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part(claims)}."


@dataclass
class TokenEndpoint:
    clients: dict[str, str]
    expires_in: int = 3600
    # Answers given before the real ones, e.g. [503] for one server error first.
    failures: list[int] = field(default_factory=list)
    # (client id, form) of every request that presented valid credentials.
    granted: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    url: str = ""


@contextmanager
def token_endpoint(clients: dict[str, str], **options: Any) -> Iterator[TokenEndpoint]:
    endpoint = TokenEndpoint(dict(clients), **options)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            form = dict(urllib.parse.parse_qsl(self.rfile.read(int(self.headers["Content-Length"])).decode()))
            if endpoint.failures:
                self._answer(endpoint.failures.pop(0), {"error": "temporarily_unavailable"})
                return
            scheme, _, encoded = (self.headers.get("Authorization") or "").partition(" ")
            client_id, _, secret = base64.b64decode(encoded).decode().partition(":") if encoded else ("", "", "")
            if scheme != "Basic" or endpoint.clients.get(client_id) != secret:
                self._answer(401, {"error": "invalid_client"})
                return
            if form.get("grant_type") != "client_credentials":
                self._answer(400, {"error": "unsupported_grant_type"})
                return
            endpoint.granted.append((client_id, form))
            now = time.time()
            claims = {"sub": client_id, "iat": now, "exp": now + endpoint.expires_in, "scope": form.get("scope", "")}
            token = unsecured_jwt(claims)
            self._answer(200, {"access_token": token, "token_type": "bearer", "expires_in": endpoint.expires_in})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    endpoint.url = f"http://127.0.0.1:{server.server_address[1]}/token"
    thread = threading.Thread(target=server.serve_forever, name="token-endpoint", daemon=True)
    thread.start()
    try:
        yield endpoint
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
