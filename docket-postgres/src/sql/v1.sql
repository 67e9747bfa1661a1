-- Docket schema, version 1. `{s}` is replaced by the (validated) schema name.
-- Timestamps are bigint microseconds since the Unix epoch, UTC, always the caller's clock.
-- Identifier columns use COLLATE "C" so ordering and keyset cursors follow byte order (the
-- same order as Rust strings), whatever the database collation is.

CREATE TABLE {s}.graph_versions (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id    text COLLATE "C" NULL
                 CONSTRAINT graph_versions_tenant_id_check CHECK (tenant_id IS NULL OR tenant_id <> ''),
    scope_key    text COLLATE "C" GENERATED ALWAYS AS (COALESCE(tenant_id, '')) STORED,
    graph_id     text COLLATE "C" NOT NULL,
    graph_hash   text COLLATE "C" NOT NULL,
    graph        bytea NOT NULL,
    published_at bigint NOT NULL,
    CONSTRAINT graph_versions_address_key UNIQUE (scope_key, graph_id, graph_hash)
);

CREATE INDEX graph_versions_revision_index
    ON {s}.graph_versions (scope_key, graph_id, published_at DESC, graph_hash DESC);

CREATE TABLE {s}.runs (
    id                     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id                 text COLLATE "C" NOT NULL CONSTRAINT runs_run_id_key UNIQUE,
    tenant_id              text COLLATE "C" NULL
                           CONSTRAINT runs_tenant_id_check CHECK (tenant_id IS NULL OR tenant_id <> ''),
    scope_key              text COLLATE "C" GENERATED ALWAYS AS (COALESCE(tenant_id, '')) STORED,
    graph_id               text COLLATE "C" NOT NULL,
    graph_hash             text COLLATE "C" NOT NULL,
    status                 text NOT NULL,
    step                   bigint NOT NULL,
    checkpoint_seq         bigint NOT NULL,
    event_seq              bigint NOT NULL,
    -- The JSON text of the whole run document (NUL is escaped as \u0000, which jsonb rejects).
    document               bytea NOT NULL,
    latest_checkpoint_type text NOT NULL,
    claim_token            uuid NULL,
    claimed_at             bigint NULL,
    wake_at                bigint NULL,
    claim_attempts         integer NOT NULL DEFAULT 0,
    claim_abandons         integer NOT NULL DEFAULT 0,
    poisoned_at            bigint NULL,
    poison_reason          text NULL,
    started_at             bigint NOT NULL,
    updated_at             bigint NOT NULL,
    finished_at            bigint NULL,
    inserted_at            bigint NOT NULL,
    CONSTRAINT runs_graph_fkey FOREIGN KEY (scope_key, graph_id, graph_hash)
        REFERENCES {s}.graph_versions (scope_key, graph_id, graph_hash) ON DELETE RESTRICT,
    CONSTRAINT runs_status_check
        CHECK (status IN ('running', 'waiting', 'done', 'failed', 'cancelled')),
    CONSTRAINT runs_finished_at_check
        CHECK ((status IN ('done', 'failed', 'cancelled')) = (finished_at IS NOT NULL)),
    CONSTRAINT runs_claim_pair_check CHECK ((claim_token IS NULL) = (claimed_at IS NULL)),
    CONSTRAINT runs_poison_pair_check CHECK ((poisoned_at IS NULL) = (poison_reason IS NULL)),
    CONSTRAINT runs_poison_reason_check
        CHECK (poison_reason IN ('max_claim_attempts_exceeded', 'max_claim_abandons_exceeded')),
    CONSTRAINT runs_waiting_terminal_idle_check
        CHECK (status = 'running' OR (claim_token IS NULL AND wake_at IS NULL AND poisoned_at IS NULL)),
    CONSTRAINT runs_poisoned_shape_check
        CHECK (poisoned_at IS NULL OR (status = 'running' AND claim_token IS NULL AND wake_at IS NULL)),
    CONSTRAINT runs_running_schedule_check
        CHECK (status <> 'running' OR poisoned_at IS NOT NULL
               OR ((wake_at IS NOT NULL) <> (claim_token IS NOT NULL))),
    CONSTRAINT runs_counters_check
        CHECK (step >= 0 AND checkpoint_seq >= 0 AND event_seq >= 0
               AND claim_attempts >= 0 AND claim_abandons >= 0),
    CONSTRAINT runs_checkpoint_type_check
        CHECK (latest_checkpoint_type IN ('run_initialized', 'step_committed', 'retry_scheduled',
               'interrupt_requested', 'interrupt_resolved', 'run_completed', 'run_failed',
               'run_cancelled'))
);

CREATE INDEX runs_list_index ON {s}.runs (started_at DESC, run_id DESC);
CREATE INDEX runs_scope_list_index ON {s}.runs (scope_key, started_at DESC, run_id DESC);
CREATE INDEX runs_graph_index ON {s}.runs (scope_key, graph_id, graph_hash);
CREATE INDEX runs_ready_index ON {s}.runs (wake_at, run_id)
    WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NULL AND wake_at IS NOT NULL;
CREATE INDEX runs_expired_index ON {s}.runs (claimed_at, run_id)
    WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NOT NULL;
CREATE INDEX runs_poisoned_index ON {s}.runs (poisoned_at) WHERE poisoned_at IS NOT NULL;
CREATE INDEX runs_terminal_retention_index ON {s}.runs (updated_at, run_id)
    WHERE status IN ('done', 'failed', 'cancelled');

CREATE TABLE {s}.events (
    run_id      text COLLATE "C" NOT NULL REFERENCES {s}.runs (run_id) ON DELETE CASCADE,
    seq         bigint NOT NULL CONSTRAINT events_seq_check CHECK (seq > 0),
    event_type  text NOT NULL,
    step        bigint NOT NULL CONSTRAINT events_step_check CHECK (step >= 0),
    node_id     text NULL,
    channel_id  text NULL,
    task_id     text NULL,
    -- Canonical JSON of the payload and metadata maps.
    payload     bytea NOT NULL,
    metadata    bytea NOT NULL,
    occurred_at bigint NOT NULL,
    inserted_at bigint NOT NULL,
    CONSTRAINT events_pkey PRIMARY KEY (run_id, seq)
);

CREATE INDEX events_retention_index ON {s}.events (inserted_at, run_id, seq);

-- Aborts the fused claimed commit when a stored event differs from the proposed one.
CREATE FUNCTION {s}.raise_event_conflict(conflict_seq bigint) RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog
AS $$
BEGIN
    RAISE EXCEPTION 'docket: a different event is already stored at seq %', conflict_seq
        USING ERRCODE = 'DK001', DETAIL = conflict_seq::text;
END
$$;
