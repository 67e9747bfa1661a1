-- release_claim.lua: hand a claim back (`docs/storage-contract.md`, “Handing claims back”;
-- `docs/state-machines.md`, “Operational transitions”). Idempotent; a token that is not current
-- changes nothing. Attempts are unchanged; no wake hint is published.
--
-- KEYS[1] run hash   KEYS[2] ready zset   KEYS[3] claims zset
-- ARGV[1] JSON: run_id, token, now
-- Returns {"ok", "released"} | {"ok", "unchanged"}
-- Check: the stored token equals the given one. Then writes.

if redis.call('HGET', KEYS[1], 'token') ~= P.token then
  return {'ok', 'unchanged'}
end
-- ===== writes: every check is above this line =====
redis.call('HDEL', KEYS[1], 'token', 'claimed_at')
redis.call('HSET', KEYS[1], 'wake_at', P.now)
redis.call('ZREM', KEYS[3], P.run_id)
redis.call('ZADD', KEYS[2], P.now, P.run_id)
return {'ok', 'released'}
