-- Docket schema, version 5: tenant-fair claims that run side by side. `{s}` is replaced by
-- the (validated) schema name.
--
-- Version 4's `docket_claim_fair` locked the cursor row first and held it until its commit,
-- so every fair claim on a store waited for the one before it to finish its whole walk and
-- its leases: many claimers racing at once got about one claimer's rate. Here a fair claim
-- takes the cursor row only where it must:
--
-- * A claim that meets no capped owner reads the cursor without locking it, selects from
--   what its snapshot shows exactly as version 4 did, and then locks, per owner, as many due
--   runs as the selection gives that owner, reading past the runs racing claims hold
--   (`FOR UPDATE SKIP LOCKED` in the owner's `(wake_at, run_id)` order, as an `Oldest` claim
--   reads past them). Alone, that locks exactly the selected runs; racing, the next ones in
--   line of the same owners. Only if an owner has fewer unheld due runs left than its share
--   does the claim select again from a new snapshot. It locks the cursor row only to write
--   it, with `SKIP LOCKED`: a claim that finds it held leaves the cursor to the racing claim
--   that holds it rather than wait for that claim's commit; otherwise it keeps whichever
--   position is further along the round from the cursor its selection started from.
-- * A claim whose walk meets a capped owner locks the cursor row there (waiting for it) and
--   selects again under the lock: capped owners are only ever leased by claims holding that
--   lock, one at a time, each counting the caps from the committed claims of the one before
--   it (every statement of a VOLATILE PL/pgSQL function takes a new snapshot), so a cap is
--   never exceeded.
-- * A claim of one run (`limit = 1`, the usual poll of a busy worker) in a store without
--   caps skips the walk and the ranking: `docket_claim_fair_one` finds the same run with a
--   few index probes.
--
-- No claim waits for a run row (`SKIP LOCKED` throughout), and the holder of the cursor lock
-- waits for nothing else, so the lock cannot take part in a deadlock.

-- A tenant-fair claim of one run where no tenant has a cap: the selection of
-- `docket_claim_fair` for `limit = 1`, found with a few index probes instead of the walk and
-- the ranking (with one run to choose, the ranking reduces to the order tried here):
--
-- * the oldest expired claim first, unless ready runs are preferred and there is one;
-- * ready runs: the cursor's owner while its round is not finished (`taken < weight`), then
--   the first owner after the cursor's key with a due run, then the first before it, then
--   the cursor's owner in its next round. Each probe locks the first due run in
--   `(scope_key, wake_at, run_id)` order that no racing claim holds (`SKIP LOCKED`): alone,
--   the owner's oldest due run; racing, the next one in line.
--
-- The cursor is written as `docket_claim_fair` writes it (its position after the run
-- selected, locked only for that write, left to a racing claim that holds it).
CREATE OR REPLACE FUNCTION {s}.docket_claim_fair_one(p_now bigint, p_cutoff bigint,
    p_max_attempts bigint, p_preference integer)
    RETURNS TABLE (out_run_id text, out_tenant_id text, out_graph_id text,
        out_graph_hash text, out_checkpoint_seq bigint, out_claim_token text,
        out_claimed_at bigint, out_claim_attempts integer, out_poisoned_at bigint,
        out_class integer, out_eligible_at bigint, out_ord bigint)
    LANGUAGE plpgsql VOLATILE
AS $docket_claim_fair_one$
DECLARE
    v_key text COLLATE "C";
    v_taken integer;
    v_weight integer := 1;
    v_id bigint;
    v_eligible bigint;
    v_owner text COLLATE "C";
    v_new_taken integer;
    v_class integer;
    v_pass integer;
    v_stored_key text COLLATE "C";
    v_stored_taken integer;
