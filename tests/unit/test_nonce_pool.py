"""The gateway's request nonces (member ids derive from them): never repeated, never overlapping."""

from __future__ import annotations

from groupcoord.coordinator.service.gateway_handler import NoncePool


def test_nonces_are_fresh_slices_of_the_random_source_across_refills() -> None:
    pool = NoncePool(chunk=64)  # four nonces a refill: the test crosses many refills
    nonces = [pool.take() for _ in range(1000)]
    assert all(len(n) == 16 for n in nonces)
    assert len(set(nonces)) == len(nonces)
    assert len(pool.take(100)) == 100  # larger than a chunk: a refill of its own size
