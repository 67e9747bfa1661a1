-- Docket schema, version 3: the operation registry. `{s}` is replaced by the (validated)
-- schema name. Timestamps are bigint microseconds from the caller's clock.
--
-- Every registry write is one call of one of the functions below (one round trip, one
-- statement, so one transaction). The state machine is not written here: the caller binds
-- each transition's from-set, target, progress, start stamp and sequence minting from the
-- rules table of docket-core, and the functions only encode "update where the status is in
-- the bound set". When a write is refused, the functions report what they found (retired
-- owner, absent record, current status, admission facts) and the caller names the error with
-- the same rules.
--
-- Locking: every write locks the owner's row first (FOR UPDATE when it mints completion
-- sequences, registers or collects; FOR SHARE otherwise) and only then operation rows, so an
-- owner's completion sequence is minted under its lock (monotonic, gap-free), the retired
-- flag cannot change under a write, admission counts cannot race, and no two writes wait on
-- each other in opposite orders.

CREATE TABLE {s}.ops_owners (
    owner_id            uuid    NOT NULL PRIMARY KEY,
    retired             boolean NOT NULL,
    next_completion_seq bigint  NOT NULL CHECK (next_completion_seq >= 1)
);

CREATE TABLE {s}.ops_operations (
    owner_id       uuid   NOT NULL REFERENCES {s}.ops_owners (owner_id) ON DELETE RESTRICT,
    op_id          uuid   NOT NULL,
    kind           text   COLLATE "C" NOT NULL CHECK (kind <> ''),
    display_name   text   COLLATE "C" NOT NULL CHECK (display_name <> ''),
    source_label   text   NOT NULL,
    -- JSON text of the source and of the terminal outcome (text, not jsonb: kept as written).
    source         text   NULL,
    status         text   NOT NULL CHECK (status IN ('provisioning', 'running', 'retiring',
        'completed', 'failed', 'aborted', 'cancelled', 'retired', 'terminated')),
    progress_count bigint NOT NULL CHECK (progress_count >= 0),
    outcome        text   NULL,
    completion_seq bigint NULL CHECK (completion_seq IS NULL OR completion_seq >= 1),
    created_at     bigint NOT NULL,
    started_at     bigint NULL,
    completed_at   bigint NULL,
    PRIMARY KEY (owner_id, op_id),
    CHECK ((status IN ('provisioning', 'running', 'retiring')) = (outcome IS NULL)),
    CHECK ((outcome IS NULL) = (completion_seq IS NULL)),
    CHECK ((outcome IS NULL) = (completed_at IS NULL)),
    CHECK (started_at IS NOT NULL
        OR status IN ('provisioning', 'failed', 'aborted', 'cancelled', 'terminated')),
    CHECK (started_at IS NULL OR status <> 'provisioning' AND status <> 'aborted')
);

-- A completion sequence is used once per owner; retention and collection walk it in order.
CREATE UNIQUE INDEX ops_operations_completion_index
    ON {s}.ops_operations (owner_id, completion_seq) WHERE completion_seq IS NOT NULL;
CREATE INDEX ops_operations_listing_index
    ON {s}.ops_operations (owner_id, display_name, op_id);

-- Evicts the owner's terminal records beyond the newest `retain` (the caller holds the
-- owner's row lock).
CREATE FUNCTION {s}.docket_ops_evict(p_owner uuid, p_retain bigint) RETURNS void
    LANGUAGE sql
AS $docket_ops_evict$
    DELETE FROM {s}.ops_operations AS op
    WHERE op.owner_id = p_owner AND op.completion_seq <= (
        SELECT k.completion_seq FROM {s}.ops_operations AS k
        WHERE k.owner_id = p_owner AND k.completion_seq IS NOT NULL
        ORDER BY k.completion_seq DESC OFFSET p_retain LIMIT 1);
$docket_ops_evict$;

-- Registration: insert-if-absent under the owner's lock, admitted only when the owner is not
-- retired, the id is free and (with a limit) fewer than `p_limit` operations are live.
-- Creating the owner row first never makes a refusal write something: every refusal needs a
-- retired owner, a taken id or a live operation, and each of those needs the row already.
CREATE FUNCTION {s}.docket_ops_register(p_owner uuid, p_op uuid, p_kind text, p_name text,
    p_label text, p_source text, p_status text, p_now bigint, p_limit bigint)
    RETURNS TABLE (inserted boolean, owner_retired boolean, id_taken boolean, active bigint)
    LANGUAGE plpgsql
