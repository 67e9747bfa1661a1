-- prelude.lua: helpers shared by every docket script. It is prepended to each script file when
-- the script is loaded (so each operation is still one EVALSHA of one script body).
--
-- Conventions for every script:
--   * ARGV[1] is a JSON object of named string parameters (P below). Integers travel as exact
--     decimal strings and are compared as strings: Lua numbers are doubles and would round
--     seqs above 2^53.
--   * Replies are arrays whose first element is a status string ("ok", "not_found", ...).
--   * Every check runs before the first write: a script that returns anything but "ok" has
--     written nothing, and the writes after the checks cannot fail on well-typed keys. The
--     line "-- ===== writes: ... =====" marks the boundary in every write script; tests prove
--     that nothing above it writes (statically) and that a fail point placed on it leaves the
--     store unchanged (`docs/reliability.md`, “Scripts check before they write”).
--   * Time is never read from the server (no TIME): every instant is the caller's `now`.

local P = cjson.decode(ARGV[1])

-- Whether a row owned by `owner` (stored scope key, "" = tenantless) is visible in the scope
-- given by P.scope_kind ("system" | "owner") and P.scope_owner.
local function visible(owner)
  return P.scope_kind == 'system' or owner == P.scope_owner
end

-- Percent-encodes '%', ':', '{' and '}' exactly like keys::enc in Rust.
local function enc(s)
  return (string.gsub(s, '[%%:{}]', function(c)
    return string.format('%%%02X', string.byte(c))
  end))
end

-- The key component of an owner (stored scope key), like keys::owner_part in Rust.
local function owner_part(owner)
  if owner == '' then
    return '_'
  end
  return 't.' .. enc(owner)
end

