"""Session leases and queues in Redis: one instance runs a session's turns at a time.

Why Redis and not a row in the store: Redis is already there for the fan-out, a key with a
TTL expires by itself when its holder dies (no clock or sweeper in the database), and the
lease, the session's message queue and the set of sessions with work are changed together in
one Lua script, so a message can never land between "the queue is empty" and "let go".

Keys of session ``S`` (prefix ``xclaw:``): ``lease:S`` (``INSTANCE:SECRET``, PX = TTL),
``q:S`` (queued messages, JSON), ``run:S`` (the message being run, with the store counters
taken just before it started), and the set ``active`` of sessions that have either.
"""

from __future__ import annotations

PREFIX = "xclaw:"

# Push a message; take the lease if it is free. KEYS: lease, queue, active. ARGV: message,
# session id, token, ttl ms. Returns 1 when the caller now holds the lease.
ENQUEUE = """
redis.call('rpush', KEYS[2], ARGV[1])
redis.call('sadd', KEYS[3], ARGV[2])
if redis.call('set', KEYS[1], ARGV[3], 'NX', 'PX', ARGV[4]) then return 1 end
return 0
"""

# Take the lease of a session that has work and no holder. KEYS: lease, queue, run, active.
# ARGV: session id, token, ttl ms. Returns 1 when taken; a session without work leaves
# ``active`` (it was stale).
CLAIM = """
if redis.call('llen', KEYS[2]) == 0 and redis.call('llen', KEYS[3]) == 0 then
  if redis.call('exists', KEYS[1]) == 0 then redis.call('srem', KEYS[4], ARGV[1]) end
  return 0
end
if redis.call('set', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[3]) then return 1 end
return 0
"""

# The next message to run, for the holder only. KEYS: lease, queue, run. ARGV: token, the
# store counters now (JSON), or '' to learn first whether they are needed. Returns {0, entry}
# for a fresh message (moved to ``run`` with the counters), {1, entry} for one a dead holder
# left in ``run``, {2} when a message waits and the counters were not given, {} for nothing,
# -1 without the lease.
TAKE = """
if redis.call('get', KEYS[1]) ~= ARGV[1] then return -1 end
local left = redis.call('lindex', KEYS[3], 0)
if left then return {1, left} end
if ARGV[2] == '' then
  if redis.call('llen', KEYS[2]) > 0 then return {2} end
  return {}
end
local m = redis.call('lpop', KEYS[2])
if not m then return {} end
local entry = ARGV[2] .. '\\n' .. m
redis.call('rpush', KEYS[3], entry)
return {0, entry}
"""

# The running message is done; let go unless more work waits. KEYS: lease, queue, run,
# active. ARGV: token, session id, ttl ms. Returns 0 more work (the lease is kept: run it),
# 1 released, -1 not ours any more.
FINISH = """
if redis.call('get', KEYS[1]) ~= ARGV[1] then return -1 end
redis.call('del', KEYS[3])
if redis.call('llen', KEYS[2]) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[3])
  return 0
end
redis.call('srem', KEYS[4], ARGV[2])
redis.call('del', KEYS[1])
return 1
"""

# Let go, unless more work arrived. KEYS: lease, queue, run, active. ARGV: token, session id,
# ttl ms. Returns 1 released, 0 kept (work waits: run it), -1 not ours any more.
RELEASE = """
if redis.call('get', KEYS[1]) ~= ARGV[1] then return -1 end
if redis.call('llen', KEYS[2]) > 0 or redis.call('llen', KEYS[3]) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[3])
  return 0
end
redis.call('srem', KEYS[4], ARGV[2])
redis.call('del', KEYS[1])
return 1
"""

# Let go at shutdown, leaving any work for another instance. KEYS: lease. ARGV: token.
DROP = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""

# Keep holding. KEYS: lease. ARGV: token, ttl ms. Returns 1 when still ours.
RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0
"""


def keys(session_id: str) -> tuple[str, str, str, str]:
    """(lease, queue, run, active) keys of a session."""
    return (
        f"{PREFIX}lease:{session_id}",
        f"{PREFIX}q:{session_id}",
        f"{PREFIX}run:{session_id}",
        f"{PREFIX}active",
    )


def frames_channel(session_id: str) -> str:
    return f"{PREFIX}f:{session_id}"


def instance_channel(instance: str) -> str:
    """Where commands for the sessions an instance holds go (stop, approval answers)."""
    return f"{PREFIX}i:{instance}"
