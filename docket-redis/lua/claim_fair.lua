-- claim_fair.lua: atomically select and lease (or poison) at most `limit` due runs in the
-- tenant-fair order (`docs/claim-order.md`, “Tenant-fair claiming”; order of
-- docket_core::store::rules::tenant_fair), counting caps and moving the cursor in the same
-- step. Scripts run one at a time, so fair claims are serialized with each other for free:
-- two claimers can never both see room under a cap.
--
-- KEYS[1] ready zset (score wake_at µs)   KEYS[2] claims zset (score claimed_at µs)
-- KEYS[3] poisoned set                     KEYS[4] ready owners (lex zset of scope keys)
-- KEYS[5] tenant shares hash (tenant id → "<weight>:<cap>", cap empty = none)
-- KEYS[6] fair cursor hash (owner = scope key, taken)
-- KEYS[7] claims by owner hash (scope key → claimed runs; see the prelude)
-- Run hashes (P.prefix .. 'run:' .. id) and the per-owner ready sets (`ready_of` in the
-- prelude) are derived; they share the namespace hash tag.
-- ARGV[1] JSON: prefix, policy ("tenant_fair"), now, cutoff (expired means claimed_at <
--         cutoff), limit, max_attempts, preference ("ready" | "expired" | "")
-- ARGV[2..] `limit` claim tokens minted by the caller; the i-th lease takes the i-th token.
-- Returns {"ok", outcome...} exactly as claim_due.lua | {"corrupt", detail} (a stored share,
--         the cursor or an index entry that does not decode; nothing written)
-- Selection: the owners with ready runs are visited from the cursor in round-robin order —
-- the cursor's owner, then the owner keys after it, then those before it, each range in byte
-- order as the lex zset keeps it (Lua never compares strings: Redis may set a collating
-- locale). Each owner offers its oldest due runs (its `ready_of` set is ordered by
-- (wake_at, run_id)), at most `cap - claimed` of them when capped, where `claimed` is the
-- owner's count of members of the claims zset (expired ones included). A candidate's rank is
-- (round, visit position, i) with round = (i + offset - 1) div weight, offset = min(taken,
-- weight) for the cursor's owner; the visit position stands for (turn, owner key). The walk
-- stops once round 0 alone holds `limit` candidates: owners visited later rank after all of
-- them. Then [oldest expired] ++ ready by rank ++ [other expired], cut to `limit`; with
-- limit 1 and a "ready" preference the first ready candidate when there is one. The cursor
-- becomes the owner and `taken` of the last ready candidate selected.
-- The checks and writes that follow are lua/claim_apply.lua, appended when loading.

local limit = tonumber(P.limit)
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. P.cutoff, 'LIMIT', 0, limit)

local U32_MAX = 4294967295

-- A positive decimal u32, or nil.
local function positive(text)
  if not text or not string.match(text, '^%d+$') or #text > 10 then
    return nil
  end
  local n = tonumber(text)
  if n < 1 or n > U32_MAX then
    return nil
  end
  return n
end

local stored = redis.call('HMGET', KEYS[6], 'owner', 'taken')
local cur_owner, cur_taken = nil, nil
if stored[1] or stored[2] then
  cur_owner, cur_taken = stored[1], positive(stored[2])
  if not cur_owner or not cur_taken then
    return {'corrupt', 'the tenant-fair cursor is not an owner and a positive count'}
  end
end

-- Weight and cap (nil = none) of an owner; tenantless runs and tenants without a stored
-- share have weight 1 and no cap. Returns nil for a share that does not decode.
local function share_of(owner)
  if owner == '' then
    return 1, nil
  end
  local text = redis.call('HGET', KEYS[5], owner)
  if not text then
    return 1, nil
  end
  local w, c = string.match(text, '^(%d+):(%d*)$')
  local weight = positive(w)
  if not weight then
    return nil
  end
  if c == '' then
    return weight, nil
  end
  local cap = positive(c)
  if not cap then
    return nil
  end
  return weight, cap
end

-- Runs of an owner claimed right now (expired claims included), as the prelude's claim
-- helpers count them; read only for a capped owner.
local function claimed_of(owner)
  return tonumber(redis.call('HGET', KEYS[7], owner)) or 0
end

local ranked, round0, position = {}, 0, 0
-- Visited owners without any ready run: dropped from KEYS[4] after the checks.
local emptied = {}

-- Offers one owner's candidates; returns an error detail for a share that does not decode.
local function visit(owner)
  position = position + 1
  local weight, cap = share_of(owner)
  if not weight then
    return 'the tenant share of ' .. owner .. ' is not "<weight>:<cap>"'
  end
  local offered = limit
  if cap then
    offered = math.min(offered, cap - claimed_of(owner))
  end
  if offered <= 0 then
    return nil
  end
  local offset = 0
  if owner == cur_owner then
    offset = math.min(cur_taken, weight)
  end
  local ids = redis.call('ZRANGEBYSCORE', ready_of(owner), '-inf', P.now, 'LIMIT', 0, offered)
  if #ids == 0 and redis.call('EXISTS', ready_of(owner)) == 0 then
    emptied[#emptied + 1] = owner
  end
  for i, id in ipairs(ids) do
    local effective = i + offset
    local round = math.floor((effective - 1) / weight)
    if round == 0 then
      round0 = round0 + 1
    end
    ranked[#ranked + 1] = {
      round = round, position = position, i = i, id = id, owner = owner,
      taken = (effective - 1) % weight + 1,
    }
  end
  return nil
end

-- Visits the owners of a lex range in byte order, until round 0 holds `limit` candidates.
local OWNER_BATCH = 64
local function walk(min, max)
  while round0 < limit do
    local owners = redis.call('ZRANGEBYLEX', KEYS[4], min, max, 'LIMIT', 0, OWNER_BATCH)
    for _, owner in ipairs(owners) do
      local bad = visit(owner)
      if bad or round0 >= limit then
        return bad
      end
    end
    if #owners < OWNER_BATCH then
      return nil
    end
    min = '(' .. owners[#owners]
  end
  return nil
end

local bad
if cur_owner then
  if redis.call('ZSCORE', KEYS[4], cur_owner) then
    bad = visit(cur_owner)
  end
  bad = bad or walk('(' .. cur_owner, '+') or walk('-', '(' .. cur_owner)
else
  bad = walk('-', '+')
end
if bad then
  return {'corrupt', bad}
end

table.sort(ranked, function(a, b)
  if a.round ~= b.round then
    return a.round < b.round
  end
  if a.position ~= b.position then
    return a.position < b.position
  end
  return a.i < b.i
end)

local sequence = {}
local function push_ready()
  for _, r in ipairs(ranked) do
    if #sequence >= limit then
      return
    end
    sequence[#sequence + 1] = {class = 'ready', id = r.id, owner = r.owner, taken = r.taken}
  end
end
if limit == 1 and P.preference == 'ready' and #ranked > 0 then
  push_ready()
else
  if expired[1] then
    sequence[1] = {class = 'expired', id = expired[1]}
  end
  push_ready()
  for j = 2, #expired do
    sequence[#sequence + 1] = {class = 'expired', id = expired[j]}
  end
end

local selected, cursor = {}, nil
for j = 1, math.min(limit, #sequence) do
  selected[j] = sequence[j]
  if sequence[j].class == 'ready' then
    cursor = {owner = sequence[j].owner, taken = sequence[j].taken}
  end
end
