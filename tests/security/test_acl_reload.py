"""The local ACL file is re-read while the sidecar serves: an edit applies without a restart,
and an invalid edit keeps the previous ACLs (one warning in the log)."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from groupcoord.coordinator.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchResponse,
)
from tests.security.conftest import ACLS, Sidecar
from tests.security.test_authentication import authenticated

pytestmark = pytest.mark.integration

GROUP_DENIED = 30


def test_acl_file_edit_applies_without_restart(sidecar: Sidecar) -> None:
    assert sidecar.acl_file is not None
    acl_file = sidecar.acl_file
    prefix = f"dave-{uuid.uuid4().hex[:8]}-"
    grant = (
        f'\n[[acls]]\nprincipal = "User:bob"\nresource_type = "GROUP"\nresource_name = "{prefix}"\n'
        'pattern_type = "PREFIXED"\noperation = "DESCRIBE"\n'
    )

    async def fetch_code() -> int:
        bob = await authenticated(sidecar, "bob")
        try:
            answer = await bob.call(
                9, 8, OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=f"{prefix}g", topics=None)])
            )
            assert isinstance(answer, OffsetFetchResponse)
            return answer.groups[0].error_code
        finally:
            await bob.close()

    async def wait_for(code: int) -> None:
        deadline = time.monotonic() + 20
        while (got := await fetch_code()) != code:
            assert time.monotonic() < deadline, f"still {got}, expected {code}"
            await asyncio.sleep(0.3)

    async def scenario() -> None:
        assert await fetch_code() == GROUP_DENIED
        acl_file.write_text(ACLS + grant)
        await wait_for(0)  # the grant applies to the running sidecar
        acl_file.write_text(ACLS + grant + "\n[[acls]]\nprincipal = 'nobody'\n")  # invalid: kept the old ACLs
        deadline = time.monotonic() + 20
        while "keeping the previous ACLs" not in sidecar.log.read_text():
            assert time.monotonic() < deadline, "the invalid ACL file was not noticed"
            await asyncio.sleep(0.3)
        assert await fetch_code() == 0
        acl_file.write_text(ACLS)
        await wait_for(GROUP_DENIED)  # and a revocation applies too

    try:
        asyncio.run(scenario())
    finally:
        acl_file.write_text(ACLS)
