-- save_graph.lua: store a graph version, idempotent by content (`docs/storage-contract.md`,
-- “Graph versions”). Identical bytes keep the original publication time; different bytes under the
-- same address are refused and never replace the stored ones.
--
-- KEYS[1] graph version hash   {docket:<ns>}:graph:<owner_part>:<enc(graph_id)>:<graph_hash>
-- KEYS[2] versions zset (lex)  {docket:<ns>}:graph_versions:<owner_part>:<enc(graph_id)>
-- KEYS[3] versions by time (lex) {docket:<ns>}:graphs_by_time
-- ARGV[1] JSON: published_at (µs), version_member (sortable(published_at):hash),
--         time_member (sortable(published_at) NUL owner NUL graph_id NUL graph_hash)
-- ARGV[2] canonical document bytes (hash already verified by the caller)
-- Returns {"ok", "stored" | "unchanged"} | {"graph_content_conflict"}
-- Check: stored bytes, if any, equal the given ones. Then writes.

local stored = redis.call('HGET', KEYS[1], 'bytes')
if stored then
  if stored == ARGV[2] then
    return {'ok', 'unchanged'}
  end
  return {'graph_content_conflict'}
end
-- ===== writes: every check is above this line =====
redis.call('HSET', KEYS[1], 'bytes', ARGV[2], 'published_at', P.published_at)
redis.call('ZADD', KEYS[2], 0, P.version_member)
redis.call('ZADD', KEYS[3], 0, P.time_member)
return {'ok', 'stored'}
