-- prune.lua: one retention pass (`docs/storage-contract.md`, “Retention”), at most `batch`
-- deletions per category, each category oldest first with the reference store's tie-breaks. Scripts
-- run one at a time, so two passes can never interleave.
--
-- KEYS[1] events by time zset (member run_id NUL seq19, score inserted_at µs)
-- KEYS[2] terminal zset (member run_id, score updated_at µs)
-- KEYS[3] graph versions by time (lex: sortable(published_at) NUL owner NUL graph_id NUL hash)
-- KEYS[4] all-runs index (lex)
-- Other keys are derived from P.prefix and share the namespace hash tag.
-- ARGV[1] JSON: prefix, event_cutoff, run_cutoff (µs; deletion is strictly older), batch,
--         keep (newest versions kept per graph id), terminal_statuses (comma-separated,
--         decided in Rust)
-- Returns {"ok", events_deleted, runs_deleted, cascade_events_deleted, graphs_deleted}
-- There is no failing check; an index entry whose run is not terminal is skipped, never
-- deleted.

local batch, keep = tonumber(P.batch), tonumber(P.keep)

-- ===== writes: every check is above this line =====

-- 1. Events older than the event cutoff, oldest first by (inserted_at, run_id, seq), any run
--    status.
local events_deleted = 0
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. P.event_cutoff, 'LIMIT', 0, batch)) do
  local run_id, seq = string.sub(m, 1, -21), string.sub(m, -19)
  redis.call('HDEL', P.prefix .. 'events:' .. run_id, seq)
  redis.call('ZREM', P.prefix .. 'eseq:' .. run_id, seq)
  redis.call('ZREM', KEYS[1], m)
  events_deleted = events_deleted + 1
end

-- 2. Terminal runs last updated before the run cutoff, oldest first by (updated_at, run_id),
--    with their remaining events.
local runs_deleted, cascade = 0, 0
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. P.run_cutoff, 'LIMIT', 0, batch)) do
  local key = P.prefix .. 'run:' .. id
  local row = redis.call('HMGET', key, 'owner', 'graph_id', 'graph_hash', 'started_at', 'status')
  if row[1] and row[2] and row[3] and row[4] and row[5] and listed(P.terminal_statuses, row[5]) then
    local seqs_key = P.prefix .. 'eseq:' .. id
    for _, seq in ipairs(redis.call('ZRANGE', seqs_key, 0, -1)) do
      redis.call('ZREM', KEYS[1], id .. '\0' .. seq)
      cascade = cascade + 1
    end
    redis.call('DEL', key, P.prefix .. 'events:' .. id, seqs_key)
    redis.call('ZREM', KEYS[2], id)
    local member = sortable_time(row[4]) .. ':' .. id
    redis.call('ZREM', KEYS[4], member)
    redis.call('ZREM', P.prefix .. 'runs_of:' .. owner_part(row[1]), member)
    local graph = P.prefix .. 'graph:' .. owner_part(row[1]) .. ':' .. enc(row[2]) .. ':' .. row[3]
    if redis.call('HEXISTS', graph, 'refs') == 1 then
      redis.call('HINCRBY', graph, 'refs', -1)
    end
    runs_deleted = runs_deleted + 1
  end
end

-- 3. Graph versions no run references and that rank below the newest `keep` of their graph id
--    by (published_at, graph_hash), oldest first by (published_at, owner, graph_id, hash).
--    Walking oldest first, a deletion never changes the rank of a version still to be visited
--    in the same graph id (ranks count newer versions only).
local graphs_deleted = 0
for _, m in ipairs(redis.call('ZRANGE', KEYS[3], '-', '+', 'BYLEX')) do
  if graphs_deleted >= batch then
    break
  end
  local a = string.find(m, '\0', 1, true)
  local b = string.find(m, '\0', a + 1, true)
  local c = string.find(m, '\0', b + 1, true)
  local owner_key = string.sub(m, a + 1, b - 1)
  local graph_id, hash = string.sub(m, b + 1, c - 1), string.sub(m, c + 1)
  local owner = ''
  if owner_key ~= '0' then
    owner = string.sub(owner_key, 2)
  end
  local suffix = owner_part(owner) .. ':' .. enc(graph_id)
  local versions_key = P.prefix .. 'graph_versions:' .. suffix
  local version = string.sub(m, 1, a - 1) .. ':' .. hash
  local graph = P.prefix .. 'graph:' .. suffix .. ':' .. hash
  local rank = redis.call('ZREVRANK', versions_key, version)
  if rank and rank >= keep and (tonumber(redis.call('HGET', graph, 'refs')) or 0) <= 0 then
    redis.call('DEL', graph)
    redis.call('ZREM', versions_key, version)
    redis.call('ZREM', KEYS[3], m)
    graphs_deleted = graphs_deleted + 1
  end
end

return {'ok', tostring(events_deleted), tostring(runs_deleted), tostring(cascade), tostring(graphs_deleted)}
