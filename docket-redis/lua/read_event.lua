-- read_event.lua (read only): one event, or the newest retained one, with the run's
-- visibility checked in the same snapshot (`docs/storage-contract.md`, “Reading events”).
--
-- KEYS[1] run hash   KEYS[2] events hash   KEYS[3] event seqs zset
-- ARGV[1] JSON: scope_kind, scope_owner, seq (seq19, or "" for the newest)
-- Returns {"ok", seq19, event JSON} | {"ok"} (newest requested, none retained) |
--         {"not_found"} | {"missing", seq19} (indexed seq without a stored body)

if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'not_found'}
end
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then
  return {'corrupt', 'run hash lacks its owner'}
end
if not visible(owner) then
  return {'not_found'}
end
local seq = P.seq
if seq == '' then
  local newest = redis.call('ZRANGE', KEYS[3], -1, -1)
  if #newest == 0 then
    return {'ok'}
  end
  seq = newest[1]
end
local body = redis.call('HGET', KEYS[2], seq)
if body then
  return {'ok', seq, body}
end
if redis.call('ZSCORE', KEYS[3], seq) then
  return {'missing', seq}
end
return {'not_found'}
