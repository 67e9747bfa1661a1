-- Docket schema, version 13: the indexes that list runs and find a graph version's runs move
-- from `runs` to a table of their own, `run_listing`, written once when a run starts and
-- never updated. `{s}` is replaced by the (validated) schema name.
--
-- A run's row is updated many times: every claim, every moment, every hand-back. An update
-- that changes an indexed column (or a column an index's predicate reads) cannot be a HOT
-- update, and PostgreSQL then adds an entry for the new row version to *every* index of the
-- table, including those whose key did not change. The claim (it moves the run from the
-- ready index to the claimed one) and the commit that ends a run (status, retention) are such
-- updates, so each of them wrote a new entry into the list index, the per-owner list index
-- and the graph index although a run's start time, owner and graph never change. `perf` of
-- the server while a worker drained 40,000 one-node runs put 43 % of its CPU samples in
-- index insertion (a third of that in the events' indexes, the rest in the runs'), and a
-- build that only dropped those three indexes drained 9–24 % more runs per second; with
-- this version, 17–18 % more (40,000 runs, three alternated pairs).
--
-- `run_listing` holds the immutable columns those three indexes are keyed on, one row per
-- run. The statements that insert runs insert the row in the same statement; the pruner,
-- the one statement that deletes runs, deletes it in the same statement; listing and graph
-- pruning read it. It has no primary key of its own: `runs.run_id` is unique, and the list
-- index (unique) is the row's address for the pruner.
--
-- The foreign key from a run to its graph version moves with the graph index: deleting a
-- graph version looks for rows that still reference it, through an index on the referencing
-- columns, which is now the listing's. Updates of `runs` never changed those columns, so the
-- key cost them nothing; a start now checks it when it inserts the listing row instead of
-- the run row.

CREATE TABLE {s}.run_listing (
    run_id     text COLLATE "C" NOT NULL,
    scope_key  text COLLATE "C" NOT NULL,
    started_at bigint NOT NULL,
    graph_id   text COLLATE "C" NOT NULL,
    graph_hash text COLLATE "C" NOT NULL,
    CONSTRAINT run_listing_graph_fkey FOREIGN KEY (scope_key, graph_id, graph_hash)
        REFERENCES {s}.graph_versions (scope_key, graph_id, graph_hash) ON DELETE RESTRICT
);

INSERT INTO {s}.run_listing (run_id, scope_key, started_at, graph_id, graph_hash)
    SELECT run_id, scope_key, started_at, graph_id, graph_hash FROM {s}.runs;

CREATE UNIQUE INDEX run_listing_list_index
    ON {s}.run_listing (started_at DESC, run_id DESC);
CREATE INDEX run_listing_scope_list_index
    ON {s}.run_listing (scope_key, started_at DESC, run_id DESC);
CREATE INDEX run_listing_graph_index ON {s}.run_listing (scope_key, graph_id, graph_hash);

ALTER TABLE {s}.runs DROP CONSTRAINT runs_graph_fkey;
DROP INDEX {s}.runs_list_index;
DROP INDEX {s}.runs_scope_list_index;
DROP INDEX {s}.runs_graph_index;
