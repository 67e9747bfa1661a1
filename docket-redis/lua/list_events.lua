-- list_events.lua (read only): one page of events plus the retained bounds and the run's
-- event_seq, all from one snapshot (`docs/storage-contract.md`, “Reading events”).
--
-- KEYS[1] run hash   KEYS[2] events hash   KEYS[3] event seqs zset (lex)
-- ARGV[1] JSON: scope_kind, scope_owner, after (seq19), limit
-- Returns {"ok", event_seq, oldest seq19 | "", newest seq19 | "", seq19, JSON | false, ...} |
--         {"not_found"} | {"corrupt", detail}

if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'not_found'}
end
local row = redis.call('HMGET', KEYS[1], 'owner', 'event_seq')
if not row[1] or not row[2] then
  return {'corrupt', 'run hash lacks an operational field'}
end
if not visible(row[1]) then
  return {'not_found'}
end
local oldest = redis.call('ZRANGE', KEYS[3], 0, 0)
local newest = redis.call('ZRANGE', KEYS[3], -1, -1)
local out = {'ok', row[2], oldest[1] or '', newest[1] or ''}
for _, seq in ipairs(redis.call('ZRANGEBYLEX', KEYS[3], '(' .. P.after, '+', 'LIMIT', 0, tonumber(P.limit))) do
  out[#out + 1] = seq
  out[#out + 1] = redis.call('HGET', KEYS[2], seq)
end
return out
