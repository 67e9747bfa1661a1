-- Docket schema, version 4: tenant-fair claiming. `{s}` is replaced by the (validated) schema
-- name. Timestamps are bigint microseconds from the caller's clock.
--
-- * `runs.admitted_at`: the admission marker of a tenant-fair lease (NULL on every existing
--   row, which is what the marker is before any fair claim); only a running, healthy row may
--   hold one.
-- * `tenant_shares`: each tenant's weight and cap (a tenant without a row has weight 1 and no
--   cap; tenantless runs never have one: their owner key is '', which no row can hold).
-- * `claim_cursor`: exactly one row, where the round robin stands (NULLs: no fair claim yet).
--   A fair claim locks it first, which serializes fair claims with each other.
-- * `runs_ready_owner_index`: the ready candidates by owner in `(wake_at, run_id)` order, so a
--   fair claim reads each owner's oldest due runs without walking another owner's backlog.
-- * `docket_claim_fair`: the whole fair claim, one call (see its comment).

ALTER TABLE {s}.runs ADD COLUMN admitted_at bigint NULL;
ALTER TABLE {s}.runs ADD CONSTRAINT runs_admitted_shape_check
    CHECK (admitted_at IS NULL OR (status = 'running' AND poisoned_at IS NULL));

-- Its predicate leaves out `poisoned_at IS NULL`, which `wake_at IS NOT NULL` already implies
-- (`runs_poisoned_shape_check`: a poisoned row has no wake time), and the fair claim's walk
-- leaves it out too. That difference is the point: the walk's conditions then no longer imply
-- the predicate of `runs_ready_index`, so the planner cannot answer them from that index (by
-- scanning every due run of every owner), which it otherwise may do on a table it has no
-- statistics for yet (a new deployment before its first ANALYZE), where both look equally
-- cheap. The `Oldest` claim states `poisoned_at IS NULL` and keeps using `runs_ready_index`.
CREATE INDEX runs_ready_owner_index ON {s}.runs (scope_key, wake_at, run_id)
    WHERE status = 'running' AND claim_token IS NULL AND wake_at IS NOT NULL;

CREATE TABLE {s}.tenant_shares (
    tenant_id text COLLATE "C" NOT NULL PRIMARY KEY
              CONSTRAINT tenant_shares_tenant_id_check CHECK (tenant_id <> ''),
    weight    integer NOT NULL CONSTRAINT tenant_shares_weight_check CHECK (weight >= 1),
    cap       integer NULL CONSTRAINT tenant_shares_cap_check CHECK (cap IS NULL OR cap >= 1)
);

CREATE TABLE {s}.claim_cursor (
    singleton boolean NOT NULL PRIMARY KEY DEFAULT true CHECK (singleton),
    scope_key text COLLATE "C" NULL,
    taken     integer NULL CHECK (taken IS NULL OR taken >= 1),
    CHECK ((scope_key IS NULL) = (taken IS NULL))
);
INSERT INTO {s}.claim_cursor (singleton, scope_key, taken) VALUES (true, NULL, NULL);

-- One tenant-fair `claim_due` (docs/claim-order.md, "Tenant-fair claiming"), the order of
-- `docket_core::store::rules::tenant_fair` encoded:
--
-- 1. Lock the cursor row. Fair claims wait here for each other; a waiter reads the cursor its
--    predecessor wrote (FOR UPDATE returns the newest row version), and since the function is
--    VOLATILE every later statement takes a new snapshot, so the caps below are counted from
--    the predecessor's committed claims, never from a stale view.
-- 2. Walk the owners with due ready work in round-robin order: the cursor's owner (turn 0),
--    the owners after it (turn 1), then those before it (turn 2); without a cursor, every
--    owner from the first key (turn 1). Each step to the next owner is one probe of
--    `runs_ready_owner_index` that skips owners whose ready runs all wake later (their index
--    entries are passed over inside the index, not one statement per owner). For each, read its weight and cap, offer at most
--    `cap - claimed now` candidates (and never more than `p_limit`: one owner cannot fill more
--    than the whole batch), number them `i = 1..` in `(wake_at, run_id)` order. Stop once the
--    owners seen hold `p_limit` candidates of round 0: every later owner's candidates rank
--    after those, so they cannot be selected.
-- 3. One statement: rank the candidates `((i' - 1) / w, turn, owner, i)`, merge them with the
--    expired claims (`[oldest expired] ++ ready ++ [other expired]`, or ready first when
--    `p_limit = 1` prefers it), lock the first `p_limit` in that order `FOR UPDATE SKIP
--    LOCKED`, lease or poison them exactly as the `Oldest` statement does, stamp the
--    admission marker of each lease, return them with their place in the selection (`ord`).
-- 4. Store the cursor of the last ready candidate selected, if any.
--
-- `p_now` now, `p_cutoff` expiry cutoff (claimed_at < cutoff), `p_limit` limit,
-- `p_max_attempts` max attempts, `p_preference` preferred class (0 ready, 1 expired, NULL).
CREATE FUNCTION {s}.docket_claim_fair(p_now bigint, p_cutoff bigint, p_limit bigint,
    p_max_attempts bigint, p_preference integer)
    RETURNS TABLE (out_run_id text, out_tenant_id text, out_graph_id text,
        out_graph_hash text, out_checkpoint_seq bigint, out_claim_token text,
        out_claimed_at bigint, out_claim_attempts integer, out_poisoned_at bigint,
        out_class integer, out_eligible_at bigint, out_ord bigint)
    LANGUAGE plpgsql VOLATILE
