-- claim_due.lua: atomically select and lease (or poison) at most `limit` due runs
-- (`docs/claim-order.md`; `docs/state-machines.md`, “Operational transitions”; order of
-- docket_core::store::rules::claim_order).
--
-- KEYS[1] ready zset (score wake_at µs)   KEYS[2] claims zset (score claimed_at µs)
-- KEYS[3] poisoned set
-- Run hashes (P.prefix .. 'run:' .. run_id), the owners' ready sets and the claim counts
-- (kept in step by the prelude's helpers) are derived; they share the namespace hash tag, so
-- they live in the slot of the declared keys.
-- ARGV[1] JSON: prefix, policy ("oldest"), now, cutoff (now − orphan_ttl in µs; expired means
--         claimed_at < cutoff), limit, max_attempts, preference ("ready" | "expired" | "")
-- ARGV[2..] `limit` claim tokens minted by the caller (UUID v4; a script cannot make
--         randomness). The i-th lease takes the i-th token.
-- Returns {"ok", outcome...} where outcome is
--           {"lease", run_id, owner, graph_id, graph_hash, seq, token, attempt,
--            document (nil when the run hash has none)} or
--           {"poison", run_id}, in selection order
--         | {"corrupt", detail} (an index entry contradicts its run hash; nothing written)
-- Selection: ready = wake_at ≤ now (inclusive), expired = claimed_at < cutoff (strict). Both
-- lists come from their sorted sets already ordered by (eligible_at, run_id); merging them by
-- (eligible_at, class) with ready before expired on ties yields the order
-- (eligible_at, class, run_id) without comparing strings in Lua. With limit ≥ 2 and both
-- classes present, each class head is reserved; with limit 1 the preferred class goes first
-- and falls through when empty. A candidate with attempts ≥ max_attempts is poisoned.
-- The checks and writes that follow the selection are lua/claim_apply.lua, appended to this
-- body when the script is loaded (shared with lua/claim_fair.lua).

local limit = tonumber(P.limit)
local ready = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', P.now, 'WITHSCORES', 'LIMIT', 0, limit)
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. P.cutoff, 'WITHSCORES', 'LIMIT', 0, limit)

local merged = {}
local r, e = 1, 1
while r <= #ready or e <= #expired do
  local take_ready
  if r > #ready then
    take_ready = false
  elseif e > #expired then
    take_ready = true
  else
    take_ready = tonumber(ready[r + 1]) <= tonumber(expired[e + 1])
  end
  if take_ready then
    merged[#merged + 1] = {class = 'ready', id = ready[r]}
    r = r + 2
  else
    merged[#merged + 1] = {class = 'expired', id = expired[e]}
    e = e + 2
  end
end

local function first_of(class)
  for i, c in ipairs(merged) do
    if c.class == class then
      return i
    end
  end
  return nil
end

local selected = {}
if #merged > 0 then
  if limit == 1 then
    local pick
    if P.preference == 'ready' then
      pick = first_of('ready') or first_of('expired')
    elseif P.preference == 'expired' then
      pick = first_of('expired') or first_of('ready')
    else
      pick = 1
    end
    selected[1] = merged[pick]
  else
    local chosen, count = {}, 0
    local head_ready, head_expired = first_of('ready'), first_of('expired')
    if head_ready and head_expired then
      chosen[head_ready], chosen[head_expired], count = true, true, 2
    end
    for i = 1, #merged do
      if count >= limit then
        break
      end
      if not chosen[i] then
        chosen[i], count = true, count + 1
      end
    end
    for i = 1, #merged do
      if chosen[i] then
        selected[#selected + 1] = merged[i]
      end
    end
  end
end

-- Oldest never moves the tenant-fair cursor, nor visits owners.
local cursor = nil
local emptied = {}
