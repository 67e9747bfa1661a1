-- Docket schema, version 11: the tenant-fair claim function plans its statements without
-- sequential scans. `{s}` is replaced by the (validated) schema name.
--
-- The function's statements are planned once per session for any arguments (it sets
-- `plan_cache_mode = force_generic_plan` for its transaction), and PL/pgSQL keeps those
-- plans for as long as the session lives; PostgreSQL plans again only when the table's
-- statistics change, which a server without autovacuum never does. A session that made its
-- first fair claim while `runs` held a handful of rows planned the lease `UPDATE ... WHERE
-- id = ANY (...)` as a sequential scan (cheaper than the primary key on a table of one page)
-- and kept it: at 20,000 runs each of its claims read the whole table (2–3 ms each, and it
-- grows with the table). Every statement of the function is written to be a few index
-- probes, so it now plans them with sequential scans off: the index paths are taken at any
-- size. The setting holds only while the function runs (a `SET` clause: saved and restored
-- once per claim); changing the function also drops the plans sessions had kept. (JIT
-- compilation, which the same size-grown estimates would trigger on every call, is off for
-- the whole session: `PostgresOptions::session_settings`.)
ALTER FUNCTION {s}.docket_claim_fair(bigint, bigint, bigint, bigint, integer)
    SET enable_seqscan = off;
