-- migrate.lua: brings a namespace written before layout 2 (the per-owner ready sets
-- `ready_of` / `ready_owners` and the claim counts `claims_by_owner`; see the prelude) up to
-- the current layout. Run by every store at open; a namespace already marked current, or with
-- no ready and no claimed run, costs one read or two and is left as is.
--
-- KEYS[1] layout string   KEYS[2] ready zset   KEYS[3] ready owners (lex zset)
-- KEYS[4] claims zset      KEYS[5] claims by owner hash
-- ARGV[1] JSON: prefix, layout (the current layout version)
-- Returns {"ok", "current" | "empty" | "migrated", runs indexed}
-- There is no failing check. The rebuild copies every ready run into its owner's set with the
-- same score and recounts the claims per owner from scratch; it is idempotent (a namespace
-- that already keeps the indexes ends up byte-identical), and atomic like every script, so
-- writers never see a half-built index. An entry whose run hash has no owner is left for
-- claims to report as corrupt.

if redis.call('GET', KEYS[1]) == P.layout then
  return {'ok', 'current', '0'}
end
if redis.call('EXISTS', KEYS[2]) == 0 and redis.call('EXISTS', KEYS[4]) == 0 then
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
redis.call('DEL', KEYS[5])
for _, id in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
  local owner = redis.call('HGET', P.prefix .. 'run:' .. id, 'owner')
  if owner then
    redis.call('HINCRBY', KEYS[5], owner, 1)
    indexed = indexed + 1
  end
end
redis.call('SET', KEYS[1], P.layout)
return {'ok', 'migrated', tostring(indexed)}
