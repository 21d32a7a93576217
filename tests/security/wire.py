"""Raw SASL steps over ``WireClient`` (the gateway's APIS table holds no SASL messages to encode)."""

from __future__ import annotations

import struct

from scramp import ScramClient

from groupcoord.coordinator.gateway.codec import decode_struct, encode_struct
from groupcoord.coordinator.gateway.framing import RequestHeader, decode_response_header, encode_request_header
from groupcoord.coordinator.messages.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from groupcoord.coordinator.messages.schema import Message
from tests.gateway.wire_client import WireClient

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36


def sasl_frame(client: WireClient, key: int, version: int, body: Message) -> bytes:
    flexible = version in type(body).FLEXIBLE
    out = bytearray()
    encode_request_header(RequestHeader(key, version, client.next_id, "attacker"), 2 if flexible else 1, out)
    client.next_id += 1
    encode_struct(body, version, flexible, out)
    return struct.pack(">i", len(out)) + bytes(out)


async def read_sasl(client: WireClient, cls: type[Message], version: int) -> Message:
    payload = await client.read_frame()
    flexible = version in cls.FLEXIBLE
    _, pos = decode_response_header(payload, 1 if flexible else 0)
    return decode_struct(cls, memoryview(payload)[pos:], version, flexible)


async def handshake(client: WireClient, mechanism: str) -> SaslHandshakeResponse:
    client.send_raw(sasl_frame(client, SASL_HANDSHAKE, 1, SaslHandshakeRequest(mechanism=mechanism)))
    answer = await read_sasl(client, SaslHandshakeResponse, 1)
    assert isinstance(answer, SaslHandshakeResponse)
    return answer


async def authenticate(client: WireClient, token: bytes) -> SaslAuthenticateResponse:
    client.send_raw(sasl_frame(client, SASL_AUTHENTICATE, 2, SaslAuthenticateRequest(auth_bytes=token)))
    answer = await read_sasl(client, SaslAuthenticateResponse, 2)
    assert isinstance(answer, SaslAuthenticateResponse)
    return answer


async def plain_login(client: WireClient, user: str, password: str) -> SaslAuthenticateResponse:
    assert (await handshake(client, "PLAIN")).error_code == 0
    return await authenticate(client, f"\x00{user}\x00{password}".encode())


async def scram_login(client: WireClient, mechanism: str, user: str, password: str) -> SaslAuthenticateResponse:
    assert (await handshake(client, mechanism)).error_code == 0
    scram = ScramClient([mechanism], user, password)
    first = await authenticate(client, scram.get_client_first().encode())
    assert first.error_code == 0, first.error_message
    scram.set_server_first(first.auth_bytes.decode())
    final = await authenticate(client, scram.get_client_final().encode())
    if final.error_code == 0:
        scram.set_server_final(final.auth_bytes.decode())
    return final
