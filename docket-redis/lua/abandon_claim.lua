-- abandon_claim.lua: pre-execution hand-back (`docs/storage-contract.md`, “Handing claims back”;
-- `docs/state-machines.md`, “Operational transitions”), fenced on the token and checkpoint_seq;
-- decrements attempts (floored at 0), then reschedules or poisons.
--
-- KEYS[1] run hash   KEYS[2] ready zset   KEYS[3] claims zset   KEYS[4] poisoned set
-- ARGV[1] JSON: run_id, token, expected_seq, now, retry_at, mode ("poisoning" |
--         "non_poisoning"), max_abandons
-- ARGV[2..32] (non_poisoning with backoff only): the wake for abandons_before = 0..30, computed
--         by the caller with docket_core::store::rules::ops::backoff_wake, so the backoff
--         formula stays in Rust; the script picks entry min(abandons_before, 30).
-- Returns {"ok", "rescheduled" | "poisoned" | "stale"} | {"corrupt", detail}
-- Checks: token and seq fences, stored counters readable. Then writes.

local row = redis.call('HMGET', KEYS[1], 'token', 'seq', 'attempts', 'abandons')
if row[1] ~= P.token or row[2] ~= P.expected_seq then
  return {'ok', 'stale'}
end
local attempts, abandons = tonumber(row[3]), tonumber(row[4])
if not attempts or not abandons then
  return {'corrupt', 'run ' .. P.run_id .. ' has unreadable claim counters'}
end
attempts = tostring(math.max(attempts - 1, 0))

local wake
if P.mode == 'non_poisoning' then
  if #ARGV > 1 then
    wake = ARGV[2 + math.min(abandons, 30)]
  else
    wake = P.retry_at
  end
elseif abandons < tonumber(P.max_abandons) then
  wake = P.retry_at
end

-- ===== writes: every check is above this line =====
redis.call('HDEL', KEYS[1], 'token', 'claimed_at')
redis.call('ZREM', KEYS[3], P.run_id)
if wake then
  redis.call('HSET', KEYS[1], 'attempts', attempts, 'abandons', tostring(math.min(abandons + 1, 4294967295)), 'wake_at', wake)
  redis.call('ZADD', KEYS[2], wake, P.run_id)
  return {'ok', 'rescheduled'}
end
redis.call('HSET', KEYS[1], 'attempts', attempts,
  'poisoned_at', P.now, 'poison_reason', 'max_claim_abandons_exceeded')
redis.call('HDEL', KEYS[1], 'wake_at')
redis.call('ZREM', KEYS[2], P.run_id)
redis.call('SADD', KEYS[4], P.run_id)
return {'ok', 'poisoned'}