AS $docket_ops_register$
BEGIN
    INSERT INTO {s}.ops_owners AS o (owner_id, retired, next_completion_seq)
        VALUES (p_owner, false, 1) ON CONFLICT (owner_id) DO NOTHING;
    SELECT o.retired INTO owner_retired
        FROM {s}.ops_owners AS o WHERE o.owner_id = p_owner FOR UPDATE;
    id_taken := EXISTS (SELECT FROM {s}.ops_operations AS op
                        WHERE op.owner_id = p_owner AND op.op_id = p_op);
    SELECT count(*) INTO active FROM {s}.ops_operations AS op
        WHERE op.owner_id = p_owner AND op.completion_seq IS NULL;
    inserted := NOT owner_retired AND NOT id_taken
        AND (p_limit IS NULL OR active < p_limit);
    IF inserted THEN
        INSERT INTO {s}.ops_operations (owner_id, op_id, kind, display_name, source_label,
            source, status, progress_count, outcome, completion_seq, created_at, started_at,
            completed_at)
        VALUES (p_owner, p_op, p_kind, p_name, p_label, p_source, p_status, 0, NULL, NULL,
            p_now, NULL, NULL);
    END IF;
    RETURN NEXT;
END
$docket_ops_register$;

-- One transition of one operation: one conditional UPDATE on the bound from-set; when it
-- ends the operation, the owner's next completion sequence, retention and the wake hint in
-- the same transaction. Refused: `applied` is false and `owner_retired` / `current_status`
-- (NULL when the record is absent) say why.
CREATE FUNCTION {s}.docket_ops_transition(p_owner uuid, p_op uuid, p_from text[], p_to text,
    p_progress bigint, p_start boolean, p_mint boolean, p_outcome text, p_now bigint,
    p_retain bigint, p_wake text)
    RETURNS TABLE (applied boolean, owner_retired boolean, current_status text,
        r_op_id text, r_kind text, r_display_name text, r_source_label text, r_source text,
        r_status text, r_progress_count bigint, r_outcome text, r_completion_seq bigint,
        r_created_at bigint, r_started_at bigint, r_completed_at bigint)
    LANGUAGE plpgsql
AS $docket_ops_transition$
DECLARE
    v_next bigint;
    v_row {s}.ops_operations;
BEGIN
    applied := false;
    IF p_mint THEN
        SELECT o.retired, o.next_completion_seq INTO owner_retired, v_next
            FROM {s}.ops_owners AS o WHERE o.owner_id = p_owner FOR UPDATE;
    ELSE
        SELECT o.retired INTO owner_retired
            FROM {s}.ops_owners AS o WHERE o.owner_id = p_owner FOR SHARE;
    END IF;
    owner_retired := COALESCE(owner_retired, false);
    IF owner_retired THEN
        RETURN NEXT;
        RETURN;
    END IF;
    UPDATE {s}.ops_operations AS op SET
        status = COALESCE(p_to, op.status),
        progress_count = op.progress_count + p_progress,
        started_at = CASE WHEN p_start THEN p_now ELSE op.started_at END,
        outcome = CASE WHEN p_mint THEN p_outcome ELSE op.outcome END,
        completion_seq = CASE WHEN p_mint THEN v_next ELSE op.completion_seq END,
        completed_at = CASE WHEN p_mint THEN p_now ELSE op.completed_at END
    WHERE op.owner_id = p_owner AND op.op_id = p_op AND op.status = ANY (p_from)
    RETURNING op.* INTO v_row;
    IF NOT FOUND THEN
        SELECT op.status INTO current_status FROM {s}.ops_operations AS op
            WHERE op.owner_id = p_owner AND op.op_id = p_op;
        RETURN NEXT;
        RETURN;
    END IF;
    IF p_mint THEN
        UPDATE {s}.ops_owners AS o SET next_completion_seq = v_next + 1
            WHERE o.owner_id = p_owner;
        PERFORM {s}.docket_ops_evict(p_owner, p_retain);
        PERFORM pg_notify('docket_wake', p_wake);
    END IF;
    applied := true;
    current_status := v_row.status;
    r_op_id := v_row.op_id::text;
    r_kind := v_row.kind;
    r_display_name := v_row.display_name;
    r_source_label := v_row.source_label;
    r_source := v_row.source;
    r_status := v_row.status;
    r_progress_count := v_row.progress_count;
    r_outcome := v_row.outcome;
    r_completion_seq := v_row.completion_seq;
    r_created_at := v_row.created_at;
    r_started_at := v_row.started_at;
    r_completed_at := v_row.completed_at;
    RETURN NEXT;