-- A decimal i64 string as a fixed-width, byte-ordered string, like keys::sortable_time.
local function sortable_time(t)
  if string.sub(t, 1, 1) == '-' then
    local digits = string.sub(t, 2)
    digits = string.rep('0', 19 - #digits) .. digits
    return 'n' .. (string.gsub(digits, '%d', function(d)
      return tostring(9 - tonumber(d))
    end))
  end
  return 'p' .. string.rep('0', 19 - #t) .. t
end

-- Whether `item` is one of the comma-separated `list`.
local function listed(list, item)
  return string.find(',' .. list .. ',', ',' .. item .. ',', 1, true) ~= nil
end

-- Event pairs start at ARGV[first]: seq19, canonical event JSON, seq19, JSON, ...
-- Returns the first seq whose stored event has different bytes, or nil.
local function event_conflict(events_key, first)
  for i = first, #ARGV, 2 do
    local stored = redis.call('HGET', events_key, ARGV[i])
    if stored and stored ~= ARGV[i + 1] then
      return ARGV[i]
    end
  end
  return nil
end

-- Appends the events not stored yet (identical ones are accepted without a write).
local function append_events(events_key, seqs_key, by_time_key, run_id, now, first)
  for i = first, #ARGV, 2 do
    if redis.call('HEXISTS', events_key, ARGV[i]) == 0 then
      redis.call('HSET', events_key, ARGV[i], ARGV[i + 1])
      redis.call('ZADD', seqs_key, 0, ARGV[i])
      redis.call('ZADD', by_time_key, now, run_id .. '\0' .. ARGV[i])
    end
  end
end

-- Exact `a < b` for canonical decimal i64 strings (no float rounding, no locale collation).
local function int_less(a, b)
  local neg_a, neg_b = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  if neg_a ~= neg_b then
    return neg_a
  end
  if neg_a then
    a, b = string.sub(b, 2), string.sub(a, 2)
  end
  if #a ~= #b then
    return #a < #b
  end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x < y
    end
  end
  return false
end


-- A positive decimal u32 (digits only, like shares::positive in Rust), or nil.
local function positive(text)
  if not text or not string.match(text, '^%d+$') or #text > 10 then
    return nil
  end
  local n = tonumber(text)
  if n < 1 or n > 4294967295 then
    return nil
  end
  return n
end

-- The class of a stored tenant share (`"<weight>:<cap>"`, nil when none is stored) in the
-- share summary that tenant-fair claims of one run read (the `capped` and `weighted` counts
-- of the fair cursor hash, kept by lua/set_share.lua): "plain" (weight 1, no cap: the
-- default), "weighted" (a larger weight, no cap) or "capped" (a cap, or a value that does
-- not decode, which sends claims to the walk that reports it).
local function share_class(text)
  if not text then
    return 'plain'
  end
  local w, c = string.match(text, '^(%d+):(%d*)$')
  local weight = positive(w)
  if not weight or c ~= '' then
    return 'capped'
  end
  if weight == 1 then
    return 'plain'
  end
  return 'weighted'
end

-- Operation registry: evicts the oldest terminal records of one owner beyond `keep` (a
-- decimal string >= 1): the smallest completion sequences of the owner's `done` set go, with
-- their record hash (`op_prefix .. id`) and their listing member (`name NUL id`).
local function ops_evict(done_key, names_key, op_prefix, keep)
  local over = redis.call('ZCARD', done_key) - tonumber(keep)
  if over <= 0 then
    return
  end
  local victims = redis.call('ZRANGE', done_key, 0, over - 1)
  for _, id in ipairs(victims) do
    local name = redis.call('HGET', op_prefix .. id, 'name')
    if name then
      redis.call('ZREM', names_key, name .. '\0' .. id)
    end
    redis.call('DEL', op_prefix .. id)
  end
  redis.call('ZREMRANGEBYRANK', done_key, 0, over - 1)
end

-- The ready index has a per-owner twin, `ready_of:<owner_part>` (same members and scores),
-- and `ready_owners` lists (lexicographically, score 0) the owner keys that may have ready
-- runs: every owner whose twin is not empty, plus owners whose twin emptied since a
-- tenant-fair claim that selected something last visited them (that claim drops them, so
-- removing a ready run costs one ZREM more, not a check of the twin's size). A tenant-fair
-- claim walks the owners and reads each one's oldest due runs without scanning another
-- owner's backlog. Every script
-- adds to and removes from the ready set only through these two helpers, so the keys stay in
-- step. They need P.prefix; the keys they derive share the namespace hash tag.
local function ready_of(owner)
  return P.prefix .. 'ready_of:' .. owner_part(owner)
end

-- Makes `run_id` (owned by `owner`, stored scope key) ready at `wake` (µs, decimal string).
local function ready_add(ready_key, owner, run_id, wake)
  redis.call('ZADD', ready_key, wake, run_id)
  redis.call('ZADD', ready_of(owner), wake, run_id)
  if redis.call('ZADD', P.prefix .. 'ready_owners', 0, owner) == 1 then
    -- A new owner: the ring stored beside the fair cursor (lua/claim_fair.lua) lacks it.
    redis.call('HDEL', P.prefix .. 'fair_cursor', 'ring')
  end
end

-- Takes `run_id` out of the ready set and its owner's twin (a no-op when it is not ready, so
-- a commit that keeps its claim pays one ZREM, as before).
local function ready_remove(ready_key, owner, run_id)
  if redis.call('ZREM', ready_key, run_id) == 1 then
    redis.call('ZREM', ready_of(owner), run_id)
  end
end

-- Claims are counted per owner in `claims_by_owner` (scope key → number of the owner's
-- members in the claims zset), so a tenant-fair claim reads a cap's usage in one HGET. Every
-- script adds to and removes from the claims zset only through these two helpers: the count
-- moves only when the zset gains or loses a member, so re-stamping a retained claim (the
-- commit hot path) and a steal (a claim moving between workers) cost nothing extra.
local function claim_add(claims_key, owner, run_id, at)
  if redis.call('ZADD', claims_key, at, run_id) == 1 then
    redis.call('HINCRBY', P.prefix .. 'claims_by_owner', owner, 1)
  end
end

local function claim_remove(claims_key, owner, run_id)
  if redis.call('ZREM', claims_key, run_id) == 0 then
    return
  end
  if redis.call('HINCRBY', P.prefix .. 'claims_by_owner', owner, -1) <= 0 then
    redis.call('HDEL', P.prefix .. 'claims_by_owner', owner)
  end
end
