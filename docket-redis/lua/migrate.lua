-- migrate.lua: brings a namespace written before the current layout up to it. Layout 2 added
-- the per-owner ready sets (`ready_of` / `ready_owners`) and the claim counts
-- (`claims_by_owner`; see the prelude); layout 3 the share summary (the `capped` and
-- `weighted` counts of the fair cursor hash; lua/set_share.lua). Run by every store at open;
-- a namespace already marked current, or with no ready run, no claimed run and no share,
-- costs a few reads and is left as is.
--
-- KEYS[1] layout string   KEYS[2] ready zset   KEYS[3] ready owners (lex zset)
-- KEYS[4] claims zset      KEYS[5] claims by owner hash
-- KEYS[6] tenant shares hash   KEYS[7] fair cursor hash
-- ARGV[1] JSON: prefix, layout (the current layout version)
-- Returns {"ok", "current" | "empty" | "migrated", entries indexed}
-- There is no failing check. Without a layout marker (layout 1) the rebuild copies every
-- ready run into its owner's set with the same score and recounts the claims per owner from
-- scratch; any older layout gets its share summary recounted from the stored shares. Both are
-- idempotent (a namespace that already keeps them ends up byte-identical), and atomic like
-- every script, so writers never see a half-built index. An entry whose run hash has no owner
-- is left for claims to report as corrupt.

local marker = redis.call('GET', KEYS[1])
if marker == P.layout then
  return {'ok', 'current', '0'}
end
local has_runs = redis.call('EXISTS', KEYS[2]) == 1 or redis.call('EXISTS', KEYS[4]) == 1
local shares = redis.call('HVALS', KEYS[6])
if not marker and not has_runs and #shares == 0 then
  return {'ok', 'empty', '0'}
end
local counts = {capped = 0, weighted = 0}
for _, text in ipairs(shares) do
  local class = share_class(text)
  if class ~= 'plain' then
    counts[class] = counts[class] + 1
  end
end
local summary = redis.call('HMGET', KEYS[7], 'capped', 'weighted', 'ring')

-- ===== writes: every check is above this line =====
local indexed = 0
if not marker then
  local entries = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
  local listed = 0
  for i = 1, #entries, 2 do
    local owner = redis.call('HGET', P.prefix .. 'run:' .. entries[i], 'owner')
    if owner then
      redis.call('ZADD', ready_of(owner), entries[i + 1], entries[i])
      listed = listed + redis.call('ZADD', KEYS[3], 0, owner)
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
  if summary[3] and listed > 0 then
    -- The owners' ring beside the cursor (lua/claim_fair.lua) lists the owners of KEYS[3]
    -- as they were, without those just added.
    redis.call('HDEL', KEYS[7], 'ring')
  end
end
for i, class in ipairs({'capped', 'weighted'}) do
  local count = counts[class]
  if count == 0 then
    if summary[i] then
      redis.call('HDEL', KEYS[7], class)
    end
  elseif summary[i] ~= tostring(count) then
    redis.call('HSET', KEYS[7], class, tostring(count))
  end
end
redis.call('SET', KEYS[1], P.layout)
return {'ok', 'migrated', tostring(indexed)}
