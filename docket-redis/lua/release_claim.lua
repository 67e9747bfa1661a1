-- release_claim.lua: hand a claim back (`docs/storage-contract.md`, “Handing claims back”;
-- `docs/state-machines.md`, “Operational transitions”). Idempotent; a token that is not current
-- changes nothing. Attempts are unchanged; no wake hint is published.
--
-- KEYS[1] run hash   KEYS[2] ready zset   KEYS[3] claims zset
-- ARGV[1] JSON: run_id, token, now, prefix (derives the owner's ready twin and
--         the claim counts, see the prelude)
-- Returns {"ok", "released"} | {"ok", "unchanged"} | {"corrupt", detail}
-- Check: the stored token equals the given one. Then writes; the admission marker is kept (a
-- cooperative hand-back continues the same admission).

local row = redis.call('HMGET', KEYS[1], 'token', 'owner')
if row[1] ~= P.token then
  return {'ok', 'unchanged'}
end
if not row[2] then
  return {'corrupt', 'run ' .. P.run_id .. ' has no owner field'}
end
-- ===== writes: every check is above this line =====
redis.call('HDEL', KEYS[1], 'token', 'claimed_at')
redis.call('HSET', KEYS[1], 'wake_at', P.now)
claim_remove(KEYS[3], row[2], P.run_id)
ready_add(KEYS[2], row[2], P.run_id, P.now)
return {'ok', 'released'}
