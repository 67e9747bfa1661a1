-- claim_fair.lua: atomically select and lease (or poison) at most `limit` due runs in the
-- tenant-fair order (`docs/claim-order.md`, “Tenant-fair claiming”; order of
-- docket_core::store::rules::tenant_fair), counting caps and moving the cursor in the same
-- step. Scripts run one at a time, so fair claims are serialized with each other for free:
-- two claimers can never both see room under a cap.
--
-- KEYS[1] ready zset (score wake_at µs)   KEYS[2] claims zset (score claimed_at µs)
-- KEYS[3] poisoned set                     KEYS[4] ready owners (lex zset of scope keys)
-- KEYS[5] tenant shares hash (tenant id → "<weight>:<cap>", cap empty = none)
-- KEYS[6] fair cursor hash (owner = scope key, taken; the share summary: capped, weighted,
--         kept by lua/set_share.lua; ring: see below)
-- KEYS[7] claims by owner hash (scope key → claimed runs; see the prelude)
-- Run hashes (P.prefix .. 'run:' .. id) and the per-owner ready sets (`ready_of` in the
-- prelude) are derived; they share the namespace hash tag.
-- ARGV[1] JSON: prefix, policy ("tenant_fair"), now, cutoff (expired means claimed_at <
--         cutoff), limit, max_attempts, preference ("ready" | "expired" | "")
-- ARGV[2..] `limit` claim tokens minted by the caller; the i-th lease takes the i-th token.
-- Returns {"ok", outcome...} exactly as claim_due.lua | {"corrupt", detail} (a stored share,
--         the cursor or an index entry that does not decode; nothing written)
-- Selection: the owners with ready runs are visited from the cursor in round-robin order —
-- the cursor's owner, then the owner keys after it, then those before it, each range in byte
-- order as the lex zset keeps it (Lua never compares strings: Redis may set a collating
-- locale). Each owner offers its oldest due runs (its `ready_of` set is ordered by
-- (wake_at, run_id)), at most `cap - claimed` of them when capped, where `claimed` is the
-- owner's count of members of the claims zset (expired ones included). A candidate's rank is
-- (round, visit position, i) with round = (i + offset - 1) div weight, offset = min(taken,
-- weight) for the cursor's owner; the visit position stands for (turn, owner key). The walk
-- stops once round 0 alone holds `limit` candidates: owners visited later rank after all of
-- them. Then [oldest expired] ++ ready by rank ++ [other expired], cut to `limit`; with
-- limit 1 and a "ready" preference the first ready candidate when there is one. The cursor
-- becomes the owner and `taken` of the last ready candidate selected.
--
-- Cost (this runs once per claim, beside the cheaper oldest-first script): one call per
-- visited owner for its runs, one per batch of owners for the list and one for their shares
-- (with a ring, see below, one share read and no list read).
-- Nothing is sorted: the ranks are produced in order, round by round over the owners in visit
-- order, and no more runs are read from an owner than can still be selected, namely while
-- (the owner's runs before it) + (runs already read that rank before it) < limit; every run
-- not read has `limit` read runs ranking before it, so the selection is the same as over
-- every due run. When the cursor's owner has used up its round (offset = weight), all its
-- runs rank after round 0: it keeps visit position 1 but is read only after the walk, and
-- only when round 0 did not fill the claim (it is not visited otherwise, so it is not
-- dropped from KEYS[4] by that claim even if its set emptied; a later visit drops it).
--
-- A claim of one run (the usual poll of a busy worker) where no share has a cap takes a
-- shorter path to the same run: with one run to choose, the ranking reduces to the oldest
-- expired claim first, unless ready runs are preferred and there is one; for ready runs, the
-- cursor's owner while its round is unfinished (taken < weight), then the first owner after
-- the cursor's key with a due run, then the first before it, then the cursor's owner in its
-- next round; the cursor becomes (owner, taken + 1) when it stayed with the cursor's owner
-- within its round, else (owner, 1). The cursor hash read tells whether a cap exists (the
-- share summary beside the cursor) and whether any weight differs from 1; only then is one
-- share read, the cursor owner's. No other owner's share is read and each owner passed over
-- costs one read of its ready set (two when it is empty). An expired claim served first reads
-- nothing more at all. The owners come from the ring stored beside the cursor (`ring`: every
-- member of KEYS[4] in byte order, each followed by a newline, which no owner key holds),
-- read with the cursor, when KEYS[4] has at most RING_MAX members and the cursor's owner is
-- listed in it: no lex read then. It is read from KEYS[4] and stored with the next cursor
-- when missing, and removed whenever KEYS[4] changes members (a new owner in the prelude's
-- `ready_add`, owners dropped by claim_apply.lua, the layout migration), so it lists exactly
-- the members of KEYS[4] whenever it exists.
--
-- A wider claim walks the same ring instead of KEYS[4] when it can (the same conditions), and
-- reads the shares of all the ring's owners in one call, in visit order; each share is still
-- decoded only when its owner is visited, so the claim selects and reports exactly what the
-- lex walk would. Per claim of ten over five owners that replaces the walk's one to two lex
-- reads and one to two share reads with one share read.
--
-- The checks and writes that follow are lua/claim_apply.lua, appended when loading.

local limit = tonumber(P.limit)
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. P.cutoff, 'LIMIT', 0, limit)

