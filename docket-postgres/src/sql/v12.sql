-- Docket schema, version 12: `events.run_id` no longer references `runs` through a foreign
-- key. `{s}` is replaced by the (validated) schema name.
--
-- PostgreSQL checks a foreign key with a trigger per inserted row: a query of the referenced
-- row that also takes a share lock on it. Every event a commit appends
-- paid that, though every write that appends events writes their run's row in the same
-- transaction: the starts and the claimed commits (single and batched) join the events to the
-- run row the statement has just inserted or updated, and an unclaimed commit locks the row
-- before it writes either. So an event is only ever stored under its run's lock. Measured
-- with `pgbench` (4 clients, `synchronous_commit = off`, an update of a 550-byte row with two
-- appended events in one statement, as a commit writes them): 111–116 µs of server CPU per
-- commit with the key, 92–95 µs without it.
--
-- The key also deleted a run's events with the run (`ON DELETE CASCADE`); the one statement
-- that deletes runs, the pruner's, now deletes their events itself, in the same statement.

ALTER TABLE {s}.events DROP CONSTRAINT events_run_id_fkey;