BEGIN
    SELECT c.scope_key, c.taken INTO v_key, v_taken FROM {s}.claim_cursor AS c WHERE c.singleton;
    IF v_key IS NOT NULL THEN
        SELECT t.weight INTO v_weight FROM {s}.tenant_shares AS t WHERE t.tenant_id = v_key;
        v_weight := COALESCE(v_weight, 1);
    END IF;
    FOR v_pass IN 1..2 LOOP
        IF (v_pass = 1) = (p_preference IS DISTINCT FROM 0) THEN
            SELECT x.id, x.claimed_at INTO v_id, v_eligible FROM {s}.runs AS x
                WHERE x.status = 'running' AND x.poisoned_at IS NULL
                  AND x.claim_token IS NOT NULL AND x.claimed_at < p_cutoff
                ORDER BY x.claimed_at, x.run_id LIMIT 1
                FOR UPDATE SKIP LOCKED;
            IF v_id IS NOT NULL THEN
                v_class := 1;
                EXIT;
            END IF;
        ELSE
            IF v_key IS NOT NULL AND v_taken < v_weight THEN
                SELECT r.id, r.wake_at, r.scope_key INTO v_id, v_eligible, v_owner
                    FROM {s}.runs AS r
                    WHERE r.scope_key = v_key AND r.status = 'running'
                      AND r.claim_token IS NULL AND r.wake_at IS NOT NULL
                      AND r.wake_at <= p_now
                    ORDER BY r.wake_at, r.run_id LIMIT 1
                    FOR UPDATE SKIP LOCKED;
                v_new_taken := v_taken + 1;
            END IF;
            IF v_id IS NULL AND v_key IS NULL THEN
                SELECT r.id, r.wake_at, r.scope_key INTO v_id, v_eligible, v_owner
                    FROM {s}.runs AS r
                    WHERE r.status = 'running' AND r.claim_token IS NULL
                      AND r.wake_at IS NOT NULL AND r.wake_at <= p_now
                    ORDER BY r.scope_key, r.wake_at, r.run_id LIMIT 1
                    FOR UPDATE SKIP LOCKED;
                v_new_taken := 1;
            END IF;
            IF v_id IS NULL AND v_key IS NOT NULL THEN
                SELECT r.id, r.wake_at, r.scope_key INTO v_id, v_eligible, v_owner
                    FROM {s}.runs AS r
                    WHERE r.scope_key > v_key AND r.status = 'running'
                      AND r.claim_token IS NULL AND r.wake_at IS NOT NULL
                      AND r.wake_at <= p_now
                    ORDER BY r.scope_key, r.wake_at, r.run_id LIMIT 1
                    FOR UPDATE SKIP LOCKED;
                v_new_taken := 1;
            END IF;
            IF v_id IS NULL AND v_key IS NOT NULL THEN
                SELECT r.id, r.wake_at, r.scope_key INTO v_id, v_eligible, v_owner
                    FROM {s}.runs AS r
                    WHERE r.scope_key < v_key AND r.status = 'running'
                      AND r.claim_token IS NULL AND r.wake_at IS NOT NULL
                      AND r.wake_at <= p_now
                    ORDER BY r.scope_key, r.wake_at, r.run_id LIMIT 1
                    FOR UPDATE SKIP LOCKED;
                v_new_taken := 1;
            END IF;
            IF v_id IS NULL AND v_key IS NOT NULL AND v_taken >= v_weight THEN
                SELECT r.id, r.wake_at, r.scope_key INTO v_id, v_eligible, v_owner
                    FROM {s}.runs AS r
                    WHERE r.scope_key = v_key AND r.status = 'running'
                      AND r.claim_token IS NULL AND r.wake_at IS NOT NULL
                      AND r.wake_at <= p_now
                    ORDER BY r.wake_at, r.run_id LIMIT 1
                    FOR UPDATE SKIP LOCKED;
                v_new_taken := 1;
            END IF;
            IF v_id IS NOT NULL THEN
                v_class := 0;
                EXIT;
            END IF;
        END IF;
    END LOOP;
    IF v_id IS NULL THEN
        RETURN;
    END IF;

    RETURN QUERY
    UPDATE {s}.runs AS r SET
        claim_token    = CASE WHEN r.claim_attempts < p_max_attempts THEN gen_random_uuid() END,
        claimed_at     = CASE WHEN r.claim_attempts < p_max_attempts THEN p_now END,
        wake_at        = NULL,
        claim_attempts = CASE WHEN r.claim_attempts < p_max_attempts
                              THEN r.claim_attempts + 1 ELSE r.claim_attempts END,
        poisoned_at    = CASE WHEN r.claim_attempts < p_max_attempts THEN NULL ELSE p_now END,
        poison_reason  = CASE WHEN r.claim_attempts < p_max_attempts THEN NULL
                              ELSE 'max_claim_attempts_exceeded' END,
        admitted_at    = CASE WHEN r.claim_attempts < p_max_attempts
                              THEN COALESCE(r.admitted_at, p_now) END
    WHERE r.id = v_id
    RETURNING r.run_id, r.tenant_id, r.graph_id, r.graph_hash, r.checkpoint_seq,
              r.claim_token::text, r.claimed_at, r.claim_attempts, r.poisoned_at,
              v_class, v_eligible, 1::bigint;

    IF v_class = 0 THEN
        SELECT c.scope_key, c.taken INTO v_stored_key, v_stored_taken
            FROM {s}.claim_cursor AS c WHERE c.singleton FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        IF (v_stored_key IS DISTINCT FROM v_key OR v_stored_taken IS DISTINCT FROM v_taken)
           AND v_stored_key IS NOT NULL
           AND (CASE WHEN v_key IS NULL OR v_stored_key > v_key THEN 1
                     WHEN v_stored_key = v_key THEN 0 ELSE 2 END,
                v_stored_key, v_stored_taken)
             >= (CASE WHEN v_key IS NULL OR v_owner > v_key THEN 1
                      WHEN v_owner = v_key THEN 0 ELSE 2 END,
                 v_owner, v_new_taken)
        THEN
            RETURN;
        END IF;
        UPDATE {s}.claim_cursor AS c SET scope_key = v_owner, taken = v_new_taken
            WHERE c.singleton;
    END IF;
