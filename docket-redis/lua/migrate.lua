-- migrate.lua: brings a namespace written before the per-owner ready index (`ready_of`,
-- `ready_owners`; see the prelude) up to the current layout. Run once by every store at open;
-- a namespace already marked current, or with no ready run, costs one read and is left as is.
--
-- KEYS[1] layout string   KEYS[2] ready zset   KEYS[3] ready owners (lex zset)
-- ARGV[1] JSON: prefix, layout (the current layout version)
-- Returns {"ok", "current" | "empty" | "migrated", runs indexed}
-- There is no failing check. The rebuild copies every ready run into its owner's set with the
-- same score; it is idempotent (a store that already keeps the index rewrites nothing), and
-- atomic like every script, so writers never see a half-built index. A ready entry whose run
-- hash has no owner is left for claims to report as corrupt.

if redis.call('GET', KEYS[1]) == P.layout then
  return {'ok', 'current', '0'}
end
if redis.call('EXISTS', KEYS[2]) == 0 then
  return {'ok', 'empty', '0'}
end

-- ===== writes: every check is above this line =====
local indexed = 0
local entries = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
for i = 1, #entries, 2 do
  local owner = redis.call('HGET', P.prefix .. 'run:' .. entries[i], 'owner')
  if owner then
    redis.call('ZADD', ready_of(owner), entries[i + 1], entries[i])
    redis.call('ZADD', KEYS[3], 0, owner)
    indexed = indexed + 1
  end
end
redis.call('SET', KEYS[1], P.layout)
return {'ok', 'migrated', tostring(indexed)}
