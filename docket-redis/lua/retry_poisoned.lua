-- retry_poisoned.lua: recover a poisoned run (`docs/storage-contract.md`, “Handing claims back”;
-- `docs/state-machines.md`, “Operational transitions”). Changes no document and consumes no
-- sequence; returns the stored document for the caller to decode.
--
-- KEYS[1] run hash   KEYS[2] ready zset   KEYS[3] poisoned set
-- ARGV[1] JSON: run_id, scope_kind, scope_owner, now, terminal_statuses (comma-separated,
--         decided in Rust by RunStatus::is_terminal), channel, namespace, prefix (derives
--         the owner's ready twin, see the prelude)
-- Returns {"ok", "recovered" | "unchanged", document} | {"not_found"} | {"inactive_run"} |
--         {"corrupt", detail}
-- Checks, in order: visible in scope → not terminal (even if poisoned) → poisoned.
-- Then writes: claim, poison and admission marker cleared, counters zeroed, wake now, wake hint.

if redis.call('EXISTS', KEYS[1]) == 0 then
  return {'not_found'}
end
local row = redis.call('HMGET', KEYS[1], 'owner', 'status', 'poisoned_at', 'doc')
if not row[1] or not row[2] or not row[4] then
  return {'corrupt', 'run hash lacks an operational field'}
end
if not visible(row[1]) then
  return {'not_found'}
end
if listed(P.terminal_statuses, row[2]) then
  return {'inactive_run'}
end
if not row[3] then
  return {'ok', 'unchanged', row[4]}
end
-- ===== writes: every check is above this line =====
redis.call('HDEL', KEYS[1], 'token', 'claimed_at', 'poisoned_at', 'poison_reason', 'admitted_at')
redis.call('HSET', KEYS[1], 'wake_at', P.now, 'attempts', '0', 'abandons', '0')
ready_add(KEYS[2], row[1], P.run_id, P.now)
redis.call('SREM', KEYS[3], P.run_id)
redis.call('PUBLISH', P.channel, P.namespace)
return {'ok', 'recovered', row[4]}