END
$docket_claim_fair_one$;

CREATE OR REPLACE FUNCTION {s}.docket_claim_fair(p_now bigint, p_cutoff bigint, p_limit bigint,
    p_max_attempts bigint, p_preference integer)
    RETURNS TABLE (out_run_id text, out_tenant_id text, out_graph_id text,
        out_graph_hash text, out_checkpoint_seq bigint, out_claim_token text,
        out_claimed_at bigint, out_claim_attempts integer, out_poisoned_at bigint,
        out_class integer, out_eligible_at bigint, out_ord bigint)
    LANGUAGE plpgsql VOLATILE
AS $docket_claim_fair$
DECLARE
    -- The cursor the current walk started from, and the one the selection started from.
    v_cursor_key text COLLATE "C";
    v_cursor_taken integer;
    v_base_key text COLLATE "C";
    v_base_taken integer;
    v_locked boolean := false;
    -- Leases still wanted, candidates wanted beyond them (runs found locked before), walks.
    v_need bigint := p_limit;
    v_extra bigint := 0;
    v_walks integer := 0;
    v_ord_base bigint := 0;
    v_selected bigint;
    v_ready_selected bigint;
    v_any_cap boolean;
    c_id bigint[];
    c_owner text[];
    c_i integer[];
    c_turn integer[];
    c_weight integer[];
    c_offset integer[];
    v_last_key text COLLATE "C";
    v_last_taken integer;
    v_stored_key text COLLATE "C";
    v_stored_taken integer;
    rec record;
