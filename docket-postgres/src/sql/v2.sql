-- Docket schema, version 2: the helper of transaction-pooler mode. `{s}` is replaced by the
-- (validated) schema name.
--
-- Behind a transaction pooler a store sends `CALL {s}.docket_prepare(name, 'PREPARE name … AS
-- …', max_kept, false); EXECUTE name(…)` as one simple query: whichever server connection runs
-- it prepares the statement there unless it already has it, so the plan is made once per
-- server connection instead of once per execution. Names are a hash of the statement's text
-- and parameter types, so a statement of that name is the same statement whoever prepared it.
--
-- The session setting `docket_prepared.<name>` remembers that the statement exists, so the
-- common case costs one setting lookup; the catalog (`pg_prepared_statements`) is only read
-- when the setting is not there (the first use on a connection, or after a rolled-back
-- transaction undid the setting but not the PREPARE) or when `verify` says the memory was
-- wrong (a `DEALLOCATE ALL` without `RESET ALL`). When `max_kept` of Docket's statements
-- exist on the connection, all of them are dropped first, so a server connection serving many
-- schemas stays bounded.
CREATE PROCEDURE {s}.docket_prepare(statement_name text, definition text, max_kept integer,
                                    verify boolean)
    LANGUAGE plpgsql
AS $docket_prepare$
DECLARE
    memory constant text := 'docket_prepared.' || statement_name;
    stale text;
BEGIN
    IF NOT verify AND pg_catalog.current_setting(memory, true) = 'on' THEN
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_prepared_statements AS p
                   WHERE p.name = statement_name) THEN
        IF (SELECT count(*) FROM pg_catalog.pg_prepared_statements AS p
            WHERE pg_catalog.left(p.name, 7) = 'docket_') >= max_kept THEN
            FOR stale IN SELECT p.name FROM pg_catalog.pg_prepared_statements AS p
                         WHERE pg_catalog.left(p.name, 7) = 'docket_' LOOP
                EXECUTE pg_catalog.format('DEALLOCATE %I', stale);
                PERFORM pg_catalog.set_config('docket_prepared.' || stale, '', false);
            END LOOP;
        END IF;
        EXECUTE definition;
    END IF;
    PERFORM pg_catalog.set_config(memory, 'on', false);
END
$docket_prepare$;
