"""``starts_with``: what reads a growing conversation once (the paths view, the scan of
earlier calls) asks it on every model call, so it must be right for every kind of sequence."""

from __future__ import annotations

from xclaw.core.messages import Message, starts_with


def test_a_conversation_starts_with_its_own_earlier_messages_or_equal_ones() -> None:
    convo = [Message.system("s"), Message.user("a"), Message.user("b")]
    assert starts_with(convo, convo[:2]) and starts_with(convo, []) and starts_with(convo, convo)
    assert starts_with(convo, [Message.system("s"), Message.user("a")])  # read back: equal
    assert starts_with(tuple(convo), convo[:2]) and starts_with(convo, tuple(convo[:1]))


def test_a_changed_or_shorter_conversation_does_not() -> None:
    convo = [Message.system("s"), Message.user("a"), Message.user("b")]
    assert not starts_with(convo, [Message.system("s"), Message.user("x")])
    assert not starts_with(convo[:2], convo)  # rolled back
    assert not starts_with([Message.user("a"), *convo[1:]], convo[:2])  # compacted