BEGIN
    -- A claim need not survive a crash to be safe (a lost claim fences its holder out at its
    -- next write, like a steal, and the run is claimed again), so this transaction commits
    -- without waiting for its WAL flush; any later durable write of the holder flushes the
    -- claim first (WAL is flushed in order). Waiting would also hold the cursor row's lock
    -- through the flush.
    PERFORM pg_catalog.set_config('synchronous_commit', 'off', true);
    -- Every statement below is planned once per session, for any arguments (re-planning them
    -- per call would cost more than running them). Each reads its index whatever the
    -- arguments and whether or not the table has been analyzed yet (`runs_ready_owner_index`
    -- in version 4 for the walk, the CASE below for the lock; `pg_checks fair-cost` measures
    -- both cases). Both settings end with this transaction (a SET clause on the function
    -- would undo them at its exit, before the commit they are for).
    PERFORM pg_catalog.set_config('plan_cache_mode', 'force_generic_plan', true);
    IF p_limit = 1 AND NOT EXISTS (SELECT FROM {s}.tenant_shares AS t WHERE t.cap IS NOT NULL)
    THEN
        RETURN QUERY SELECT * FROM {s}.docket_claim_fair_one(p_now, p_cutoff, p_max_attempts,
                                                              p_preference);
        RETURN;
    END IF;

    <<walks>>
    LOOP
        v_walks := v_walks + 1;
        -- A new statement, a new snapshot: the cursor as the claims before this walk left it.
        SELECT c.scope_key, c.taken INTO v_cursor_key, v_cursor_taken
            FROM {s}.claim_cursor AS c WHERE c.singleton;
        -- The walk, one statement: the owners in round-robin order from the cursor (the
        -- cursor's own first, turn 0; then those whose keys sort after it, turn 1; then those
        -- before it, turn 2; without a cursor, every owner from the first key, turn 1), each
        -- found with one probe of `runs_ready_owner_index` past the one before (a recursive
        -- skip over the index: an owner with a long backlog costs one probe, not its
        -- length), each with its share, its offset into its round (`min(taken, weight)` for
        -- the cursor's owner) and its oldest due runs in `(wake_at, run_id)` order: at most
        -- `v_need + v_extra`, and for a capped owner at most `cap - claimed now`. The walk
        -- stops at the owner whose runs bring the candidates of round 0 seen to `v_need +
        -- v_extra`: every later owner's candidates rank after those.
        WITH RECURSIVE walk (owner, turn, weight, off, cap, ids, acc) AS (
            SELECT f.owner, f.turn, sh.weight, sh.off, sh.cap,
                   ARRAY(SELECT r.id FROM {s}.runs AS r
                         WHERE r.scope_key = f.owner
                           AND r.status = 'running' AND r.claim_token IS NULL
                           AND r.wake_at IS NOT NULL AND r.wake_at <= p_now
                         ORDER BY r.wake_at, r.run_id LIMIT sh.want),
                   0::bigint
            FROM (SELECT CASE WHEN v_cursor_key IS NOT NULL THEN v_cursor_key
                              ELSE (SELECT r.scope_key FROM {s}.runs AS r
                                    WHERE r.status = 'running' AND r.claim_token IS NULL
                                      AND r.wake_at IS NOT NULL AND r.wake_at <= p_now
                                    ORDER BY r.scope_key, r.wake_at, r.run_id LIMIT 1)
                         END AS owner,
                         CASE WHEN v_cursor_key IS NOT NULL THEN 0 ELSE 1 END AS turn) AS f
            CROSS JOIN LATERAL (
                SELECT COALESCE(t.weight, 1) AS weight, t.cap,
                       CASE WHEN f.turn = 0 THEN LEAST(v_cursor_taken, COALESCE(t.weight, 1))
                            ELSE 0 END AS off,
                       CASE WHEN t.cap IS NULL THEN v_need + v_extra
                            ELSE LEAST(v_need + v_extra, GREATEST(t.cap - (
                                SELECT count(*) FROM {s}.runs AS c
                                WHERE c.status = 'running' AND c.poisoned_at IS NULL
                                  AND c.claim_token IS NOT NULL AND c.scope_key = f.owner), 0))
                       END AS want
                FROM (SELECT) AS one LEFT JOIN {s}.tenant_shares AS t ON t.tenant_id = f.owner
            ) AS sh
            WHERE f.owner IS NOT NULL
          UNION ALL
            SELECT n.owner, n.turn, sh.weight, sh.off, sh.cap,
                   ARRAY(SELECT r.id FROM {s}.runs AS r
                         WHERE r.scope_key = n.owner
                           AND r.status = 'running' AND r.claim_token IS NULL
                           AND r.wake_at IS NOT NULL AND r.wake_at <= p_now
                         ORDER BY r.wake_at, r.run_id LIMIT sh.want),
                   w.acc + GREATEST(LEAST(cardinality(w.ids), w.weight - w.off), 0)
            FROM walk AS w
            -- The next owner in round-robin order. (`OFFSET 0` keeps each probe a
            -- subquery of its own: inlined, its expression would be copied into every use
            -- and run once per copy.)
            CROSS JOIN LATERAL (
                SELECT (SELECT r.scope_key FROM {s}.runs AS r
                        WHERE r.status = 'running' AND r.claim_token IS NULL
                          AND r.wake_at IS NOT NULL AND r.wake_at <= p_now
                          AND r.scope_key > w.owner
                        ORDER BY r.scope_key, r.wake_at, r.run_id LIMIT 1) AS k
                OFFSET 0
            ) AS a
            CROSS JOIN LATERAL (
                SELECT CASE WHEN a.k IS NOT NULL THEN a.k
                            WHEN w.turn < 2 AND v_cursor_key IS NOT NULL THEN
                                -- Wrap around to the owners before the cursor's.
                                (SELECT r.scope_key FROM {s}.runs AS r
                                 WHERE r.status = 'running' AND r.claim_token IS NULL
                                   AND r.wake_at IS NOT NULL AND r.wake_at <= p_now
                                 ORDER BY r.scope_key, r.wake_at, r.run_id LIMIT 1)
                       END AS owner,
                       CASE WHEN a.k IS NOT NULL AND w.turn < 2 THEN 1 ELSE 2 END AS turn
                OFFSET 0
            ) AS n
            CROSS JOIN LATERAL (
                SELECT COALESCE(t.weight, 1) AS weight, t.cap, 0 AS off,
                       CASE WHEN t.cap IS NULL THEN v_need + v_extra
                            ELSE LEAST(v_need + v_extra, GREATEST(t.cap - (
                                SELECT count(*) FROM {s}.runs AS c
                                WHERE c.status = 'running' AND c.poisoned_at IS NULL
                                  AND c.claim_token IS NOT NULL AND c.scope_key = n.owner), 0))
                       END AS want
                FROM (SELECT) AS one LEFT JOIN {s}.tenant_shares AS t ON t.tenant_id = n.owner
            ) AS sh
            WHERE w.acc + GREATEST(LEAST(cardinality(w.ids), w.weight - w.off), 0)
                  < v_need + v_extra
              AND n.owner IS NOT NULL AND (n.turn < 2 OR n.owner < v_cursor_key)
        )
        SELECT COALESCE((SELECT bool_or(w.cap IS NOT NULL) FROM walk AS w), false),
               COALESCE(array_agg(u.id), '{}'), COALESCE(array_agg(w.owner), '{}'),
               COALESCE(array_agg(u.i::integer), '{}'), COALESCE(array_agg(w.turn), '{}'),
               COALESCE(array_agg(w.weight), '{}'), COALESCE(array_agg(w.off), '{}')
            INTO v_any_cap, c_id, c_owner, c_i, c_turn, c_weight, c_offset
            FROM walk AS w CROSS JOIN LATERAL unnest(w.ids) WITH ORDINALITY AS u(id, i);

        IF v_any_cap AND NOT v_locked THEN
            -- A capped owner: from here on this claim holds the cursor row, and it walks
            -- again from the cursor the claims before it committed, counting the caps from
            -- their committed claims.
            PERFORM 1 FROM {s}.claim_cursor AS c WHERE c.singleton FOR UPDATE;
            v_locked := true;
            CONTINUE walks;
        END IF;

        -- Rank in version 4's order, lock per owner, lease: for the `v_need` leases still
        -- wanted.
        v_selected := 0;
        v_ready_selected := 0;
        FOR rec IN
            WITH ready AS (
                SELECT u.id, u.owner, u.i, u.turn, u.w, u.off,
                       (u.i + u.off - 1) / u.w AS round,
                       (u.i + u.off - 1) % u.w + 1 AS taken
                FROM unnest(c_id, c_owner, c_i, c_turn, c_weight, c_offset)
                    AS u(id, owner, i, turn, w, off)
            ), expired AS (
                SELECT r.id, r.run_id, r.claimed_at,
                       row_number() OVER (ORDER BY r.claimed_at, r.run_id) AS k
                FROM (SELECT x.id, x.run_id, x.claimed_at FROM {s}.runs AS x
                      WHERE x.status = 'running' AND x.poisoned_at IS NULL
                        AND x.claim_token IS NOT NULL AND x.claimed_at < p_cutoff
                      ORDER BY x.claimed_at, x.run_id
                      LIMIT v_need) AS r
            ), merged AS (
                SELECT y.id, 0 AS class, NULL::bigint AS eligible_at, 1 AS grp,
                       y.round::bigint AS round, y.turn, y.owner AS owner, y.i::bigint AS i,
                       ''::text AS run_key, y.owner AS cursor_key, y.taken AS cursor_taken,
                       y.w, y.off
                FROM ready AS y
                UNION ALL
                SELECT e.id, 1, e.claimed_at,
                       CASE WHEN e.k = 1 AND NOT (v_need = 1
                                                  AND COALESCE(p_preference = 0, false)
                                                  AND EXISTS (SELECT FROM ready))
                            THEN 0 ELSE 2 END,
                       0, 0, ''::text, 0, e.run_id::text, NULL::text, NULL::integer, 1, 0
                FROM expired AS e
            ), picked AS (
                -- The selection as the walk's snapshot shows it. Racing claims may hold
                -- some of these rows by now; what is kept of the selection is how many
                -- runs each owner gets (and which expired claims).
                SELECT q.* FROM merged AS q
                ORDER BY q.grp, q.round, q.turn, q.owner COLLATE "C", q.i, q.eligible_at,
                         q.run_key COLLATE "C"
                LIMIT v_need
            ), quota AS (
                SELECT p.owner, p.turn, p.w, p.off, count(*) AS n
                FROM picked AS p WHERE p.class = 0
                GROUP BY p.owner, p.turn, p.w, p.off
            ), locked_ready AS (
                -- Each owner's first `n` due runs that no racing claim holds, read past the
                -- held ones in the owner's index order (as an `Oldest` claim reads past
                -- them): alone, exactly the selected runs; racing, the next ones in line.
                SELECT x.id, 0 AS class, x.wake_at AS eligible_at, 1 AS grp,
                       ((x.i + o.off - 1) / o.w)::bigint AS round, o.turn, o.owner, x.i,
                       ''::text AS run_key, o.owner AS cursor_key,
                       ((x.i + o.off - 1) % o.w + 1)::integer AS cursor_taken
                FROM quota AS o CROSS JOIN LATERAL (
                    SELECT l.id, l.wake_at,
                           row_number() OVER (ORDER BY l.wake_at, l.run_id) AS i
                    FROM (SELECT r.id, r.wake_at, r.run_id FROM {s}.runs AS r
                          WHERE r.scope_key = o.owner
                            AND r.status = 'running' AND r.claim_token IS NULL
                            AND r.wake_at IS NOT NULL AND r.wake_at <= p_now
                          ORDER BY r.wake_at, r.run_id
                          LIMIT o.n
                          FOR UPDATE OF r SKIP LOCKED) AS l
                ) AS x
            ), locked_expired AS (
                SELECT p.id, p.class, p.eligible_at, p.grp, p.round, p.turn, p.owner, p.i,
                       p.run_key, p.cursor_key, p.cursor_taken
                FROM picked AS p JOIN {s}.runs AS r ON r.id = p.id
                WHERE p.class = 1 AND r.status = 'running' AND r.poisoned_at IS NULL
                  AND r.claim_token IS NOT NULL AND r.claimed_at < p_cutoff
                FOR UPDATE OF r SKIP LOCKED
            ), locked AS (
                SELECT * FROM locked_ready UNION ALL SELECT * FROM locked_expired
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
                -- The chosen ids as one array: a primary-key probe each, whatever the
                -- generic plan guesses of how many there are (joined, it may hash them
                -- against a scan of every row).
                WHERE r.id = ANY ((SELECT array_agg(c.id) FROM chosen AS c)::bigint[])
                RETURNING r.id, r.run_id, r.tenant_id, r.graph_id, r.graph_hash,
                          r.checkpoint_seq, r.claim_token::text AS claim_token, r.claimed_at,
                          r.claim_attempts, r.poisoned_at
            )
            SELECT u.*, c.class, c.eligible_at, c.ord, c.cursor_key, c.cursor_taken
            FROM updated AS u JOIN chosen AS c ON c.id = u.id
            ORDER BY c.ord
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
            out_ord := v_ord_base + rec.ord;
            RETURN NEXT;
            v_selected := v_selected + 1;
            IF rec.class = 0 THEN
                v_ready_selected := v_ready_selected + 1;
                v_last_key := rec.cursor_key;
                v_last_taken := rec.cursor_taken;
                v_base_key := v_cursor_key;
                v_base_taken := v_cursor_taken;
            END IF;
        END LOOP;
        v_ord_base := v_ord_base + v_selected;
        v_need := v_need - v_selected;
        -- Done when the claim has its leases, or when every candidate was taken: fewer than
        -- wanted then means nothing more is due. Candidates left over while leases are still
        -- wanted mean an owner had fewer unheld due runs than its share (racing claims hold
        -- or just leased them): select again from a new snapshot, wider by that many.
        EXIT walks WHEN v_need <= 0
            OR COALESCE(array_length(c_id, 1), 0) <= v_ready_selected
            OR v_walks >= 16;
        v_extra := v_extra + COALESCE(array_length(c_id, 1), 0) - v_ready_selected;
    END LOOP;

    IF v_last_key IS NOT NULL THEN
        IF NOT v_locked THEN
            -- The cursor's row is locked by a racing claim that is about to write it (or by
            -- a claim of capped owners): leave the cursor to that claim rather than wait for
            -- its commit. Claims that do not race always write. Otherwise another claim may
            -- have moved the cursor since this selection's walk read it: keep whichever
            -- position is further along the round from that reading, in the walk's order
            -- (the reading's owner, the owners after it, those before it).
            SELECT c.scope_key, c.taken INTO v_stored_key, v_stored_taken
                FROM {s}.claim_cursor AS c WHERE c.singleton FOR UPDATE SKIP LOCKED;
            IF NOT FOUND THEN
                RETURN;
            END IF;
            IF (v_stored_key IS DISTINCT FROM v_base_key
                    OR v_stored_taken IS DISTINCT FROM v_base_taken)
               AND v_stored_key IS NOT NULL
               AND (CASE WHEN v_base_key IS NULL OR v_stored_key > v_base_key THEN 1
                         WHEN v_stored_key = v_base_key THEN 0 ELSE 2 END,
                    v_stored_key COLLATE "C", v_stored_taken)
                 >= (CASE WHEN v_base_key IS NULL OR v_last_key > v_base_key THEN 1
                          WHEN v_last_key = v_base_key THEN 0 ELSE 2 END,
                     v_last_key COLLATE "C", v_last_taken)
            THEN
                RETURN;
            END IF;
        END IF;
        UPDATE {s}.claim_cursor AS c SET scope_key = v_last_key, taken = v_last_taken
            WHERE c.singleton;
    END IF;
END
$docket_claim_fair$;