local floor, min = math.floor, math.min

-- What the checks and writes of lua/claim_apply.lua take: the selection, the new cursor (nil:
-- leave it) and the owners found listed without ready runs (nil: none).
local selected, cursor, emptied = {}, nil, nil
-- The cursor hash, read once: owner, taken, capped, weighted, ring.
local stored = nil

-- An owner's ready set (`ready_of` in the prelude), without the percent-encoding pass when it
-- would change nothing.
local function ready_key(owner)
  if owner ~= '' and not string.find(owner, '[%%:{}]') then
    return P.prefix .. 'ready_of:t.' .. owner
  end
  return ready_of(owner)
end

-- Most owners the ring (see the header) lists; with more, claims of one run read KEYS[4].
local RING_MAX = 32

-- The ring (see the header): every owner of KEYS[4] in byte order, as stored beside the cursor
-- (`stored[5]`) or read here (then also returned as `new_ring`, the text to store with the next
-- cursor), and the cursor owner's place in it. The cursor's owner is placed by equality: when
-- it is not listed, only comparing keys could place it, which KEYS[4] does, so no ring is
-- returned (nor when KEYS[4] has more than RING_MAX members); `new_ring` is returned whenever
-- it was read, since it lists KEYS[4] either way.
local function read_ring(owner)
  local ring, new_ring, at = nil, nil, nil
  if stored[5] then
    ring = {}
    for o in string.gmatch(stored[5], '([^\n]*)\n') do
      ring[#ring + 1] = o
    end
  else
    local owners = redis.call('ZRANGEBYLEX', KEYS[4], '-', '+', 'LIMIT', 0, RING_MAX + 1)
    if #owners <= RING_MAX then
      ring = owners
      local parts = {}
      for j = 1, #owners do
        parts[j] = owners[j] .. '\n'
      end
      new_ring = table.concat(parts)
    end
  end
  if ring and owner then
    for j = 1, #ring do
      if ring[j] == owner then
        at = j
        break
      end
    end
    if not at then
      ring = nil
    end
  end
  return ring, new_ring, at
end

-- The limit-1 path (see the header): returns false, having written nothing and selected
-- nothing, when the walk below must decide (a cap exists, or the cursor or the cursor owner's
-- share does not decode: the walk reports those).
local function one()
  if expired[1] and P.preference ~= 'ready' then
    selected[1] = {class = 'expired', id = expired[1]}
    return true
  end
  stored = redis.call('HMGET', KEYS[6], 'owner', 'taken', 'capped', 'weighted', 'ring')
  if stored[3] then
    return false
  end
  local owner, taken = stored[1], positive(stored[2])
  if (owner or stored[2]) and not (owner and taken) then
    return false
  end
  local weight = 1
  if owner and owner ~= '' and stored[4] then
    -- Some tenant has a weight above 1: the cursor owner's may be one.
    local text = redis.call('HGET', KEYS[5], owner)
    if text then
      local w, c = string.match(text, '^(%d+):(%d*)$')
      weight = positive(w)
      if not weight or c ~= '' then
        return false
      end
    end
  end
  local now = P.now
  -- An owner's oldest due run (nil: none) and its ready set.
  local function due(o)
    local key = ready_key(o)
    return redis.call('ZRANGEBYSCORE', key, '-inf', now, 'LIMIT', 0, 1)[1], key
  end
  -- Notes an owner listed without any ready run, for claim_apply.lua to drop from KEYS[4].
  local function passed(o, key)
    if redis.call('EXISTS', key) == 0 then
      emptied = emptied or {}
      emptied[#emptied + 1] = o
    end
  end
  -- The first owner of a lex range (byte order) with a due run: its oldest due run, its ready
  -- set and the owner.
  local function first_due(lo, hi)
    local batch = 2
    while true do
      local owners = redis.call('ZRANGEBYLEX', KEYS[4], lo, hi, 'LIMIT', 0, batch)
      local count = #owners
      for j = 1, count do
        local o = owners[j]
        local id, key = due(o)
        if id then
          return id, key, o
        end
        passed(o, key)
      end
      if count < batch then
        return nil
      end
      lo = '(' .. owners[count]
      batch = 32
    end
  end
  local ring, new_ring, at = read_ring(owner)
  local id, key, pick
  local new_taken = 1
  if owner and taken < weight then
    -- The cursor's owner within its round.
    id, key = due(owner)
    pick, new_taken = owner, taken + 1
  end
  if not id then
    new_taken = 1
    if ring then
      -- The owners after the cursor's, then those before it (all of them without a cursor).
      local n, from = #ring, at or 0
      for step = 1, n do
        local o = ring[(from + step - 1) % n + 1]
        if o ~= owner then
          id, key = due(o)
          if id then
            pick = o
            break
          end
          passed(o, key)
        end
      end
    elseif owner then
      id, key, pick = first_due('(' .. owner, '+')
      if not id then
        id, key, pick = first_due('-', '(' .. owner)
      end
    else
      id, key, pick = first_due('-', '+')
    end
    if not id and owner and taken >= weight then
      -- The cursor's owner in its next round.
      id, key = due(owner)
      pick = owner
    end
  end
  if id then
    selected[1] = {class = 'ready', id = id, owner = pick, key = key}
    -- A ring read here is stored unless this claim drops owners from KEYS[4] (then
    -- claim_apply.lua removes the stored one). Storing the cursor it already holds (byte for
    -- byte) would write nothing new.
    if emptied then
      new_ring = nil
    end
    if new_ring or pick ~= owner or tostring(new_taken) ~= stored[2] then
      cursor = {owner = pick, taken = new_taken, ring = new_ring}
    end
  elseif expired[1] then
    selected[1] = {class = 'expired', id = expired[1]}
  end
  return true
end

if not (limit == 1 and one()) then
  stored = stored or redis.call('HMGET', KEYS[6], 'owner', 'taken', 'capped', 'weighted', 'ring')
  local cur_owner, cur_taken = nil, nil
  if stored[1] or stored[2] then
    cur_owner, cur_taken = stored[1], positive(stored[2])
    if not cur_owner or not cur_taken then
      return {'corrupt', 'the tenant-fair cursor is not an owner and a positive count'}
    end
  end

  -- Visited owners in visit position order, each {owner, key = its ready set, weight, offset,
  -- ids}; `hist[r]` counts the runs read so far in round r (the read bound below), `r0` is
  -- hist[0]. Tables are few on purpose: this script runs once per claim.
  local visited, nvisited, hist, r0 = {}, 0, {}, 0
  -- The cursor's owner when its round is used up: visit position 1, read after the walk.
  local deferred, deferred_offered = nil, 0

  -- Reads an owner's due runs: at most `offered`, and only while (i - 1) + (read runs ranking
  -- before candidate i) < limit. `later` is set for the cursor's owner read after the walk:
  -- every read run is then at a later visit position, so only lower rounds rank before it.
  local function read(v, offered, later)
    local weight, offset = v.weight, v.offset
    local k, before, seen = 0, 0, -1
    while k < offered do
      local top = floor((k + offset) / weight)
      if later then
        top = top - 1
      end
      while seen < top do
        seen = seen + 1
        before = before + (hist[seen] or 0)
      end
      if k + before >= limit then
        break
      end
      k = k + 1
    end
    local owner = v.owner
    local key = ready_key(owner)
    v.key = key
    local ids = redis.call('ZRANGEBYSCORE', key, '-inf', P.now, 'LIMIT', 0, k)
    local n = #ids
    if n == 0 and redis.call('EXISTS', key) == 0 then
      emptied = emptied or {}
      emptied[#emptied + 1] = owner
    end
    for i = 1, n do
      local round = floor((i + offset - 1) / weight)
      hist[round] = (hist[round] or 0) + 1
    end
    r0 = hist[0] or 0
    v.ids = ids
  end

  -- Visits one owner (`text`: its stored share, nil for none): reads its runs unless a cap
  -- leaves it no room, or defers it when it is the cursor's owner with its round used up.
  -- Returns an error detail for a share that does not decode. Tenantless runs and tenants
  -- without a stored share have weight 1 and no cap.
  local function visit(owner, text)
    local weight, offered = 1, limit
    if owner ~= '' and text then
      local w, c = string.match(text, '^(%d+):(%d*)$')
      weight = positive(w)
      local cap = nil
      if weight and c ~= '' then
        cap = positive(c)
        if not cap then
          weight = nil
        end
      end
      if not weight then
        return 'the tenant share of ' .. owner .. ' is not "<weight>:<cap>"'
      end
      if cap then
        -- Runs of the owner claimed right now (expired claims included), as the prelude's
        -- claim helpers count them.
        offered = min(offered, cap - (tonumber(redis.call('HGET', KEYS[7], owner)) or 0))
      end
    end
    if offered > 0 then
      local offset = 0
      if owner == cur_owner then
        offset = min(cur_taken, weight)
      end
      local v = {owner = owner, weight = weight, offset = offset}
      if offset == weight then
        -- The cursor's owner with its round used up (see the header).
        deferred, deferred_offered = v, offered
      else
        nvisited = nvisited + 1
        visited[nvisited] = v
        read(v, offered, false)
      end
    end
    return nil
  end

  -- Visits the owners of a lex range in byte order, until round 0 holds `limit` candidates.
  -- The first batch is small (a claim usually stops after a few owners); the shares of a
  -- batch are read in one call and decoded only when their owner is visited.
  local function walk(lo, hi, batch)
    while r0 < limit do
      local owners = redis.call('ZRANGEBYLEX', KEYS[4], lo, hi, 'LIMIT', 0, batch)
      local count = #owners
      if count == 0 then
        return nil
      end
      local shares = redis.call('HMGET', KEYS[5], unpack(owners))
      for j = 1, count do
        local bad = visit(owners[j], shares[j])
        if bad then
          return bad
        end
        if r0 >= limit then
          return nil
        end
      end
      if count < batch then
        return nil
      end
      lo = '(' .. owners[count]
      batch = 64
    end
    return nil
  end

  -- The owners come from the ring (see the header) when there is one: from the cursor's
  -- owner (inclusive) round to the one before it, the byte order the lex walk below takes,
  -- with their shares read in one call.
  local ring, new_ring, at = read_ring(cur_owner)
  local bad
  if ring and #ring > 0 then
    local n, from, order = #ring, (at or 1) - 1, {}
    for step = 1, n do
      order[step] = ring[(from + step - 1) % n + 1]
    end
    local shares = redis.call('HMGET', KEYS[5], unpack(order))
    for j = 1, n do
      bad = visit(order[j], shares[j])
      if bad or r0 >= limit then
        break
      end
    end
  else
    local first_batch = min(64, limit + 1)
    if cur_owner then
      -- Inclusive: the cursor's owner comes first when it is listed.
      bad = walk('[' .. cur_owner, '+', first_batch) or walk('-', '(' .. cur_owner, first_batch)
    else
      bad = walk('-', '+', first_batch)
    end
  end
  if bad then
    return {'corrupt', bad}
  end
  if deferred then
    table.insert(visited, 1, deferred)
    nvisited = nvisited + 1
    if r0 < limit then
      read(deferred, deferred_offered, true)
    else
      deferred.ids = {}
    end
  end

  -- The ready candidates selected, in rank order: round by round, each visited owner's runs of
  -- that round in visit order (candidate i of an owner is in round (i + offset - 1) div weight,
  -- so a round is a contiguous slice of its runs). `ready` holds (id, owner record, i) triples.
  -- With an expired candidate in front, one fewer ready candidate fits.
  local room = limit
  if expired[1] and not (limit == 1 and P.preference == 'ready') then
    room = limit - 1
  end
  local ready, nready = {}, 0
  local active = nvisited
  local round = 0
  while active > 0 and nready < room do
    active = 0
    for j = 1, nvisited do
      local v = visited[j]
      local ids, weight, offset = v.ids, v.weight, v.offset
      local n = #ids
      local last = (round + 1) * weight - offset
      if last > n then
        last = n
      elseif last < n then
        active = active + 1
      end
      local i = round * weight - offset + 1
      if i < 1 then
        i = 1
      end
      while i <= last and nready < room do
        ready[3 * nready + 1], ready[3 * nready + 2], ready[3 * nready + 3] = ids[i], v, i
        nready = nready + 1
        i = i + 1
      end
      if nready >= room then
        break
      end
    end
    round = round + 1
  end

  -- [oldest expired] ++ ready by rank ++ [other expired], cut to `limit`; with limit 1 and a
  -- "ready" preference the ready candidate when there is one.
  local nselected = 0
  if nready > 0 and limit == 1 and P.preference == 'ready' then
    -- The ready candidate alone.
  elseif expired[1] then
    nselected = 1
    selected[1] = {class = 'expired', id = expired[1]}
  end
  for r = 1, nready do
    local v, i = ready[3 * r - 1], ready[3 * r]
    nselected = nselected + 1
    selected[nselected] = {class = 'ready', id = ready[3 * r - 2], owner = v.owner, key = v.key}
    if r == nready then
      cursor = {owner = v.owner, taken = (i + v.offset - 1) % v.weight + 1}
    end
  end
  for j = 2, #expired do
    if nselected >= limit then
      break
    end
    nselected = nselected + 1
    selected[nselected] = {class = 'expired', id = expired[j]}
  end
  -- A ring read here is stored with the cursor unless this claim drops owners from KEYS[4]
  -- (claim_apply.lua then removes the stored one). Storing the cursor it already holds (byte
  -- for byte) and no new ring would write nothing new.
  if cursor then
    if new_ring and not emptied then
      cursor.ring = new_ring
    elseif cursor.owner == cur_owner and tostring(cursor.taken) == stored[2] then
      cursor = nil
    end
  end
end
