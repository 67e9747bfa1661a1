-- abandon_claim.lua: pre-execution hand-back (`docs/storage-contract.md`, “Handing claims back”;
-- `docs/state-machines.md`, “Operational transitions”), fenced on the token and checkpoint_seq;
-- decrements attempts (floored at 0), then reschedules or poisons.
--
-- KEYS[1] run hash   KEYS[2] ready zset   KEYS[3] claims zset   KEYS[4] poisoned set
-- ARGV[1] JSON: run_id, token, expected_seq, now, retry_at, mode ("poisoning" |
--         "non_poisoning"), max_abandons, prefix (derives the owner's ready
--         twin and the claim counts, see the prelude)
-- ARGV[2..32] (non_poisoning with backoff only): the wake for abandons_before = 0..30, computed
--         by the caller with docket_core::store::rules::ops::backoff_wake, so the backoff
--         formula stays in Rust; the script picks entry min(abandons_before, 30).
-- Returns {"ok", "rescheduled" | "poisoned" | "stale"} | {"corrupt", detail}
-- Checks: token and seq fences, stored counters and owner readable. Then writes (either way
-- the admission marker is cleared).

local row = redis.call('HMGET', KEYS[1], 'token', 'seq', 'attempts', 'abandons', 'owner')
if row[1] ~= P.token or row[2] ~= P.expected_seq then
  return {'ok', 'stale'}
end
local attempts, abandons = tonumber(row[3]), tonumber(row[4])
if not attempts or not abandons or not row[5] then
  return {'corrupt', 'run ' .. P.run_id .. ' has unreadable claim counters or no owner'}
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
redis.call('HDEL', KEYS[1], 'token', 'claimed_at', 'admitted_at')
claim_remove(KEYS[3], row[5], P.run_id)
if wake then
  redis.call('HSET', KEYS[1], 'attempts', attempts, 'abandons', tostring(math.min(abandons + 1, 4294967295)), 'wake_at', wake)
  ready_add(KEYS[2], row[5], P.run_id, wake)
  return {'ok', 'rescheduled'}
end
redis.call('HSET', KEYS[1], 'attempts', attempts,
  'poisoned_at', P.now, 'poison_reason', 'max_claim_abandons_exceeded')
redis.call('HDEL', KEYS[1], 'wake_at')
ready_remove(KEYS[2], row[5], P.run_id)
redis.call('SADD', KEYS[4], P.run_id)
return {'ok', 'poisoned'}
