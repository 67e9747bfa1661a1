-- set_share.lua: stores one tenant share and keeps the share summary in step with it.
--
-- KEYS[1] tenant shares hash (tenant id → "<weight>:<cap>", cap empty = none)
-- KEYS[2] fair cursor hash, whose `capped` and `weighted` fields count the stored shares of
--         each class but "plain" (`share_class` in the prelude; a field at 0 is removed)
-- ARGV[1] JSON: tenant (tenant id), share (its encoded share)
-- Returns {"ok"}
-- The summary lets a tenant-fair claim of one run learn with the cursor, in the same read,
-- whether any cap exists (then it walks) and whether any weight differs from 1 (then it reads
-- the cursor owner's share); without it, it would read every visited owner's share. Replacing
-- a share moves the counts by its old and its new class, so a set costs the same whatever the
-- number of tenants. Written only here (and rebuilt by lua/migrate.lua).

local old = redis.call('HGET', KEYS[1], P.tenant)
local before, after = share_class(old), share_class(P.share)

-- ===== writes: every check is above this line =====
redis.call('HSET', KEYS[1], P.tenant, P.share)
if before ~= after then
  if before ~= 'plain' and redis.call('HINCRBY', KEYS[2], before, -1) <= 0 then
    redis.call('HDEL', KEYS[2], before)
  end
  if after ~= 'plain' then
    redis.call('HINCRBY', KEYS[2], after, 1)
  end
end
return {'ok'}
