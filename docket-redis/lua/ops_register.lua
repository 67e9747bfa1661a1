-- ops_register.lua: register one operation of one owner, insert-if-absent, with the
-- owner's retired flag and the admission limit decided in the same step.
--
-- KEYS[1] owner hash   KEYS[2] operation hash   KEYS[3] owner's live zset (lex, ids)
-- KEYS[4] owner's listing zset (lex, `display_name NUL id`)
-- ARGV[1] JSON: id, kind, status (the initial status), created_at, limit ("" = no limit)
-- ARGV[2] display name   ARGV[3] source label   ARGV[4] source JSON ("" = none)
-- Returns {"ok"} | {"owner_retired"} | {"already_registered"} | {"max_concurrent", active}
-- Checks, in the order of the registry rules: retired flag, id taken (any status), limit on
-- the owner's live operations. Then writes.

if redis.call('HGET', KEYS[1], 'retired') == '1' then
  return {'owner_retired'}
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  return {'already_registered'}
end
if P.limit ~= '' then
  local active = redis.call('ZCARD', KEYS[3])
  if active >= tonumber(P.limit) then
    return {'max_concurrent', tostring(active)}
  end
end
-- ===== writes: every check is above this line =====
redis.call('HSET', KEYS[2], 'kind', P.kind, 'name', ARGV[2], 'label', ARGV[3],
  'status', P.status, 'progress', '0', 'created_at', P.created_at)
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[2], 'source', ARGV[4])
end
redis.call('ZADD', KEYS[3], 0, P.id)
redis.call('ZADD', KEYS[4], 0, ARGV[2] .. '\0' .. P.id)
return {'ok'}
