-- Docket schema, version 10: a commit that keeps its claim changes no indexed column of
-- `runs`, so PostgreSQL can write it as a heap-only (HOT) update. `{s}` is replaced by the
-- (validated) schema name.
--
-- PostgreSQL updates a row in place on its page, adding no index entries (a HOT update),
-- only when no column any index of the table reads (in its key, INCLUDE list or predicate)
-- changes, and the page has room for the new version. Up to version 9 every commit of a
-- claimed run changed two such columns: `claimed_at`, which a commit that keeps the claim
-- renews (the claim then expires a TTL after the last commit) and which `runs_expired_index`
-- is keyed on, and `updated_at`, the key of `runs_terminal_retention_index` (that index only
-- holds terminal runs, but its key still counts). So every commit inserted a new entry into
-- every index of `runs` — the primary key, the run id, the two list indexes, the graph index
-- and the expired-claim index — and left the old ones for vacuum, which every scan of those
-- indexes stepped over until then. Measured with `pg_stat_user_tables`: 0 HOT updates out of
-- 19,682 in a whole `docket bench` run.
--
-- What changes:
--
-- * `claim_started_at`: a lower bound of `claimed_at` for as long as the row holds a claim,
--   NULL without one (`runs_claim_start_check`). A claim sets it with `claimed_at`; a write
--   that keeps the token keeps it, or lowers it to a `claimed_at` below it (a clock that went
--   back: rare, and then not a HOT update); a write that sets another token sets it again.
--   `runs_expired_index` is keyed on it instead of `claimed_at`, so renewing a claim no
--   longer moves the run in that index. An expired claim is still one whose `claimed_at` is
--   before the cutoff, taken in `(claimed_at, run_id)` order: a claim lookup bounds its
--   index range with `claim_started_at < cutoff` (implied, since `claim_started_at <=
--   claimed_at`), tests `claimed_at < cutoff` on each row of it and sorts what is left. The
--   range holds only claims taken more than a TTL ago, expired or renewed since — a handful
--   of long drains, where the version-9 index range held every dead entry a commit had left.
-- * `retained_since`: `updated_at` for a terminal run, NULL otherwise, computed by
--   PostgreSQL (a stored generated column). `runs_terminal_retention_index` is keyed on it,
--   so only a write that ends a run (or changes a terminal one) touches that index; the
--   pruner's order is unchanged (terminal runs by `updated_at`, then run id).
-- * `fillfactor = 80`: inserts leave a fifth of each page free, so the new version of a
--   run's row fits beside the old one; PostgreSQL reclaims the old versions of a page when it
--   next fills, without a vacuum.
--
-- Adding the generated column rewrites `runs` under an exclusive lock (the migration is one
-- transaction); on a large store, plan the upgrade for a quiet moment.
--
-- The tenant-fair claim function is redefined below with its two expired-claim lookups
-- bounded by `claim_started_at` and its lease setting it; nothing else of it changes.

ALTER TABLE {s}.runs
    ADD COLUMN claim_started_at bigint NULL,
    ADD COLUMN retained_since bigint GENERATED ALWAYS AS (
        CASE WHEN status IN ('done', 'failed', 'cancelled') THEN updated_at END) STORED,
    SET (fillfactor = 80);

UPDATE {s}.runs SET claim_started_at = claimed_at WHERE claim_token IS NOT NULL;

ALTER TABLE {s}.runs ADD CONSTRAINT runs_claim_start_check
    CHECK ((claim_started_at IS NULL) = (claim_token IS NULL)
           AND claim_started_at <= claimed_at);

DROP INDEX {s}.runs_expired_index;
CREATE INDEX runs_expired_index ON {s}.runs (claim_started_at, run_id)
    WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NOT NULL;

DROP INDEX {s}.runs_terminal_retention_index;
CREATE INDEX runs_terminal_retention_index ON {s}.runs (retained_since, run_id)
    WHERE retained_since IS NOT NULL;

CREATE OR REPLACE FUNCTION {s}.docket_claim_fair(p_now bigint, p_cutoff bigint, p_limit bigint,
    p_max_attempts bigint, p_preference integer)
    RETURNS TABLE (out_run_id text, out_tenant_id text, out_graph_id text,
        out_graph_hash text, out_checkpoint_seq bigint, out_claim_token text,
        out_claimed_at bigint, out_claim_attempts integer, out_poisoned_at bigint,
        out_class integer, out_eligible_at bigint, out_ord bigint)
    LANGUAGE plpgsql VOLATILE
