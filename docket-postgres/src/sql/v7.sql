-- Docket schema, version 7: a batch of claimed commits in one statement. `{s}` is replaced by
-- the (validated) schema name.
--
-- The batch statement (`src/batch.rs`) fences and writes every member at once. When a member
-- whose fences matched proposes an event that differs from one already stored at its seq,
-- the whole statement must abort (nothing of the batch may commit while that member's run
-- row would be written without its events), and the caller must learn which member it was
-- to answer it `EventConflict` and send the others again. Version 1's
-- `raise_event_conflict` names only the seq; this one names the member too, in its DETAIL
-- as `member:seq`.

CREATE FUNCTION {s}.raise_batch_event_conflict(conflict_member integer, conflict_seq bigint)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog
AS $$
BEGIN
    RAISE EXCEPTION 'docket: a different event is already stored at seq % (batch member %)',
        conflict_seq, conflict_member
        USING ERRCODE = 'DK001', DETAIL = conflict_member::text || ':' || conflict_seq::text;
END
$$;
