"""The host's initialize request (§1.1) and the rejection rules it must apply."""

from __future__ import annotations

from typing import Any

import pytest
from host_frames import initialize_params, initialize_result, manifest

from conformance.protocol.ext_types import Offer
from conformance.protocol.host_initialize import check_initialize_request, must_reject, offer_from
from conformance.protocol.limits import MAX_INITIALIZE_COMMANDS
from conformance.protocol.violations import Exercise, Violation


def broken(params: Any, api: str = "0.2", **m: Any) -> list[str]:
    return [
        f.requirement for f in check_initialize_request(params, manifest=manifest(api, **m)) if isinstance(f, Violation)
    ]


@pytest.mark.parametrize("api", ["0.1", "0.2", "0.4"])
def test_a_careful_host_request_passes_and_exercises_its_rules(api: str) -> None:
    findings = list(check_initialize_request(initialize_params(api), manifest=manifest(api)))
    assert not [f for f in findings if isinstance(f, Violation)]
    exercised = {f.requirement for f in findings if isinstance(f, Exercise)}
    assert "EXT-1.1-host-request-members" in exercised
    assert ("EXT-1.1-host-request-no-protocol-0.1" in exercised) == (api == "0.1")
    assert ("EXT-1.1-host-request-protocol" in exercised) == (api != "0.1")
    assert ("EXT-1.1-host-prompt-metadata-offer" in exercised) == (api == "0.4")


def test_non_object_params() -> None:
    assert broken([1]) == ["EXT-1.1-host-request-members"]


@pytest.mark.parametrize("member", ["api_version", "octet_version", "extension", "capabilities", "contributes", "host"])
def test_missing_members(member: str) -> None:
    params = initialize_params()
    del params[member]
    assert "EXT-1.1-host-request-members" in broken(params)


def test_workspace_may_be_null_not_a_number() -> None:
    assert broken(initialize_params(workspace=None)) == []
    assert broken(initialize_params(workspace=3)) == ["EXT-1.1-host-request-members"]


def test_api_version_must_be_the_manifest_selection() -> None:
    assert broken(initialize_params("0.2", api_version="0.4")) == ["EXT-1.1-host-api-version-selected"]


@pytest.mark.parametrize(("source", "ok"), [("project", True), ("global", True), ("explicit", True), ("user", False)])
def test_source_values(source: str, ok: bool) -> None:
    params = initialize_params()
    params["extension"]["source"] = source
    assert broken(params) == ([] if ok else ["EXT-1.1-host-source-values"])


def test_requires_octet_never_in_initialize() -> None:
    params = initialize_params()
    params["extension"]["requires_octet"] = "=0.8.0"
    assert broken(params) == ["EXT-0-host-requires-octet-not-in-initialize"]


def test_protocol_member_per_api() -> None:
    legacy = initialize_params("0.1", protocol=None)
    assert broken(legacy, "0.1") == ["EXT-1.1-host-request-no-protocol-0.1"]
    missing = initialize_params("0.2")
    del missing["protocol"]
    assert "EXT-1.1-host-request-protocol" in broken(missing)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda p: p.update(version="0.3"),
        lambda p: p.update(required_features=["content_parts"]),
        lambda p: p.update(optional_features="request_progress"),
        lambda p: p.update(limits={"max_concurrent_requests": 0}),
        lambda p: p.update(limits={}),
    ],
)
def test_protocol_object_faults(mutate: Any) -> None:
    params = initialize_params()
    mutate(params["protocol"])
    assert broken(params) == ["EXT-1.1-host-request-protocol"]


@pytest.mark.parametrize(("api", "version", "ok"), [("0.4", "0.4", True), ("0.4", "0.2", True), ("0.2", "0.4", False)])
def test_protocol_version_per_api(api: str, version: str, ok: bool) -> None:
    params = initialize_params(api)
    params["protocol"]["version"] = version
    assert ("EXT-1.1-host-request-protocol" in broken(params, api)) is not ok


def test_offers_per_api() -> None:
    p04 = initialize_params("0.4")
    p04["protocol"]["optional_features"].remove("tool_prompt_metadata_v1")
    assert broken(p04, "0.4") == ["EXT-1.1-host-prompt-metadata-offer"]
    p02 = initialize_params("0.2")
    p02["protocol"]["optional_features"].append("session_control_v1")
    assert broken(p02) == ["EXT-1.1-host-api-0.4-offers-only"]


