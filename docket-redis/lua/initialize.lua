-- initialize.lua: insert a freshly initialized run with its events (`docs/storage-contract.md`,
-- “initialize”).
--
-- KEYS[1] run hash            {docket:<ns>}:run:<run_id>
-- KEYS[2] events hash         {docket:<ns>}:events:<run_id>
-- KEYS[3] event seqs zset     {docket:<ns>}:eseq:<run_id>
-- KEYS[4] events by time      {docket:<ns>}:events_by_time
-- KEYS[5] ready zset          {docket:<ns>}:ready
-- KEYS[6] all-runs index      {docket:<ns>}:runs
-- KEYS[7] owner runs index    {docket:<ns>}:runs_of:<owner_part>
-- KEYS[8] graph version hash  {docket:<ns>}:graph:<owner_part>:<enc(graph_id)>:<graph_hash>
-- ARGV[1] JSON: prefix (derives the owner's ready twin, see the prelude), run_id, owner
--         (scope key), graph_id, graph_hash, status, seq, event_seq, step, started_at,
--         updated_at, wake_at, ckpt_type, now (event inserted_at), notify ("1"/"0"), channel,
--         namespace
-- ARGV[2] run document (JSON)
-- ARGV[3..] event pairs: seq19, canonical event JSON
-- Returns {"ok"} | {"not_found"} (graph absent in the owner scope) | {"conflict"} (run id
--         taken in any scope) | {"event_conflict", seq19}
-- Checks, in order: graph exists → run id unused → stored events agree. Then writes.

if redis.call('HEXISTS', KEYS[8], 'bytes') == 0 then
  return {'not_found'}
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {'conflict'}
end
local conflict = event_conflict(KEYS[2], 3)
if conflict then
  return {'event_conflict', conflict}
end

-- ===== writes: every check is above this line =====

redis.call('HSET', KEYS[1],
  'doc', ARGV[2],
  'owner', P.owner,
  'graph_id', P.graph_id,
  'graph_hash', P.graph_hash,
  'status', P.status,
  'seq', P.seq,
  'event_seq', P.event_seq,
  'step', P.step,
  'started_at', P.started_at,
  'updated_at', P.updated_at,
  'wake_at', P.wake_at,
  'attempts', '0',
  'abandons', '0',
  'ckpt_type', P.ckpt_type)
ready_add(KEYS[5], P.owner, P.run_id, P.wake_at)
local member = sortable_time(P.started_at) .. ':' .. P.run_id
redis.call('ZADD', KEYS[6], 0, member)
redis.call('ZADD', KEYS[7], 0, member)
redis.call('HINCRBY', KEYS[8], 'refs', 1)
append_events(KEYS[2], KEYS[3], KEYS[4], P.run_id, P.now, 3)
if P.notify == '1' then
  redis.call('PUBLISH', P.channel, P.namespace)
end
return {'ok'}
