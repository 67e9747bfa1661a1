-- claim_apply.lua: the second half of both claim scripts (lua/claim_due.lua and
-- lua/claim_fair.lua, which it is appended to): check every selected candidate against its
-- run hash, then lease or poison each one, and store the tenant-fair cursor.
--
-- In: `selected` (list of {class = "ready" | "expired", id, owner = scope key or nil,
-- key = the owner's `ready_of` set or nil}, in selection order), `cursor` ({owner, taken,
-- ring = the owners' ring to store or nil} or nil: leave the stored cursor alone) and
-- `emptied` (owner keys whose `ready_of` set is empty,
-- to drop from `ready_owners` when anything was selected; nil for none),
-- P.policy ("tenant_fair" stamps the admission marker), KEYS[1] ready, KEYS[2] claims,
-- KEYS[3] poisoned, KEYS[6] fair cursor hash (tenant-fair only), ARGV[2..] the tokens.
-- Out: the reply documented in the header of the claim script.

-- Checks: every selected entry must be a healthy running run of its class.
local max_attempts = tonumber(P.max_attempts)
for _, c in ipairs(selected) do
  local row = redis.call('HMGET', P.prefix .. 'run:' .. c.id,
    'status', 'token', 'poisoned_at', 'attempts', 'owner', 'graph_id', 'graph_hash', 'seq',
    'admitted_at', 'doc')
  if row[1] ~= 'running' or row[3] or not tonumber(row[4]) or not row[5] or not row[6]
      or not row[7] or not row[8] or (c.class == 'ready') == (row[2] ~= false)
      or (c.owner and c.owner ~= row[5]) then
    return {'corrupt', 'claim index entry ' .. c.id .. ' (' .. c.class .. ') contradicts its run hash'}
  end
  c.row = row
end

-- ===== writes: every check is above this line =====
local out = {'ok'}
local next_token = 2
for _, c in ipairs(selected) do
  local key = P.prefix .. 'run:' .. c.id
  local attempts = tonumber(c.row[4])
  if attempts < max_attempts then
    local token = ARGV[next_token]
    next_token = next_token + 1
    local attempt = tostring(attempts + 1)
    if P.policy == 'tenant_fair' and not c.row[9] then
      -- A steal or a cooperative re-claim continues the admission it already has (read
      -- above, so the stamp costs no call of its own).
      redis.call('HSET', key, 'token', token, 'claimed_at', P.now, 'attempts', attempt,
        'admitted_at', P.now)
    else
      redis.call('HSET', key, 'token', token, 'claimed_at', P.now, 'attempts', attempt)
    end
    redis.call('HDEL', key, 'wake_at')
    if c.key then
      -- A tenant-fair ready candidate carries its owner's ready set (its owner is checked
      -- above): ready_remove without deriving the key again.
      if redis.call('ZREM', KEYS[1], c.id) == 1 then
        redis.call('ZREM', c.key, c.id)
      end
    else
      ready_remove(KEYS[1], c.row[5], c.id)
    end
    claim_add(KEYS[2], c.row[5], c.id, P.now)
    -- The run's document goes back with its lease (read in the check above), so the claimer
    -- need not read it again (`ClaimLease::run`).
    out[#out + 1] = {'lease', c.id, c.row[5], c.row[6], c.row[7], c.row[8], token, attempt,
      c.row[10]}
  else
    redis.call('HDEL', key, 'token', 'claimed_at', 'wake_at', 'admitted_at')
    redis.call('HSET', key, 'poisoned_at', P.now, 'poison_reason', 'max_claim_attempts_exceeded')
    ready_remove(KEYS[1], c.row[5], c.id)
    claim_remove(KEYS[2], c.row[5], c.id)
    redis.call('SADD', KEYS[3], c.id)
    out[#out + 1] = {'poison', c.id}
  end
end
-- Only a claim that selected something drops emptied owners: a claim that finds nothing to
-- do changes nothing (the contract), and the owners wait for the next one that does.
if #selected > 0 and emptied then
  local dropped = 0
  for _, owner in ipairs(emptied) do
    dropped = dropped + redis.call('ZREM', P.prefix .. 'ready_owners', owner)
  end
  if dropped > 0 then
    -- The ring beside the cursor (lua/claim_fair.lua) lists the dropped owners.
    redis.call('HDEL', KEYS[6], 'ring')
  end
end
if cursor then
  if cursor.ring then
    redis.call('HSET', KEYS[6], 'owner', cursor.owner, 'taken', tostring(cursor.taken),
      'ring', cursor.ring)
  else
    redis.call('HSET', KEYS[6], 'owner', cursor.owner, 'taken', tostring(cursor.taken))
  end
end
return out