AS $docket_claim_fair$
DECLARE
    -- The cursor as this claim read it, and a private copy moved past each ready pick.
    v_base_key text COLLATE "C";
    v_base_taken integer;
    v_key text COLLATE "C";
    v_taken integer;
    v_weight integer := 1;
    v_any_share boolean;
    v_capped boolean;
    -- Capped owners and how many more runs each may be leased in this claim.
    v_cap_owner text[] := '{}';
    v_cap_room bigint[] := '{}';
    v_slot integer;
    -- The picks so far, in selection order.
    v_ids bigint[] := '{}';
    v_classes integer[] := '{}';
    v_eligibles bigint[] := '{}';
    v_ready_picks integer := 0;
    -- The current pick.
    v_id bigint;
    v_eligible bigint;
    v_run text COLLATE "C";
    v_owner text COLLATE "C";
    v_next_taken integer;
    -- The owners picked from so far in round-robin order, each with its weight, its last
    -- pick (a probe of that owner starts just past it) and whether it has nothing left;
    -- whether the picks have gone past the last owner key to the first, and whether they
    -- have come round to an owner picked from before (then the ring lists every owner with
    -- due runs, in round-robin order).
    v_ring text[] := '{}';
    v_ring_weight integer[] := '{}';
    v_ring_wake bigint[] := '{}';
    v_ring_run text[] := '{}';
    v_ring_done boolean[] := '{}';
    v_wrapped boolean := false;
    v_complete boolean := false;
    v_pos integer;
    v_n integer;
    -- Where a probe of one owner starts: past its last pick, or before every run.
    v_no_wake CONSTANT bigint := -9223372036854775808;
    v_after_wake bigint;
    v_after_run text COLLATE "C";
    -- The owner walk of a capped store.
    v_from text COLLATE "C";
    -- Where the walk over the owners starts (inclusive) and the key it stays below (NULL:
    -- none).
    v_lo text COLLATE "C";
    v_hi text COLLATE "C";
    -- Going round the ring: the planned picks (ring positions and the `taken` of each),
    -- how many runs each owner is asked for, and what the one statement returned.
    v_plan integer[];
    v_plan_taken integer[];
    v_quota integer[];
    v_left bigint;
    v_t integer;
    v_step integer;
    v_got_id bigint[];
    v_got_wake bigint[];
    v_got_run text[];
    v_got_pos integer[];
    v_first integer[];
    v_count integer[];
    v_used integer[];
    v_short boolean;
    v_k integer;
    v_setting text;
