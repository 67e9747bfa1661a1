-- Docket schema, version 9: the row invariants of `runs` as one CHECK constraint that calls
-- one function. `{s}` is replaced by the (validated) schema name.
--
-- Versions 1 and 4 declared the invariants as twelve CHECK constraints. PostgreSQL keeps a
-- CHECK constraint as the text of its expression tree and, for every INSERT or UPDATE
-- statement, reads that text back into a tree, plans it and compiles it before it checks the
-- first row; nothing of that is kept from one statement to the next. Twelve constraints with
-- their lists of status and checkpoint-type strings made that the largest fixed cost of a
-- write: `perf` of the server through a whole `docket bench` run found 11 % of its CPU
-- samples in the constraint check (10 % reading and preparing the expressions, 0.5 %
-- evaluating them), and a loop of 20,000 one-row updates of a `runs` copy took about twice
-- as long with the twelve constraints as without any.
--
-- A constraint that calls a PL/pgSQL function is read back as one call: the function's body is
-- compiled once per session and its expression planned once, so the per-statement cost is
-- the call (the same loop: within the noise of no constraint at all). The function has no
-- SET clause, which would cost a configuration save and restore on every row (measured: more
-- than the rest of the check); it only compares its arguments with built-in operators, which
-- resolve in pg_catalog, the first schema searched unless a session lists it later on
-- purpose.
--
-- The function takes the columns it reads, not the whole row: a whole-row argument would be
-- built as a copy of the row with any out-of-line (TOASTed) document read back in, on every
-- write of a large run.
--
-- The rules are unchanged and stated once here (`docs/state-machines.md`, "Row invariants"):
-- the function tests them all in one expression, and only a row that breaks one is tested
-- rule by rule, to raise `check_violation` naming the rule it breaks and the run.

CREATE FUNCTION {s}.docket_check_run_row(
        p_run_id text, p_tenant_id text, p_status text, p_finished_at bigint,
        p_claim_token uuid, p_claimed_at bigint, p_wake_at bigint,
        p_poisoned_at bigint, p_poison_reason text, p_admitted_at bigint,
        p_step bigint, p_checkpoint_seq bigint, p_event_seq bigint,
        p_claim_attempts integer, p_claim_abandons integer,
        p_latest_checkpoint_type text)
    RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $docket_check_run_row$
DECLARE
    v_broken text;
