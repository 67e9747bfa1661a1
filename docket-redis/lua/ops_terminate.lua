-- ops_terminate.lua: terminate every live operation of one owner in ascending id order (each
-- taking the owner's next completion sequence), and with retire = "1" mark the owner retired,
-- in one step. Terminal records are untouched.
--
-- KEYS[1] owner hash   KEYS[2] owner's live zset (lex, ids)   KEYS[3] owner's done zset
-- KEYS[4] owner's listing zset
-- ARGV[1] JSON: from (comma-separated statuses termination leaves), to (its target status),
--   retire ("1" | "0"), now, keep (terminal records retained per owner), op_prefix, channel
-- ARGV[2] terminal outcome JSON
-- Returns {"ok", id, seq, id, seq, ...} | {"owner_retired"} | {"corrupt", detail}
-- A retired owner: retire answers {"ok"} and changes nothing, terminate is refused. Every live
-- record must be present and in the from-set (checked before the first write).

if redis.call('HGET', KEYS[1], 'retired') == '1' then
  if P.retire == '1' then
    return {'ok'}
  end
  return {'owner_retired'}
end
local ids = redis.call('ZRANGE', KEYS[2], 0, -1)
for _, id in ipairs(ids) do
  local status = redis.call('HGET', P.op_prefix .. id, 'status')
  if not status or not listed(P.from, status) then
    return {'corrupt', 'live operation ' .. id .. ' is ' .. tostring(status)}
  end
end
-- ===== writes: every check is above this line =====
local out = {'ok'}
for _, id in ipairs(ids) do
  local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
  -- The exact decimal as Redis stores it (tostring of a Lua number rounds large values).
  local seq_text = redis.call('HGET', KEYS[1], 'seq')
  redis.call('HSET', P.op_prefix .. id, 'status', P.to, 'outcome', ARGV[2],
    'seq', seq_text, 'completed_at', P.now)
  redis.call('ZADD', KEYS[3], seq, id)
  out[#out + 1] = id
  out[#out + 1] = seq_text
end
if #ids > 0 then
  redis.call('DEL', KEYS[2])
end
if P.retire == '1' then
  redis.call('HSET', KEYS[1], 'retired', '1')
end
if #ids > 0 then
  ops_evict(KEYS[3], KEYS[4], P.op_prefix, P.keep)
  redis.call('PUBLISH', P.channel, 'owner')
end
return out
