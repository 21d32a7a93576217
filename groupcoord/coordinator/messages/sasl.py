"""SaslHandshake (API key 17) and SaslAuthenticate (API key 36) bodies, from the published Kafka schemas.

The gateway relays both to the cluster untouched; it decodes them only to learn which mechanism
was chosen, who the client claims to be, and whether the cluster accepted it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from groupcoord.coordinator.messages.schema import Field, Message, Versions


@dataclass(kw_only=True, slots=True)
class SaslHandshakeRequest(Message):
    API_KEY: ClassVar[int] = 17
    VALID: ClassVar[Versions] = Versions(0, 1)
    FLEXIBLE: ClassVar[Versions] = Versions.none()
    mechanism: str = ""
    SCHEMA: ClassVar[tuple[Field, ...]] = (Field("mechanism", "string", Versions(0), default=""),)


@dataclass(kw_only=True, slots=True)
class SaslHandshakeResponse(Message):
    API_KEY: ClassVar[int] = 17
    VALID: ClassVar[Versions] = Versions(0, 1)
    FLEXIBLE: ClassVar[Versions] = Versions.none()
    error_code: int = 0
    mechanisms: list[str] = field(default_factory=list)
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("error_code", "int16", Versions(0), default=0),
        Field("mechanisms", "array", Versions(0), item="string"),
    )


@dataclass(kw_only=True, slots=True)
class SaslAuthenticateRequest(Message):
    API_KEY: ClassVar[int] = 36
    VALID: ClassVar[Versions] = Versions(0, 2)
    FLEXIBLE: ClassVar[Versions] = Versions(2)
    auth_bytes: bytes = b""
    SCHEMA: ClassVar[tuple[Field, ...]] = (Field("auth_bytes", "bytes", Versions(0), default=b""),)


@dataclass(kw_only=True, slots=True)
class SaslAuthenticateResponse(Message):
    API_KEY: ClassVar[int] = 36
    VALID: ClassVar[Versions] = Versions(0, 2)
    FLEXIBLE: ClassVar[Versions] = Versions(2)
    error_code: int = 0
    error_message: str | None = None
    auth_bytes: bytes = b""
    session_lifetime_ms: int = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("error_code", "int16", Versions(0), default=0),
        Field("error_message", "string", Versions(0), nullable=Versions(0), default=None),
        Field("auth_bytes", "bytes", Versions(0), default=b""),
        Field("session_lifetime_ms", "int64", Versions(1), default=0),
    )
