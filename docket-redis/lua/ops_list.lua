-- ops_list.lua: one page of an owner's records, ascending by display name (bytes) then id.
-- Read-only.
--
-- KEYS[1] owner's listing zset (lex, `display_name NUL id`)
-- ARGV[1] JSON: count (rows to read: the page limit plus one), op_prefix
-- ARGV[2] the lexicographic lower bound: "-" for the first page, "(" .. name NUL id after a
--   cursor
-- Returns {"ok", {id, field, value, ...}, ...} in listing order.

local members = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[2], '+', 'LIMIT', 0, tonumber(P.count))
local out = {'ok'}
for _, member in ipairs(members) do
  local id = string.match(member, '%z([^%z]*)$')
  local record = redis.call('HGETALL', P.op_prefix .. id)
  table.insert(record, 1, id)
  out[#out + 1] = record
end
return out
