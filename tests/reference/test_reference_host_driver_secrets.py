"""The reference driver's ``secrets`` load member (docs/host-driver.md, §2.10):
the deterministic broker it gives a load, and the member's validation."""

from __future__ import annotations

import pytest

from conformance.reference.host.driver import CONTRACT, Driver, OpError, SecretBroker, secrets_spec


def test_the_broker_holds_values_per_extension_and_fails_on_the_named_ones() -> None:
    broker = SecretBroker()
    broker.add("ext-a", {"values": {"token": "v-a"}, "failing": ["down"]})
    broker.add("ext-b", {"values": {"token": "v-b"}, "failing": []})
    assert broker("ext-a", 1, 2, "token") == "v-a"
    assert broker("ext-b", 1, 2, "token") == "v-b"  # the identity decides whose value
    assert broker("ext-a", 1, 2, "absent") is None
    assert broker("unknown", 1, 2, "token") is None
    with pytest.raises(RuntimeError, match="provider"):
        broker("ext-a", 1, 2, "down")
    assert broker("ext-b", 1, 2, "down") is None


@pytest.mark.parametrize(
    "bad",
    [[], {"values": ["token"]}, {"values": {"token": 1}}, {"failing": "down"}, {"failing": [1]}],
)
def test_a_malformed_secrets_member_is_refused(bad: object) -> None:
    with pytest.raises(OpError) as raised:
        secrets_spec(bad)
    assert raised.value.code == -32602


def test_an_absent_member_means_no_broker_and_a_present_one_gets_the_drivers() -> None:
    assert secrets_spec(None) is None
    assert secrets_spec({}) == {"values": {}, "failing": []}
    driver = Driver()
    plain, brokered = driver.host_for({}), driver.host_for({}, brokered=True)
    assert plain is not brokered
    assert plain.config.secret_broker is None  # like the coding product: secrets never offered
    assert brokered.config.secret_broker is driver.brokered
    assert driver.host_for({}, brokered=True) is brokered


def test_hello_names_the_secrets_capability() -> None:
    result = Driver().op_hello(1, {"contract": CONTRACT})
    assert "secrets" in result["capabilities"]