BEGIN
    -- The cursor, without locking it, and what the stored shares ask for. The settings end
    -- with this transaction (a SET clause on the function would undo them at its exit,
    -- before the commit they are for):
    -- * A claim need not survive a crash to be safe (a lost claim fences its holder out at
    --   its next write, like a steal, and the run is claimed again), so this transaction
    --   commits without waiting for its WAL flush; any later durable write of the holder
    --   flushes the claim first (WAL is flushed in order). Waiting would also hold the
    --   cursor row's lock through the flush.
    -- * Every statement below is planned once per session, for any arguments: each is an
    --   index probe whatever they are, and re-planning per call would cost more than
    --   running it.
    SELECT c.scope_key, c.taken,
           EXISTS (SELECT FROM {s}.tenant_shares AS t WHERE t.cap IS NOT NULL),
           EXISTS (SELECT FROM {s}.tenant_shares AS t),
           pg_catalog.set_config('synchronous_commit', 'off', true),
           pg_catalog.set_config('plan_cache_mode', 'force_generic_plan', true)
        INTO v_base_key, v_base_taken, v_capped, v_any_share, v_setting, v_setting
        FROM {s}.claim_cursor AS c WHERE c.singleton;
    IF v_capped THEN
        -- A store with caps: this claim holds the cursor row to its commit, and counts the
        -- caps from the committed claims of the one before it.
        SELECT c.scope_key, c.taken INTO v_base_key, v_base_taken
            FROM {s}.claim_cursor AS c WHERE c.singleton FOR UPDATE;
        SELECT COALESCE(array_agg(t.tenant_id), '{}'),
               COALESCE(array_agg(GREATEST(t.cap - (
                   SELECT count(*) FROM {s}.runs AS h
                   WHERE h.status = 'running' AND h.poisoned_at IS NULL
                     AND h.claim_token IS NOT NULL AND h.scope_key = t.tenant_id), 0)), '{}')
            INTO v_cap_owner, v_cap_room
            FROM {s}.tenant_shares AS t WHERE t.cap IS NOT NULL;
    END IF;
    v_key := v_base_key;
    v_taken := v_base_taken;
    IF v_key IS NOT NULL AND v_any_share THEN
        SELECT t.weight INTO v_weight FROM {s}.tenant_shares AS t WHERE t.tenant_id = v_key;
        v_weight := COALESCE(v_weight, 1);
    END IF;

    -- The oldest expired claim comes first, unless one run is wanted and a ready one is
    -- preferred (then it is only the fallback, picked below if no run is ready).
    IF NOT (p_limit = 1 AND p_preference IS NOT DISTINCT FROM 0) THEN
        SELECT x.id, x.claimed_at INTO v_id, v_eligible FROM {s}.runs AS x
            WHERE x.status = 'running' AND x.poisoned_at IS NULL
              AND x.claim_token IS NOT NULL AND x.claim_started_at < p_cutoff
              AND x.claimed_at < p_cutoff
            ORDER BY x.claimed_at, x.run_id LIMIT 1
            FOR UPDATE SKIP LOCKED;
        IF v_id IS NOT NULL THEN
            v_ids := v_ids || v_id;
            v_classes := v_classes || 1;
            v_eligibles := v_eligibles || v_eligible;
        END IF;
    END IF;

    -- Ready runs, one pick at a time until every owner with due runs has been met.
    <<ready>>
    WHILE cardinality(v_ids) < p_limit LOOP
        v_id := NULL;
        -- The cursor owner's round, while it lasts.
        IF v_key IS NOT NULL AND v_taken < v_weight THEN
            v_slot := array_position(v_cap_owner, v_key::text);
            IF v_slot IS NULL OR v_cap_room[v_slot] > 0 THEN
                v_owner := v_key;
                v_pos := array_position(v_ring, v_owner::text);
                v_after_wake := COALESCE(v_ring_wake[v_pos], v_no_wake);
                v_after_run := COALESCE(v_ring_run[v_pos], '');
                SELECT r.id, r.wake_at, r.run_id INTO v_id, v_eligible, v_run
                    FROM {s}.runs AS r
                    WHERE r.scope_key = v_owner AND r.status = 'running'
                      AND r.claim_token IS NULL AND r.wake_at IS NOT NULL
                      AND r.wake_at <= p_now
                      AND (r.wake_at, r.run_id) > (v_after_wake, v_after_run)
                    ORDER BY r.wake_at, r.run_id LIMIT 1
                    FOR UPDATE SKIP LOCKED;
                v_next_taken := v_taken + 1;
            END IF;
        END IF;

        IF v_id IS NULL AND NOT v_capped THEN
            -- The first run of the owners after the cursor's key (of every owner without a
            -- cursor), then of those before it, then the cursor owner's next round.
            v_next_taken := 1;
            IF v_key IS NULL THEN
                v_lo := '';
                LOOP
                    SELECT r.id, r.wake_at, r.run_id, r.scope_key
                        INTO v_id, v_eligible, v_run, v_owner
                        FROM {s}.runs AS r
                        WHERE r.scope_key >= v_lo AND r.status = 'running'
                          AND r.claim_token IS NULL AND r.wake_at IS NOT NULL
                          AND r.id <> ALL (v_ids)
                        ORDER BY r.scope_key, r.wake_at, r.run_id LIMIT 1
                        FOR UPDATE SKIP LOCKED;
                    EXIT WHEN v_id IS NULL OR v_eligible <= p_now;
                    -- Its owner's first run that no claim holds wakes later, so none of its
                    -- runs is due: on to the next owner (that row stays locked to the end of
                    -- this claim; a racing claim skips it, as it skips any held row).
                    v_id := NULL;
                    v_lo := v_owner || chr(1);
                END LOOP;
                v_wrapped := true;
            ELSE
                v_lo := v_key || chr(1);
                LOOP
                    SELECT r.id, r.wake_at, r.run_id, r.scope_key
                        INTO v_id, v_eligible, v_run, v_owner
                        FROM {s}.runs AS r
                        WHERE r.scope_key >= v_lo AND r.status = 'running'
                          AND r.claim_token IS NULL AND r.wake_at IS NOT NULL
                          AND r.id <> ALL (v_ids)
                        ORDER BY r.scope_key, r.wake_at, r.run_id LIMIT 1
                        FOR UPDATE SKIP LOCKED;
                    EXIT WHEN v_id IS NULL OR v_eligible <= p_now;
                    -- Its owner's first run that no claim holds wakes later, so none of its
                    -- runs is due: on to the next owner (that row stays locked to the end of
                    -- this claim; a racing claim skips it, as it skips any held row).
                    v_id := NULL;
                    v_lo := v_owner || chr(1);
                END LOOP;
                IF v_id IS NULL AND v_wrapped THEN
                    -- Past the last key a second time: every owner with due runs has been
                    -- picked from; the ring takes over below.
                    v_complete := true;
                    EXIT ready;
                END IF;
                IF v_id IS NULL THEN
                    v_lo := '';
                    LOOP
                        SELECT r.id, r.wake_at, r.run_id, r.scope_key
                            INTO v_id, v_eligible, v_run, v_owner
                            FROM {s}.runs AS r
                            WHERE r.scope_key >= v_lo
                              AND r.scope_key < v_key AND r.status = 'running'
                              AND r.claim_token IS NULL AND r.wake_at IS NOT NULL
                              AND r.id <> ALL (v_ids)
                            ORDER BY r.scope_key, r.wake_at, r.run_id LIMIT 1
                            FOR UPDATE SKIP LOCKED;
                        EXIT WHEN v_id IS NULL OR v_eligible <= p_now;
                        -- Its owner's first run that no claim holds wakes later, so none of its
                        -- runs is due: on to the next owner (that row stays locked to the end of
                        -- this claim; a racing claim skips it, as it skips any held row).
                        v_id := NULL;
                        v_lo := v_owner || chr(1);
                    END LOOP;
                    v_wrapped := true;
                END IF;
                IF v_id IS NULL AND v_taken >= v_weight THEN
                    v_owner := v_key;
                    v_pos := array_position(v_ring, v_owner::text);
                    v_after_wake := COALESCE(v_ring_wake[v_pos], v_no_wake);
                    v_after_run := COALESCE(v_ring_run[v_pos], '');
                    SELECT r.id, r.wake_at, r.run_id INTO v_id, v_eligible, v_run
                        FROM {s}.runs AS r
                        WHERE r.scope_key = v_owner AND r.status = 'running'
                          AND r.claim_token IS NULL AND r.wake_at IS NOT NULL
                          AND r.wake_at <= p_now
                          AND (r.wake_at, r.run_id) > (v_after_wake, v_after_run)
                        ORDER BY r.wake_at, r.run_id LIMIT 1
                        FOR UPDATE SKIP LOCKED;
                END IF;
            END IF;
            -- An owner picked from before: the round robin has come round, so after this
            -- pick the ring lists every owner with due runs.
            v_complete := v_id IS NOT NULL
                AND array_position(v_ring, v_owner::text) IS NOT NULL;
        ELSIF v_id IS NULL THEN
            -- The same order in a capped store, one owner at a time: the owners after the
            -- cursor's key, then from the first key round to the cursor's own (its next
            -- round). Each owner is found without locking anything; one at its cap is passed
            -- over, the others are probed for their next run.
            v_next_taken := 1;
            v_from := v_key;
            v_wrapped := v_key IS NULL;
            LOOP
                v_owner := NULL;
                v_lo := COALESCE(v_from || chr(1), '');
                v_hi := NULL;
                WITH RECURSIVE walk (owner, first_wake) AS (
                    (SELECT r.scope_key, r.wake_at FROM {s}.runs AS r
                     WHERE r.scope_key >= v_lo AND r.status = 'running'
                       AND r.claim_token IS NULL AND r.wake_at IS NOT NULL
                     ORDER BY r.scope_key, r.wake_at, r.run_id LIMIT 1)
                    UNION ALL
                    SELECT nx.scope_key, nx.wake_at FROM walk AS w
                    CROSS JOIN LATERAL (
                        SELECT r.scope_key, r.wake_at FROM {s}.runs AS r
                        WHERE r.scope_key > w.owner AND r.status = 'running'
                          AND r.claim_token IS NULL AND r.wake_at IS NOT NULL
                        ORDER BY r.scope_key, r.wake_at, r.run_id LIMIT 1) AS nx
                    WHERE w.first_wake > p_now AND (v_hi IS NULL OR w.owner < v_hi)
                )
                SELECT w.owner INTO v_owner FROM walk AS w WHERE w.first_wake <= p_now LIMIT 1;
                IF v_owner IS NULL THEN
                    EXIT WHEN v_wrapped;
                    v_wrapped := true;
                    v_from := NULL;
                    CONTINUE;
                END IF;
                -- Round again past the cursor's own key: every owner has been tried.
                EXIT WHEN v_wrapped AND v_key IS NOT NULL AND v_owner > v_key;
                v_slot := array_position(v_cap_owner, v_owner::text);
                IF (v_slot IS NULL OR v_cap_room[v_slot] > 0)
                   AND (v_owner IS DISTINCT FROM v_key OR v_taken >= v_weight) THEN
                    v_pos := array_position(v_ring, v_owner::text);
                    v_after_wake := COALESCE(v_ring_wake[v_pos], v_no_wake);
                    v_after_run := COALESCE(v_ring_run[v_pos], '');
                    SELECT r.id, r.wake_at, r.run_id INTO v_id, v_eligible, v_run
                        FROM {s}.runs AS r
                        WHERE r.scope_key = v_owner AND r.status = 'running'
                          AND r.claim_token IS NULL AND r.wake_at IS NOT NULL
                          AND r.wake_at <= p_now
                          AND (r.wake_at, r.run_id) > (v_after_wake, v_after_run)
                        ORDER BY r.wake_at, r.run_id LIMIT 1
                        FOR UPDATE SKIP LOCKED;
                    EXIT WHEN v_id IS NOT NULL;
                END IF;
                EXIT WHEN v_owner = v_key;
                v_from := v_owner;
            END LOOP;
        END IF;

        EXIT ready WHEN v_id IS NULL;
        v_ids := v_ids || v_id;
        v_classes := v_classes || 0;
        v_eligibles := v_eligibles || v_eligible;
        v_ready_picks := v_ready_picks + 1;
        v_slot := array_position(v_cap_owner, v_owner::text);
        IF v_slot IS NOT NULL THEN
            v_cap_room[v_slot] := v_cap_room[v_slot] - 1;
        END IF;
        IF v_key IS DISTINCT FROM v_owner THEN
            v_weight := 1;
            IF v_any_share THEN
                SELECT t.weight INTO v_weight FROM {s}.tenant_shares AS t
                    WHERE t.tenant_id = v_owner;
                v_weight := COALESCE(v_weight, 1);
            END IF;
        END IF;
        -- The owner's place in the ring, just past the run picked.
        v_pos := array_position(v_ring, v_owner::text);
        IF v_pos IS NULL THEN
            v_ring := v_ring || v_owner::text;
            v_ring_weight := v_ring_weight || v_weight;
            v_ring_wake := v_ring_wake || v_eligible;
            v_ring_run := v_ring_run || v_run::text;
            v_ring_done := v_ring_done || false;
        ELSE
            v_ring_wake[v_pos] := v_eligible;
            v_ring_run[v_pos] := v_run;
        END IF;
        v_key := v_owner;
        v_taken := v_next_taken;
        EXIT ready WHEN v_complete;
    END LOOP;

    -- Round the ring: every owner with due runs is in it, in round-robin order, so the rest
    -- of the selection is planned without reading anything (the cursor owner's round, then
    -- each owner after it in the ring `weight` runs per round), and one statement locks each
    -- owner's share of the plan just past its last pick (no index entry before that is read
    -- again). An owner that returns fewer runs than asked has no more due runs (or racing
    -- claims hold them): its missing places are dropped, which leaves the others' picks in
    -- the order the rule gives them, and the ring is planned again without it.
    <<rounds>>
    WHILE v_complete AND cardinality(v_ids) < p_limit LOOP
        v_n := cardinality(v_ring);
        v_pos := array_position(v_ring, v_key::text);
        EXIT rounds WHEN v_pos IS NULL;
        v_t := v_taken;
        v_left := p_limit - cardinality(v_ids);
        v_plan := '{}';
        v_plan_taken := '{}';
        v_quota := array_fill(0, ARRAY[v_n]);
        WHILE v_left > 0 LOOP
            IF v_t >= v_ring_weight[v_pos] OR v_ring_done[v_pos] THEN
                -- The next owner in the ring with runs left (the same one, alone).
                v_step := 0;
                LOOP
                    v_step := v_step + 1;
                    v_pos := v_pos % v_n + 1;
                    EXIT WHEN NOT v_ring_done[v_pos] OR v_step >= v_n;
                END LOOP;
                EXIT WHEN v_ring_done[v_pos];
                v_t := 0;
            END IF;
            v_t := v_t + 1;
            v_plan := v_plan || v_pos;
            v_plan_taken := v_plan_taken || v_t;
            v_quota[v_pos] := v_quota[v_pos] + 1;
            v_left := v_left - 1;
        END LOOP;
        EXIT rounds WHEN cardinality(v_plan) = 0;

        SELECT COALESCE(array_agg(x.id ORDER BY o.pos, x.i), '{}'),
               COALESCE(array_agg(x.wake_at ORDER BY o.pos, x.i), '{}'),
               COALESCE(array_agg(x.run_id::text ORDER BY o.pos, x.i), '{}'),
               COALESCE(array_agg(o.pos::integer ORDER BY o.pos, x.i), '{}')
            INTO v_got_id, v_got_wake, v_got_run, v_got_pos
            FROM unnest(v_ring, v_ring_wake, v_ring_run, v_quota) WITH ORDINALITY
                AS o(owner, after_wake, after_run, quota, pos)
            CROSS JOIN LATERAL (
                SELECT l.id, l.wake_at, l.run_id,
                       row_number() OVER (ORDER BY l.wake_at, l.run_id) AS i
                FROM (SELECT r.id, r.wake_at, r.run_id FROM {s}.runs AS r
                      WHERE r.scope_key = o.owner COLLATE "C" AND r.status = 'running'
                        AND r.claim_token IS NULL AND r.wake_at IS NOT NULL
                        AND r.wake_at <= p_now
                        AND (r.wake_at, r.run_id) > (o.after_wake, o.after_run COLLATE "C")
                      ORDER BY r.wake_at, r.run_id
                      LIMIT o.quota
                      FOR UPDATE OF r SKIP LOCKED) AS l
            ) AS x
            WHERE o.quota > 0;

        -- Where each owner's runs start in what came back, and how many there are.
        v_first := array_fill(0, ARRAY[v_n]);
        v_count := array_fill(0, ARRAY[v_n]);
        v_used := array_fill(0, ARRAY[v_n]);
        FOR v_k IN 1..cardinality(v_got_pos) LOOP
            IF v_count[v_got_pos[v_k]] = 0 THEN
                v_first[v_got_pos[v_k]] := v_k;
            END IF;
            v_count[v_got_pos[v_k]] := v_count[v_got_pos[v_k]] + 1;
        END LOOP;
        v_short := false;
        FOR v_k IN 1..cardinality(v_plan) LOOP
            v_pos := v_plan[v_k];
            IF v_used[v_pos] >= v_count[v_pos] THEN
                v_ring_done[v_pos] := true;
                v_short := true;
                CONTINUE;
            END IF;
            v_step := v_first[v_pos] + v_used[v_pos];
            v_used[v_pos] := v_used[v_pos] + 1;
            v_ids := v_ids || v_got_id[v_step];
            v_classes := v_classes || 0;
            v_eligibles := v_eligibles || v_got_wake[v_step];
            v_ready_picks := v_ready_picks + 1;
            v_ring_wake[v_pos] := v_got_wake[v_step];
            v_ring_run[v_pos] := v_got_run[v_step];
            v_key := v_ring[v_pos];
            v_taken := v_plan_taken[v_k];
        END LOOP;
        EXIT rounds WHEN NOT v_short;
    END LOOP;

    -- The other expired claims, after every ready run (or the fallback of a claim that
    -- preferred a ready run and found none).
    IF cardinality(v_ids) < p_limit THEN
        SELECT v_ids || COALESCE(array_agg(e.id ORDER BY e.claimed_at, e.run_id), '{}'),
               v_classes || COALESCE(array_agg(1 ORDER BY e.claimed_at, e.run_id), '{}'),
               v_eligibles
                   || COALESCE(array_agg(e.claimed_at ORDER BY e.claimed_at, e.run_id), '{}')
            INTO v_ids, v_classes, v_eligibles
            FROM (SELECT x.id, x.claimed_at, x.run_id FROM {s}.runs AS x
                  WHERE x.status = 'running' AND x.poisoned_at IS NULL
                    AND x.claim_token IS NOT NULL AND x.claim_started_at < p_cutoff
                    AND x.claimed_at < p_cutoff AND x.id <> ALL (v_ids)
                  ORDER BY x.claimed_at, x.run_id
                  LIMIT p_limit - cardinality(v_ids)
                  FOR UPDATE OF x SKIP LOCKED) AS e;
    END IF;
    IF cardinality(v_ids) = 0 THEN
        RETURN;
    END IF;

    -- The lease, one statement for every pick (a run out of claim attempts is poisoned
    -- instead); the ids go in as one array, a primary-key probe each. `ord` is the place in
    -- the selection (the caller sorts by it).
    RETURN QUERY
    UPDATE {s}.runs AS r SET
        claim_token    = CASE WHEN r.claim_attempts < p_max_attempts
                              THEN gen_random_uuid() END,
        claimed_at     = CASE WHEN r.claim_attempts < p_max_attempts THEN p_now END,
        claim_started_at = CASE WHEN r.claim_attempts < p_max_attempts THEN p_now END,
        wake_at        = NULL,
        claim_attempts = CASE WHEN r.claim_attempts < p_max_attempts
                              THEN r.claim_attempts + 1 ELSE r.claim_attempts END,
        poisoned_at    = CASE WHEN r.claim_attempts < p_max_attempts THEN NULL
                              ELSE p_now END,
        poison_reason  = CASE WHEN r.claim_attempts < p_max_attempts THEN NULL
                              ELSE 'max_claim_attempts_exceeded' END,
        admitted_at    = CASE WHEN r.claim_attempts < p_max_attempts
                              THEN COALESCE(r.admitted_at, p_now) END
    WHERE r.id = ANY (v_ids)
    RETURNING r.run_id::text, r.tenant_id::text, r.graph_id::text, r.graph_hash::text,
              r.checkpoint_seq, r.claim_token::text, r.claimed_at, r.claim_attempts,
              r.poisoned_at, v_classes[array_position(v_ids, r.id)],
              v_eligibles[array_position(v_ids, r.id)],
              array_position(v_ids, r.id)::bigint;

    -- The cursor: the last ready pick's owner and `taken`. Its row is locked only for this
    -- write; one locked by a racing claim about to write it is left to that claim rather
    -- than waited for (claims that do not race always write). Another claim may also have
    -- moved the cursor since this one read it: the position further along the round from
    -- that reading is kept, in the walk's order (the reading's owner, the owners after it,
    -- those before it). A claim of a capped store holds the row since its reading, so it
    -- always writes.
    IF v_ready_picks > 0 THEN
        UPDATE {s}.claim_cursor AS c SET scope_key = v_key, taken = v_taken
            FROM (SELECT k.scope_key, k.taken FROM {s}.claim_cursor AS k
                  WHERE k.singleton FOR UPDATE SKIP LOCKED) AS stored
            WHERE c.singleton
              AND NOT ((stored.scope_key IS DISTINCT FROM v_base_key
                            OR stored.taken IS DISTINCT FROM v_base_taken)
                       AND stored.scope_key IS NOT NULL
                       AND (CASE WHEN v_base_key IS NULL OR stored.scope_key > v_base_key
                                 THEN 1
                                 WHEN stored.scope_key = v_base_key THEN 0 ELSE 2 END,
                            stored.scope_key, stored.taken)
                         >= (CASE WHEN v_base_key IS NULL OR v_key > v_base_key THEN 1
                                  WHEN v_key = v_base_key THEN 0 ELSE 2 END,
                             v_key, v_taken));
    END IF;
END
$docket_claim_fair$;
