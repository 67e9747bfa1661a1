-- ops_transition.lua: one transition of one operation, as one conditional write on the
-- action's from-set. The from-set, the target and the effects are bound by the caller from
-- the registry's state-machine table; this script decides nothing about the state machine.
--
-- KEYS[1] owner hash   KEYS[2] operation hash   KEYS[3] owner's live zset
-- KEYS[4] owner's done zset (ids scored by completion sequence)   KEYS[5] owner's listing zset
-- ARGV[1] JSON: id, from (comma-separated statuses), to ("" = unchanged), progress ("1" adds
--   one tick), start ("1" stamps started_at), mint ("1": the action ends the operation), now,
--   keep (terminal records retained per owner), op_prefix (operation hash key minus the id),
--   channel (completion hints)
-- ARGV[2] terminal outcome JSON ("" unless mint)
-- Returns {"ok", {field, value, ...}} (the record after the write) | {"owner_retired"} |
--   {"not_found"} | {"invalid_transition", current status}
-- Checks: retired flag, record present, status in the from-set. Then writes: an ending
-- transition takes the owner's next completion sequence, leaves the live set, joins the done
-- set, evicts beyond retention and publishes a hint.

if redis.call('HGET', KEYS[1], 'retired') == '1' then
  return {'owner_retired'}
end
local status = redis.call('HGET', KEYS[2], 'status')
if not status then
  return {'not_found'}
end
if not listed(P.from, status) then
  return {'invalid_transition', status}
end
-- ===== writes: every check is above this line =====
if P.to ~= '' then
  redis.call('HSET', KEYS[2], 'status', P.to)
end
if P.progress == '1' then
  redis.call('HINCRBY', KEYS[2], 'progress', 1)
end
if P.start == '1' then
  redis.call('HSET', KEYS[2], 'started_at', P.now)
end
if P.mint == '1' then
  local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
  -- The exact decimal as Redis stores it (tostring of a Lua number rounds large values).
  local seq_text = redis.call('HGET', KEYS[1], 'seq')
  redis.call('HSET', KEYS[2], 'outcome', ARGV[2], 'seq', seq_text, 'completed_at', P.now)
  redis.call('ZREM', KEYS[3], P.id)
  redis.call('ZADD', KEYS[4], seq, P.id)
end
local record = redis.call('HGETALL', KEYS[2])
if P.mint == '1' then
  ops_evict(KEYS[4], KEYS[5], P.op_prefix, P.keep)
  redis.call('PUBLISH', P.channel, P.id)
end
return {'ok', record}