END
$docket_ops_transition$;

-- Terminates every operation of the owner whose status is in the bound from-set, in id order,
-- each taking the next completion sequence; with `p_retire`, then marks the owner retired
-- (creating its row first, so a registration racing with the retirement of an owner never seen
-- is either terminated or refused). One row per terminated operation; a single row with
-- `owner_retired` when the owner was already retired and `p_retire` is false; no row when it
-- was and `p_retire` is true.
CREATE FUNCTION {s}.docket_ops_terminate(p_owner uuid, p_from text[], p_to text,
    p_outcome text, p_now bigint, p_retain bigint, p_retire boolean, p_wake text)
    RETURNS TABLE (owner_retired boolean, r_op_id text, r_completion_seq bigint)
    LANGUAGE plpgsql
AS $docket_ops_terminate$
DECLARE
    v_retired boolean;
    v_next bigint;
    v_ended bigint := 0;
    v_id uuid;
BEGIN
    IF p_retire THEN
        INSERT INTO {s}.ops_owners AS o (owner_id, retired, next_completion_seq)
            VALUES (p_owner, false, 1) ON CONFLICT (owner_id) DO NOTHING;
    END IF;
    SELECT o.retired, o.next_completion_seq INTO v_retired, v_next
        FROM {s}.ops_owners AS o WHERE o.owner_id = p_owner FOR UPDATE;
    IF v_retired THEN
        IF NOT p_retire THEN
            owner_retired := true;
            RETURN NEXT;
        END IF;
        RETURN;
    END IF;
    owner_retired := false;
    IF v_next IS NOT NULL THEN
        FOR v_id IN SELECT op.op_id FROM {s}.ops_operations AS op
                    WHERE op.owner_id = p_owner AND op.status = ANY (p_from)
                    ORDER BY op.op_id LOOP
            UPDATE {s}.ops_operations AS op SET status = p_to, outcome = p_outcome,
                completion_seq = v_next, completed_at = p_now
                WHERE op.owner_id = p_owner AND op.op_id = v_id;
            r_op_id := v_id::text;
            r_completion_seq := v_next;
            RETURN NEXT;
            v_next := v_next + 1;
            v_ended := v_ended + 1;
        END LOOP;
    END IF;
    IF v_ended > 0 THEN
        UPDATE {s}.ops_owners AS o SET next_completion_seq = v_next
            WHERE o.owner_id = p_owner;
        PERFORM {s}.docket_ops_evict(p_owner, p_retain);
        PERFORM pg_notify('docket_wake', p_wake);
    END IF;
    IF p_retire THEN
        UPDATE {s}.ops_owners AS o SET retired = true WHERE o.owner_id = p_owner;
    END IF;
END
$docket_ops_terminate$;

-- Removes the owner's terminal records and returns them in completion order; a single row
-- with `owner_retired` (and nothing removed) for a retired owner.
CREATE FUNCTION {s}.docket_ops_collect(p_owner uuid)
    RETURNS TABLE (owner_retired boolean,
        r_op_id text, r_kind text, r_display_name text, r_source_label text, r_source text,
        r_status text, r_progress_count bigint, r_outcome text, r_completion_seq bigint,
        r_created_at bigint, r_started_at bigint, r_completed_at bigint)
    LANGUAGE plpgsql
AS $docket_ops_collect$
DECLARE
    v_retired boolean;
BEGIN
    SELECT o.retired INTO v_retired
        FROM {s}.ops_owners AS o WHERE o.owner_id = p_owner FOR UPDATE;
    IF v_retired THEN
        owner_retired := true;
        RETURN NEXT;
        RETURN;
    END IF;
    RETURN QUERY
        WITH drained AS (
            DELETE FROM {s}.ops_operations AS op
            WHERE op.owner_id = p_owner AND op.completion_seq IS NOT NULL
            RETURNING op.*
        )
        SELECT false, d.op_id::text, d.kind::text, d.display_name::text, d.source_label,
            d.source, d.status, d.progress_count, d.outcome, d.completion_seq, d.created_at,
            d.started_at, d.completed_at
        FROM drained AS d ORDER BY d.completion_seq;
END
$docket_ops_collect$;
