-- refresh_claim.lua: re-stamp a current claim (`docs/storage-contract.md`, “Handing claims back”):
-- claimed_at = max(stored, now), never backwards. Expiry is not checked.
--
-- KEYS[1] run hash   KEYS[2] claims zset
-- ARGV[1] JSON: run_id, token, now
-- Returns {"ok"} | {"claim_lost"} (token not current or run unknown; nothing written)
-- Check: the stored token equals the given one. Then writes.

local row = redis.call('HMGET', KEYS[1], 'token', 'claimed_at')
if row[1] ~= P.token then
  return {'claim_lost'}
end
local at = P.now
if row[2] and int_less(P.now, row[2]) then
  at = row[2]
end
-- ===== writes: every check is above this line =====
redis.call('HSET', KEYS[1], 'claimed_at', at)
redis.call('ZADD', KEYS[2], at, P.run_id)
return {'ok'}