def test_conditional_offers() -> None:
    params = initialize_params("0.4")
    params["protocol"]["optional_features"] += ["agent_sessions", "agent_model_selection_v1", "session_compaction_v1"]
    got = broken(params, "0.4")
    assert got.count("EXT-1.1-host-agent-dependents-offer") == 2  # events + lifetime missing on 0.4
    assert "EXT-1.1-host-session-control-offer" in got


def test_secrets_and_credentials_follow_the_manifest() -> None:
    params = initialize_params()
    params["protocol"]["optional_features"] += ["secrets", "provider_credentials"]
    got = broken(params)
    assert "EXT-1.1-host-secrets-offer" in got and "EXT-1.1-host-provider-credentials-offer" in got
    declared = {"secrets": ["API_TOKEN"], "provider_credentials": True}
    ok = initialize_params()
    ok["capabilities"].update(secrets=["API_TOKEN"], provider_credentials=True)
    ok["protocol"]["optional_features"] += ["secrets", "provider_credentials"]
    assert broken(ok, capabilities=declared) == []
    assert broken(initialize_params(), capabilities=declared) == [
        "EXT-1.1-host-secrets-capabilities-shape",
        "EXT-1.1-host-provider-credentials-echo",
    ]
    empty = initialize_params()
    empty["capabilities"]["secrets"] = []
    assert broken(empty) == ["EXT-1.1-host-secrets-capabilities-shape"]


def test_offer_from_reads_what_was_offered_and_never_raises() -> None:
    offer = offer_from(initialize_params("0.2"))
    assert offer.api_version == "0.2" and offer.max_concurrent_requests == 4
    assert "request_cancellation" in offer.offered and "lifecycle_events" in offer.offered
    for junk in (None, [], "x", {"protocol": 3}, {"protocol": {"limits": {"max_concurrent_requests": True}}}):
        assert isinstance(offer_from(junk), Offer)


# -- must_reject -------------------------------------------------------------


def reject(result: Any, api: str = "0.2") -> tuple[str, ...]:
    return must_reject(result, offer=offer_from(initialize_params(api)), manifest=manifest(api))


@pytest.mark.parametrize("api", ["0.1", "0.2", "0.4"])
def test_a_valid_answer_must_not_be_refused(api: str) -> None:
    assert reject(initialize_result(api), api) == ()


def test_each_rejection_rule() -> None:
    r = initialize_result()
    assert reject({**r, "api_version": "0.4"}) == ("EXT-1.1-host-rejects-api-version-mismatch",)
    assert reject({**r, "tools": []}) == ("EXT-1.1-host-rejects-bad-catalog",)
    assert reject({**r, "commands": r["commands"] * 2}) == ("EXT-1.1-host-rejects-duplicate-names",)
    assert reject({**r, "tools": [{**r["tools"][0], "description": ""}]}) == (
        "EXT-1.1-host-rejects-bad-tool-definition",
    )
    assert reject(initialize_result(features=["bogus"])) == ("EXT-1.1-host-rejects-bad-features",)
    assert reject(initialize_result(limit=0)) == ("EXT-1.1-host-rejects-bad-concurrency",)
    sub = initialize_result(features=["lifecycle_events"])
    sub["protocol"]["lifecycle_events"] = ["turn/started", "bogus"]
    assert reject(sub) == ("EXT-1.1-host-rejects-bad-subscription",)


@pytest.mark.parametrize("count", [MAX_INITIALIZE_COMMANDS - 1, MAX_INITIALIZE_COMMANDS, MAX_INITIALIZE_COMMANDS + 1])
def test_command_bound_n_minus_1_n_n_plus_1(count: int) -> None:
    names = [f"c{i}" for i in range(count)]
    m = manifest("0.2", contributes={"commands": names})
    r = initialize_result()
    r["commands"] = [{"name": n} for n in names]
    got = must_reject(r, offer=offer_from(initialize_params()), manifest=m)
    assert got == (("EXT-1.1-host-rejects-too-many-commands",) if count > MAX_INITIALIZE_COMMANDS else ())


def test_faults_the_text_leaves_to_the_host_are_not_rejections() -> None:
    legacy = initialize_result("0.1")
    legacy["protocol"] = {"version": "0.1"}  # an extension fault, but the host may tolerate it
    assert reject(legacy, "0.1") == ()
