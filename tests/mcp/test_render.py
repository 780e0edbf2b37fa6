"""The reference MCP layer's pure parts: answers, rendering, the cap over text items."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed: pip install 'secref-suite[mcp]'")

import mcp_types as types

from reference_impl import RESULT_CAP_CHARS
from reference_impl._types import Answer
from reference_impl.handlers import FORMS_KEY, rich_result
from reference_impl.mcp_server import (
    LOG_WITHHELD,
    Outcome,
    answer_of,
    cap_items,
    further_notifications,
    further_requests,
    parse_loopback,
    render,
)


@pytest.mark.req("MCP-008")
@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        (types.ElicitResult(action="accept", content={"decision": "approve"}), Answer.APPROVE),
        (
            types.ElicitResult(action="accept", content={"decision": "trust_session"}),
            Answer.TRUST_SESSION,
        ),
        (types.ElicitResult(action="accept", content={"decision": "deny"}), Answer.DENY),
        (types.ElicitResult(action="accept", content={"decision": True}), Answer.DENY),
        (types.ElicitResult(action="decline"), Answer.DENY),
        (types.ElicitResult(action="cancel"), Answer.DENY),
    ],
)
def test_answer_of(reply: types.ElicitResult, answer: Answer) -> None:
    assert answer_of(reply) is answer


@pytest.mark.req("MCP-005")
def test_text_items_are_capped_together() -> None:
    content = [{"type": "text", "text": "x" * 100_000} for _ in range(3)]
    content.insert(1, {"type": "resource_link", "uri": "x:y", "name": "n"})
    capped = cap_items(content)
    texts = [item["text"] for item in capped if item["type"] == "text"]
    assert sum(len(text) for text in texts) <= RESULT_CAP_CHARS
    assert len(texts) == 2
    assert texts[1].endswith("characters; it had 100000]")
    assert any(item["type"] == "resource_link" for item in capped)
    short = [{"type": "text", "text": "ok"}]
    assert cap_items(short) == short


@pytest.mark.req("MCP-004", "MCP-006")
def test_render_refusal_and_withheld_log() -> None:
    refused = render(Outcome("DENIED", "The operator denied the call", True), True)
    assert refused.result["content"] == [{"type": "text", "text": "The operator denied the call"}]
    assert refused.result["isError"] is True
    rich = {"content": [{"type": "text", "text": "a"}], "log": ["line"], "progress": ["p"]}
    assert render(Outcome("ALLOWED", "a", False, rich), True).log == ("line",)
    assert render(Outcome("ALLOWED", "a", False, rich), False).log == (LOG_WITHHELD,)


@pytest.mark.req("MCP-003")
def test_rich_members_fill_every_further_member() -> None:
    """With ``members`` the rich handler's forms stand in every further member, and the three
    notifications it asks for are sent only while result scrubbing is on."""
    result = rich_result(["v a/l"], members=True)
    assert isinstance(result.rich, dict)
    outcome = Outcome("APPROVED_ONCE", result.text, False, result.rich)
    rendered = render(outcome, True)
    items = types.CallToolResult.model_validate(rendered.result).content
    dumped = [item.model_dump(by_alias=True, mode="json", exclude_none=True) for item in items]
    assert all(
        item["_meta"] == {FORMS_KEY: ["v a/l", "v a/l", "v+a%2Fl", "v%20a%2Fl"]} for item in dumped
    )
    assert all(item["annotations"]["lastModified"] == "v a/l" for item in dumped)
    embedded = next(item["resource"] for item in dumped if "text" in item.get("resource", {}))
    assert embedded["uri"].endswith("?key=v%20a%2Fl")
    assert embedded["mimeType"] == "text/plain; name=v a/l"
    methods = [note.method for note in rendered.notifications]
    assert methods == [
        "notifications/resources/updated",
        "notifications/resources/list_changed",
        "notifications/progress",
    ]
    assert render(outcome, False).notifications == ()
    plain = rich_result(["v"]).rich
    assert isinstance(plain, dict)
    assert "notifications" not in plain
    assert all("_meta" not in item for item in plain["content"])


def test_further_notifications_leaves_out_unknown_or_malformed_entries() -> None:
    asked = [
        {"method": "sampling/createMessage", "params": {}},
        {"method": "notifications/resources/updated", "params": {}},
        "not an entry",
        {"method": "notifications/resources/updated", "params": {"uri": "x:y"}},
    ]
    sent = further_notifications(asked)
    assert [note.method for note in sent] == ["notifications/resources/updated"]
    assert further_notifications("not a list") == ()


@pytest.mark.req("MCP-003")
def test_rich_requests_ask_for_every_client_request() -> None:
    """With ``requests`` the rich handler asks for a sampling, a roots and a ping request
    holding its forms, sent only while result scrubbing is on; without it, for none."""
    result = rich_result(["v a/l"], requests=True)
    assert isinstance(result.rich, dict)
    outcome = Outcome("APPROVED_ONCE", result.text, False, result.rich)
    sent = render(outcome, True).requests
    assert [request.method for request in sent] == ["sampling/createMessage", "roots/list", "ping"]
    sampling = sent[0].model_dump(by_alias=True, mode="json", exclude_none=True)["params"]
    assert sampling["systemPrompt"] == "v a/l"
    assert sampling["messages"][0]["content"]["text"].split("\n") == [
        "v a/l",
        "v a/l",
        "v+a%2Fl",
        "v%20a%2Fl",
    ]
    assert all(
        FORMS_KEY in request.model_dump(by_alias=True, mode="json")["params"]["_meta"]
        for request in sent
    )
    assert render(outcome, False).requests == ()
    plain = rich_result(["v"], members=True).rich
    assert isinstance(plain, dict)
    assert "requests" not in plain


def test_further_requests_leaves_out_unknown_or_malformed_entries() -> None:
    asked = [
        {"method": "elicitation/create", "params": {"message": "m"}},
        {"method": "sampling/createMessage", "params": {}},
        "not an entry",
        {"method": "ping"},
    ]
    assert [request.method for request in further_requests(asked)] == ["ping"]
    assert further_requests("not a list") == ()


@pytest.mark.req("MCP-013")
@pytest.mark.parametrize("address", ["0.0.0.0:80", "10.0.0.1:8000", "example.com:1", "127.0.0.1"])
def test_only_loopback_addresses(address: str) -> None:
    with pytest.raises(ValueError, match=r"loopback|HOST:PORT"):
        parse_loopback(address)
    assert parse_loopback("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_loopback("[::1]:8080") == ("::1", 8080)