AS $docket_claim_fair$
DECLARE
    v_cursor_key text;
    v_cursor_taken integer;
    v_owner text;
    v_turn integer;
    v_weight integer;
    v_cap integer;
    v_held bigint;
    v_offset integer;
    v_want bigint;
    v_found bigint;
    v_round0 bigint := 0;
    v_capped_keys text[];
    v_capped_counts bigint[];
    v_counted boolean := false;
    c_id bigint[] := '{}';
    c_owner text[] := '{}';
    c_i integer[] := '{}';
    c_turn integer[] := '{}';
    c_weight integer[] := '{}';
    c_offset integer[] := '{}';
    c_wake bigint[] := '{}';
    v_last_ord bigint;
    v_next_key text;
    v_next_taken integer;
    rec record;
BEGIN
    -- Fair claims hold the cursor lock until they commit, so a commit that waited for its WAL
    -- flush would make every fair claim wait for the flushes of all before it. A claim need not
    -- survive a crash to be safe (a lost claim fences its holder out at its next write, like a
    -- steal, and the run is claimed again), so this transaction commits without waiting; any
    -- later durable write of the holder flushes the claim first (WAL is flushed in order).
    PERFORM pg_catalog.set_config('synchronous_commit', 'off', true);
    -- Every statement below is planned once per session, for any arguments: re-planning them
    -- per call (PL/pgSQL's custom plans) would cost more than running them, inside the lock.
    -- Each one reads its index whatever the arguments and whether or not the table has been
    -- analyzed yet (see `runs_ready_owner_index` for the walk, the CASE below for the lock;
    -- `pg_checks fair-cost` measures both cases). Both settings end with this transaction (a SET clause on the function would
    -- undo them at its exit, before the commit they are for).
    PERFORM pg_catalog.set_config('plan_cache_mode', 'force_generic_plan', true);
    SELECT c.scope_key, c.taken INTO v_cursor_key, v_cursor_taken
        FROM {s}.claim_cursor AS c WHERE c.singleton FOR UPDATE;

    -- The first owner to visit: the cursor's own, else the first key with ready work.
    IF v_cursor_key IS NOT NULL THEN
        v_owner := v_cursor_key;
        v_turn := 0;
    ELSE
        SELECT r.scope_key INTO v_owner FROM {s}.runs AS r
            WHERE r.status = 'running' AND r.claim_token IS NULL
              AND r.wake_at IS NOT NULL AND r.wake_at <= p_now
            ORDER BY r.scope_key, r.wake_at, r.run_id LIMIT 1;
        v_turn := 1;
    END IF;

    WHILE v_owner IS NOT NULL AND v_round0 < p_limit LOOP
        SELECT t.weight, t.cap INTO v_weight, v_cap
            FROM {s}.tenant_shares AS t WHERE t.tenant_id = v_owner;
        v_weight := COALESCE(v_weight, 1);
        v_want := p_limit;
        IF v_cap IS NOT NULL THEN
            IF NOT v_counted THEN
                -- Claimed rows per capped tenant, counted once, from the claimed partial index
                -- (as many rows as there are live claims, however long the backlogs are).
                SELECT COALESCE(array_agg(k.scope_key), '{}'), COALESCE(array_agg(k.n), '{}')
                    INTO v_capped_keys, v_capped_counts
                    FROM (SELECT r.scope_key, count(*) AS n FROM {s}.runs AS r
                          WHERE r.status = 'running' AND r.poisoned_at IS NULL
                            AND r.claim_token IS NOT NULL
                            AND r.scope_key IN (SELECT t.tenant_id FROM {s}.tenant_shares AS t
                                                WHERE t.cap IS NOT NULL)
                          GROUP BY r.scope_key) AS k;
                v_counted := true;
            END IF;
            v_held := COALESCE(v_capped_counts[array_position(v_capped_keys, v_owner)], 0);
            v_want := LEAST(v_want, GREATEST(v_cap - v_held, 0));
        END IF;
        v_offset := CASE WHEN v_turn = 0 THEN LEAST(v_cursor_taken, v_weight) ELSE 0 END;
        IF v_want > 0 THEN
            v_found := 0;
            FOR rec IN
                SELECT r.id, r.wake_at FROM {s}.runs AS r
                WHERE r.scope_key = v_owner
                  AND r.status = 'running' AND r.claim_token IS NULL
                  AND r.wake_at IS NOT NULL AND r.wake_at <= p_now
                ORDER BY r.wake_at, r.run_id
                LIMIT v_want
            LOOP
                v_found := v_found + 1;
                c_id := array_append(c_id, rec.id);
                c_owner := array_append(c_owner, v_owner);
                c_i := array_append(c_i, v_found::integer);
                c_turn := array_append(c_turn, v_turn);
                c_weight := array_append(c_weight, v_weight);
                c_offset := array_append(c_offset, v_offset);
                c_wake := array_append(c_wake, rec.wake_at);
            END LOOP;
            v_round0 := v_round0 + GREATEST(LEAST(v_found, v_weight - v_offset), 0);
        END IF;
        -- Enough for this claim: no need to look for the next owner.
        EXIT WHEN v_round0 >= p_limit;

        -- The next owner in round-robin order.
        v_next_key := NULL;
        IF v_turn = 0 OR v_turn = 1 THEN
            SELECT r.scope_key INTO v_next_key FROM {s}.runs AS r
                WHERE r.status = 'running' AND r.claim_token IS NULL
                  AND r.wake_at IS NOT NULL AND r.wake_at <= p_now AND r.scope_key > v_owner
                ORDER BY r.scope_key, r.wake_at, r.run_id LIMIT 1;
            IF v_next_key IS NOT NULL THEN
                v_turn := 1;
            ELSIF v_cursor_key IS NOT NULL THEN
                -- Wrap around to the owners before the cursor's.
                SELECT r.scope_key INTO v_next_key FROM {s}.runs AS r
                    WHERE r.status = 'running'
                      AND r.claim_token IS NULL AND r.wake_at IS NOT NULL AND r.wake_at <= p_now
                    ORDER BY r.scope_key, r.wake_at, r.run_id LIMIT 1;
                v_turn := 2;
            END IF;
        ELSE
            SELECT r.scope_key INTO v_next_key FROM {s}.runs AS r
                WHERE r.status = 'running' AND r.claim_token IS NULL
                  AND r.wake_at IS NOT NULL AND r.wake_at <= p_now AND r.scope_key > v_owner
                ORDER BY r.scope_key, r.wake_at, r.run_id LIMIT 1;
        END IF;
        IF v_turn = 2 AND v_next_key >= v_cursor_key THEN
            v_next_key := NULL;
        END IF;
        v_owner := v_next_key;
    END LOOP;

    FOR rec IN
        WITH ready AS (
            SELECT u.id, u.owner, u.i, u.turn, u.wake,
                   (u.i + u.off - 1) / u.w AS round,
                   (u.i + u.off - 1) % u.w + 1 AS taken
            FROM unnest(c_id, c_owner, c_i, c_turn, c_weight, c_offset, c_wake)
                AS u(id, owner, i, turn, w, off, wake)
        ), expired AS (
            SELECT r.id, r.run_id, r.claimed_at,
                   row_number() OVER (ORDER BY r.claimed_at, r.run_id) AS k
            FROM (SELECT x.id, x.run_id, x.claimed_at FROM {s}.runs AS x
                  WHERE x.status = 'running' AND x.poisoned_at IS NULL
                    AND x.claim_token IS NOT NULL AND x.claimed_at < p_cutoff
                  ORDER BY x.claimed_at, x.run_id
                  LIMIT p_limit) AS r
        ), merged AS (
            SELECT y.id, 0 AS class, y.wake AS eligible_at, 1 AS grp, y.round::bigint AS round,
                   y.turn, y.owner AS owner, y.i::bigint AS i, ''::text AS run_key,
                   y.owner AS cursor_key, y.taken AS cursor_taken
            FROM ready AS y
            UNION ALL
            SELECT e.id, 1, e.claimed_at,
                   CASE WHEN e.k = 1 AND NOT (p_limit = 1
                                              AND COALESCE(p_preference = 0, false)
                                              AND EXISTS (SELECT FROM ready))
                        THEN 0 ELSE 2 END,
                   0, 0, ''::text, 0, e.run_id::text, NULL::text, NULL::integer
            FROM expired AS e
        ), locked AS (
            SELECT q.id, q.class, q.eligible_at, q.grp, q.round, q.turn, q.owner, q.i,
                   q.run_key, q.cursor_key, q.cursor_taken
            FROM merged AS q JOIN {s}.runs AS r ON r.id = q.id
            WHERE r.status = 'running' AND r.poisoned_at IS NULL
              -- A CASE, not an OR of the two classes: from an OR the planner derives a
              -- restriction on `runs` alone and (with the generic plan's guesses) scans every
              -- due row to join it with the candidates; the CASE leaves it one primary-key
              -- probe per candidate, whatever the backlog.
              AND CASE WHEN q.class = 0 THEN r.claim_token IS NULL AND r.wake_at <= p_now
                       ELSE r.claim_token IS NOT NULL AND r.claimed_at < p_cutoff END
            ORDER BY q.grp, q.round, q.turn, q.owner COLLATE "C", q.i, q.eligible_at,
                     q.run_key COLLATE "C"
            LIMIT p_limit
            FOR UPDATE OF r SKIP LOCKED
        ), chosen AS (
            SELECT l.*, row_number() OVER (ORDER BY l.grp, l.round, l.turn,
                       l.owner COLLATE "C", l.i, l.eligible_at, l.run_key COLLATE "C") AS ord
            FROM locked AS l
        ), updated AS (
            UPDATE {s}.runs AS r SET
                claim_token    = CASE WHEN r.claim_attempts < p_max_attempts
                                      THEN gen_random_uuid() END,
                claimed_at     = CASE WHEN r.claim_attempts < p_max_attempts THEN p_now END,
                wake_at        = NULL,
                claim_attempts = CASE WHEN r.claim_attempts < p_max_attempts
                                      THEN r.claim_attempts + 1 ELSE r.claim_attempts END,
                poisoned_at    = CASE WHEN r.claim_attempts < p_max_attempts THEN NULL
                                      ELSE p_now END,
                poison_reason  = CASE WHEN r.claim_attempts < p_max_attempts THEN NULL
                                      ELSE 'max_claim_attempts_exceeded' END,
                admitted_at    = CASE WHEN r.claim_attempts < p_max_attempts
                                      THEN COALESCE(r.admitted_at, p_now) END
            FROM chosen AS c
            WHERE r.id = c.id
            RETURNING r.run_id, r.tenant_id, r.graph_id, r.graph_hash, r.checkpoint_seq,
                      r.claim_token::text AS claim_token, r.claimed_at, r.claim_attempts,
                      r.poisoned_at, c.class, c.eligible_at, c.ord, c.cursor_key,
                      c.cursor_taken
        )
        SELECT * FROM updated ORDER BY ord
    LOOP
        out_run_id := rec.run_id;
        out_tenant_id := rec.tenant_id;
        out_graph_id := rec.graph_id;
        out_graph_hash := rec.graph_hash;
        out_checkpoint_seq := rec.checkpoint_seq;
        out_claim_token := rec.claim_token;
        out_claimed_at := rec.claimed_at;
        out_claim_attempts := rec.claim_attempts;
        out_poisoned_at := rec.poisoned_at;
        out_class := rec.class;
        out_eligible_at := rec.eligible_at;
        out_ord := rec.ord;
        RETURN NEXT;
        IF rec.class = 0 THEN
            v_last_ord := rec.ord;
            v_next_key := rec.cursor_key;
            v_next_taken := rec.cursor_taken;
        END IF;
    END LOOP;

    IF v_last_ord IS NOT NULL THEN
        UPDATE {s}.claim_cursor AS c SET scope_key = v_next_key, taken = v_next_taken
            WHERE c.singleton;
    END IF;
END
$docket_claim_fair$;
