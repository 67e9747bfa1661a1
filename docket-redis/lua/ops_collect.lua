-- ops_collect.lua: drain every terminal record of one owner, in completion order.
--
-- KEYS[1] owner hash   KEYS[2] owner's done zset   KEYS[3] owner's listing zset
-- ARGV[1] JSON: op_prefix (operation hash key minus the id)
-- Returns {"ok", {id, field, value, ...}, ...} (ascending completion sequence) |
--   {"owner_retired"} | {"corrupt", detail}
-- Checks: the owner is not retired, every indexed record exists. Then they are deleted (Rust
-- decodes them after the fact: a record that exists but does not decode is reported Corrupt
-- once it is already drained).

if redis.call('HGET', KEYS[1], 'retired') == '1' then
  return {'owner_retired'}
end
local ids = redis.call('ZRANGE', KEYS[2], 0, -1)
local out = {'ok'}
for _, id in ipairs(ids) do
  local record = redis.call('HGETALL', P.op_prefix .. id)
  if #record == 0 then
    return {'corrupt', 'terminal operation ' .. id .. ' has no record'}
  end
  table.insert(record, 1, id)
  out[#out + 1] = record
end
-- ===== writes: every check is above this line =====
for i = 2, #out do
  local record = out[i]
  local id = record[1]
  for f = 2, #record - 1, 2 do
    if record[f] == 'name' then
      redis.call('ZREM', KEYS[3], record[f + 1] .. '\0' .. id)
    end
  end
  redis.call('DEL', P.op_prefix .. id)
end
redis.call('DEL', KEYS[2])
return out
