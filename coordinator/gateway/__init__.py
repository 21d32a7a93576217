"""Kafka-protocol gateway: answers group APIs through a handler, forwards the rest to the cluster."""

from coordinator.gateway.config import GatewayConfig, TlsSettings
from coordinator.gateway.handler import ConnectionContext, CoordinatorAddress, CoordinatorLocator, GroupApiHandler
from coordinator.gateway.server import GatewayServer

__all__ = [
    "CoordinatorAddress",
    "CoordinatorLocator",
    "GatewayConfig",
    "GatewayServer",
    "GroupApiHandler",
    "ConnectionContext",
    "TlsSettings",
]
