-- commit_claimed.lua: a moment committed by the claim holder under the double fence
-- (`docs/storage-contract.md`, “commit_claimed”; `docs/state-machines.md`,
-- “Operational transitions”).
--
-- KEYS[1] run hash          KEYS[2] events hash       KEYS[3] event seqs zset
-- KEYS[4] events by time    KEYS[5] ready zset        KEYS[6] claims zset
-- KEYS[7] poisoned set      KEYS[8] terminal zset
-- ARGV[1] JSON: run_id, scope_kind, scope_owner, graph_id, graph_hash, started_at (identity),
--         expected_seq, token, allowed_from (stored statuses that may become `status`,
--         comma-separated, decided in Rust by RunStatus::can_become), status, seq, event_seq,
--         step, updated_at, finished_at ("" = none), ckpt_type, retain ("1" keeps the claim),
--         wake_at ("" = no wake; ignored when retaining), attempts, abandons, poisoned_at and
--         poison_reason ("" = none) — the row's operational state after the commit, computed in
--         Rust by the transition kernel —, now, terminal ("1"/"0"), notify ("1"/"0"), channel,
--         namespace, prefix (derives the owner's ready twin and the claim counts, see the
--         prelude), keep_admission ("1" keeps the admission marker, else it is cleared;
--         decided in Rust by Commit::keeps_admission)
-- ARGV[2] run document (JSON)
-- ARGV[3..] event pairs: seq19, canonical event JSON
-- Returns {"ok"} | {"not_found"} | {"invalid_transition", reason} | {"stale"} |
--         {"event_conflict", seq19} | {"corrupt", detail}
-- Checks, in order: visible in scope → immutable identity → seq fence → token fence →
-- status matrix → stored events agree. Then writes: document, counters and poison reset,
-- schedule, admission marker, events, wake hint.

if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'not_found'}
end
local row = redis.call('HMGET', KEYS[1],
  'owner', 'graph_id', 'graph_hash', 'started_at', 'seq', 'token', 'status')
if not row[1] or not row[2] or not row[3] or not row[4] or not row[5] or not row[7] then
  return {'corrupt', 'run hash lacks an operational field'}
end
if not visible(row[1]) then
  return {'not_found'}
end
if row[2] ~= P.graph_id or row[3] ~= P.graph_hash or row[4] ~= P.started_at then
  return {'invalid_transition', "the proposal changes the run's immutable identity (id, graph or started_at)"}
end
if row[5] ~= P.expected_seq then
  return {'stale'}
end
if row[6] ~= P.token then
  return {'stale'}
end
if not listed(P.allowed_from, row[7]) then
  return {'invalid_transition', 'status ' .. row[7] .. ' cannot become ' .. P.status}
end
local conflict = event_conflict(KEYS[2], 3)
if conflict then
  return {'event_conflict', conflict}
end

-- ===== writes: every check is above this line =====

redis.call('HSET', KEYS[1],
  'doc', ARGV[2],
  'status', P.status,
  'seq', P.seq,
  'event_seq', P.event_seq,
  'step', P.step,
  'updated_at', P.updated_at,
  'ckpt_type', P.ckpt_type,
  'attempts', P.attempts,
  'abandons', P.abandons)
if P.poisoned_at == '' then
  redis.call('HDEL', KEYS[1], 'poisoned_at', 'poison_reason')
  redis.call('SREM', KEYS[7], P.run_id)
else
  redis.call('HSET', KEYS[1], 'poisoned_at', P.poisoned_at, 'poison_reason', P.poison_reason)
  redis.call('SADD', KEYS[7], P.run_id)
end
if P.finished_at ~= '' then
  redis.call('HSET', KEYS[1], 'finished_at', P.finished_at)
else
  redis.call('HDEL', KEYS[1], 'finished_at')
end
if P.keep_admission ~= '1' then
  redis.call('HDEL', KEYS[1], 'admitted_at')
end
if P.retain == '1' then
  redis.call('HSET', KEYS[1], 'claimed_at', P.now)
  redis.call('HDEL', KEYS[1], 'wake_at')
  ready_remove(KEYS[5], row[1], P.run_id)
  claim_add(KEYS[6], row[1], P.run_id, P.now)
else
  redis.call('HDEL', KEYS[1], 'token', 'claimed_at')
  claim_remove(KEYS[6], row[1], P.run_id)
  if P.wake_at ~= '' then
    redis.call('HSET', KEYS[1], 'wake_at', P.wake_at)
    ready_add(KEYS[5], row[1], P.run_id, P.wake_at)
  else
    redis.call('HDEL', KEYS[1], 'wake_at')
    ready_remove(KEYS[5], row[1], P.run_id)
  end
end
if P.terminal == '1' then
  redis.call('ZADD', KEYS[8], P.updated_at, P.run_id)
end
append_events(KEYS[2], KEYS[3], KEYS[4], P.run_id, P.now, 3)
if P.notify == '1' then
  redis.call('PUBLISH', P.channel, P.namespace)
end
return {'ok'}