BEGIN
    -- The columns of every argument but the nullable ones below are NOT NULL, which
    -- PostgreSQL checks before any CHECK constraint, so no rule yields NULL.
    IF COALESCE(
        (p_tenant_id IS NULL OR p_tenant_id <> '')
        AND p_status IN ('running', 'waiting', 'done', 'failed', 'cancelled')
        AND (p_status IN ('done', 'failed', 'cancelled')) = (p_finished_at IS NOT NULL)
        AND (p_claim_token IS NULL) = (p_claimed_at IS NULL)
        AND (p_poisoned_at IS NULL) = (p_poison_reason IS NULL)
        AND (p_poison_reason IS NULL
             OR p_poison_reason IN ('max_claim_attempts_exceeded', 'max_claim_abandons_exceeded'))
        AND (p_status = 'running'
             OR (p_claim_token IS NULL AND p_wake_at IS NULL AND p_poisoned_at IS NULL))
        AND (p_poisoned_at IS NULL
             OR (p_status = 'running' AND p_claim_token IS NULL AND p_wake_at IS NULL))
        AND (p_status <> 'running' OR p_poisoned_at IS NOT NULL
             OR ((p_wake_at IS NOT NULL) <> (p_claim_token IS NOT NULL)))
        AND (p_admitted_at IS NULL OR (p_status = 'running' AND p_poisoned_at IS NULL))
        AND p_step >= 0 AND p_checkpoint_seq >= 0 AND p_event_seq >= 0
        AND p_claim_attempts >= 0 AND p_claim_abandons >= 0
        AND p_latest_checkpoint_type IN ('run_initialized', 'step_committed',
            'retry_scheduled', 'interrupt_requested', 'interrupt_resolved', 'run_completed',
            'run_failed', 'run_cancelled'), false) THEN
        RETURN true;
    END IF;
    v_broken := CASE
        WHEN p_tenant_id = '' THEN 'a tenant id is never empty'
        WHEN p_status NOT IN ('running', 'waiting', 'done', 'failed', 'cancelled')
            THEN 'the status is one of running, waiting, done, failed, cancelled'
        WHEN (p_status IN ('done', 'failed', 'cancelled')) <> (p_finished_at IS NOT NULL)
            THEN 'a run has finished_at exactly when it is terminal'
        WHEN (p_claim_token IS NULL) <> (p_claimed_at IS NULL)
            THEN 'a claim token is present exactly when claimed_at is'
        WHEN (p_poisoned_at IS NULL) <> (p_poison_reason IS NULL)
            THEN 'poisoned_at and poison_reason are present together'
        WHEN p_poison_reason NOT IN ('max_claim_attempts_exceeded', 'max_claim_abandons_exceeded')
            THEN 'the poison reason is a known one'
        WHEN p_status <> 'running'
             AND NOT (p_claim_token IS NULL AND p_wake_at IS NULL AND p_poisoned_at IS NULL)
            THEN 'a run that is not running has no claim, no wake and no poison'
        WHEN p_poisoned_at IS NOT NULL AND NOT (p_claim_token IS NULL AND p_wake_at IS NULL)
            THEN 'a poisoned run has no claim and no wake'
        WHEN p_status = 'running' AND p_poisoned_at IS NULL
             AND (p_wake_at IS NOT NULL) = (p_claim_token IS NOT NULL)
            THEN 'a healthy running run has exactly one of a wake and a claim'
        WHEN p_admitted_at IS NOT NULL AND NOT (p_status = 'running' AND p_poisoned_at IS NULL)
            THEN 'only a healthy running run holds an admission marker'
        WHEN p_step < 0 OR p_checkpoint_seq < 0 OR p_event_seq < 0 OR p_claim_attempts < 0
             OR p_claim_abandons < 0
            THEN 'counters are never negative'
        WHEN p_latest_checkpoint_type NOT IN ('run_initialized', 'step_committed',
            'retry_scheduled', 'interrupt_requested', 'interrupt_resolved', 'run_completed',
            'run_failed', 'run_cancelled')
            THEN 'the latest checkpoint type is a known one'
        ELSE 'a row invariant'
    END;
    RAISE EXCEPTION 'docket: run % would break a row invariant: %', p_run_id, v_broken
        USING ERRCODE = 'check_violation', SCHEMA = '{s}', TABLE = 'runs',
              CONSTRAINT = 'runs_row_invariants_check';
END
$docket_check_run_row$;

ALTER TABLE {s}.runs
    DROP CONSTRAINT runs_tenant_id_check,
    DROP CONSTRAINT runs_status_check,
    DROP CONSTRAINT runs_finished_at_check,
    DROP CONSTRAINT runs_claim_pair_check,
    DROP CONSTRAINT runs_poison_pair_check,
    DROP CONSTRAINT runs_poison_reason_check,
    DROP CONSTRAINT runs_waiting_terminal_idle_check,
    DROP CONSTRAINT runs_poisoned_shape_check,
    DROP CONSTRAINT runs_running_schedule_check,
    DROP CONSTRAINT runs_counters_check,
    DROP CONSTRAINT runs_checkpoint_type_check,
    DROP CONSTRAINT runs_admitted_shape_check,
    ADD CONSTRAINT runs_row_invariants_check CHECK ({s}.docket_check_run_row(
        run_id, tenant_id, status, finished_at, claim_token, claimed_at, wake_at,
        poisoned_at, poison_reason, admitted_at, step, checkpoint_seq, event_seq,
        claim_attempts, claim_abandons, latest_checkpoint_type));
