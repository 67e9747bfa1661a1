//! Reads: runs, run listings and events. Every stored byte is decoded strictly
//! (see [`crate::codec`]): undecodable or inconsistent records are `Corrupt`, never absent.

use docket_core::model::{
    Event, EventPage, EventQuery, RunId, RunInfo, RunPage, RunQuery, RunSummary, Scope, MAX_SEQ,
};
use docket_core::store::rules::queries::{
    event_page, run_page, validate_event_query, validate_run_query,
};
use docket_core::store::StoreError;

use crate::codec::{
    decode_event, decode_owner, decode_run, decode_summary, parse_seq_member, split_index_member,
    Fields, StoredRun, SUMMARY_FIELDS,
};
use crate::error::Access;
use crate::keys::{seq_member, Keys};
use crate::scripts::{failure, Reply};
use crate::store::{Params, RedisStore};

/// Index members read per round trip while filtering a run listing.
const SCAN_BATCH: usize = 256;

impl RedisStore {
    /// The decoded run hash, if it exists and is visible in `scope`.
    pub(crate) async fn load_run(
        &self,
        scope: &Scope,
        run_id: &RunId,
    ) -> Result<StoredRun, StoreError> {
        let fields = self.hgetall(&self.keys().run(run_id)).await?;
        if fields.is_empty() {
            return Err(StoreError::NotFound);
        }
        // Visibility first: another tenant's run is absent, even when it is corrupt.
        if !scope.admits(&decode_owner(run_id, &fields)?) {
            return Err(StoreError::NotFound);
        }
        decode_run(run_id, &fields)
    }

    pub(crate) async fn do_inspect_run(
        &self,
        scope: &Scope,
        run_id: &RunId,
    ) -> Result<RunInfo, StoreError> {
        let StoredRun { owner, run, ops } = self.load_run(scope, run_id).await?;
        Ok(RunInfo {
            run,
            owner,
            wake_at: ops.wake_at,
            claimed_at: ops.claimed_at,
            claim_attempts: ops.claim_attempts,
            claim_abandons: ops.claim_abandons,
            poison: ops.poison,
            admitted_at: ops.admitted_at,
        })
    }

    pub(crate) async fn do_list_runs(
        &self,
        scope: &Scope,
        query: &RunQuery,
    ) -> Result<RunPage, StoreError> {
        validate_run_query(query)?;
        let k = self.keys();
        let index = match scope.as_owner() {
            None => k.runs_all(),
            Some(owner) => k.runs_of(&owner),
        };
        let want = query.limit as usize + 1;
        let mut max = match &query.before {
            Some(c) => format!("({}", Keys::run_index_member(c.started_at, &c.run_id)),
            None => "+".to_owned(),
        };
        let mut rows: Vec<RunSummary> = Vec::new();
        loop {
            let members: Vec<String> = self
                .query(
                    redis::cmd("ZRANGE")
                        .arg(&index)
                        .arg(&max)
                        .arg("-")
                        .arg("BYLEX")
                        .arg("REV")
                        .arg("LIMIT")
                        .arg(0)
                        .arg(SCAN_BATCH),
                    Access::Read,
                )
                .await?;
            let Some(last) = members.last() else { break };
            let ids = members
                .iter()
                .map(|m| index_run_id(&index, m))
                .collect::<Result<Vec<_>, _>>()?;
            let mut pipe = redis::pipe();
            for id in &ids {
                pipe.cmd("HMGET").arg(k.run(id)).arg(&SUMMARY_FIELDS[..]);
            }
            let values: Vec<Vec<Option<Vec<u8>>>> = self.query_pipe(&pipe).await?;
            for (id, vals) in ids.iter().zip(values) {
                if vals.iter().all(Option::is_none) {
                    // Pruned between the index read and this one.
                    continue;
                }
                let fields: Fields = SUMMARY_FIELDS
                    .iter()
                    .zip(vals)
                    .filter_map(|(name, v)| v.map(|v| ((*name).to_owned(), v)))
                    .collect();
                let summary = decode_summary(id, &fields)?;
                if !scope.admits(&summary.owner) {
                    return Err(StoreError::corrupt(
                        format!("run index {index}"),
                        format!("run {id} belongs to another owner"),
                    ));
                }
                if matches_query(&summary, query) {
                    rows.push(summary);
                    if rows.len() >= want {
                        break;
                    }
                }
            }
            if rows.len() >= want || members.len() < SCAN_BATCH {
                break;
            }
            max = format!("({last}");
        }
        Ok(run_page(rows, query))
    }

    fn event_keys(&self, run_id: &RunId) -> Vec<String> {
        let k = self.keys();
        vec![k.run(run_id), k.events(run_id), k.event_seqs(run_id)]
    }

    async fn read_event(
        &self,
        scope: &Scope,
        run_id: &RunId,
        seq: Option<u64>,
    ) -> Result<Option<Event>, StoreError> {
        let params = Params::new()
            .scope(scope)
            .set("seq", seq.map(seq_member).unwrap_or_default());
        let reply = self
            .script(
                &self.scripts().read_event,
                &self.event_keys(run_id),
                &[params.into_arg()],
                Access::Read,
            )
            .await?;
        match reply.status()?.as_str() {
            "ok" if reply.len() == 1 => Ok(None),
            "ok" => {
                let seq = parse_seq_member(run_id, &reply.string(1)?)?;
                decode_event(run_id, seq, &reply.bytes(2)?).map(Some)
            }
            "missing" => Err(StoreError::corrupt(
                format!("event row {}#{}", run_id.as_str(), reply.string(1)?),
                "indexed but its body is missing",
            )),
            other => Err(failure(&reply, other)),
        }
    }

    pub(crate) async fn do_fetch_event(
        &self,
        scope: &Scope,
        run_id: &RunId,
        seq: u64,
    ) -> Result<Event, StoreError> {
        if seq == 0 {
            return Err(StoreError::NotFound);
        }
        self.read_event(scope, run_id, Some(seq))
            .await?
            .ok_or(StoreError::NotFound)
    }

    pub(crate) async fn do_fetch_latest_event(
        &self,
        scope: &Scope,
        run_id: &RunId,
    ) -> Result<Option<Event>, StoreError> {
        self.read_event(scope, run_id, None).await
    }

    pub(crate) async fn do_list_events(
        &self,
        scope: &Scope,
        run_id: &RunId,
        query: &EventQuery,
    ) -> Result<EventPage, StoreError> {
        validate_event_query(query)?;
        let params = Params::new()
            .scope(scope)
            // No stored seq exceeds MAX_SEQ; clamping keeps the 19-digit lexicographic bound
            // exact for any `after_seq`.
            .set("after", seq_member(query.after_seq.min(MAX_SEQ)))
            .set("limit", query.limit);
        let reply = self
            .script(
                &self.scripts().list_events,
                &self.event_keys(run_id),
                &[params.into_arg()],
                Access::Read,
            )
            .await?;
        let status = reply.status()?;
        if status != "ok" {
            return Err(failure(&reply, &status));
        }
        let latest_seq: u64 = reply.string(1)?.parse().map_err(|_| {
            StoreError::corrupt(
                format!("run row {}", run_id.as_str()),
                "field event_seq is not a valid number",
            )
        })?;
        let oldest = optional_seq(run_id, &reply, 2)?;
        let newest = optional_seq(run_id, &reply, 3)?;
        let mut events = Vec::new();
        let mut i = 4;
        while i + 1 < reply.len() {
            let seq = parse_seq_member(run_id, &reply.string(i)?)?;
            let body = reply.opt_bytes(i + 1)?.ok_or_else(|| {
                StoreError::corrupt(
                    format!("event row {}#{seq}", run_id.as_str()),
                    "indexed but its body is missing",
                )
            })?;
            events.push(decode_event(run_id, seq, &body)?);
            i += 2;
        }
        Ok(event_page(events, query, oldest, newest, latest_seq))
    }
}

fn optional_seq(run_id: &RunId, reply: &Reply, i: usize) -> Result<Option<u64>, StoreError> {
    let s = reply.string(i)?;
    if s.is_empty() {
        Ok(None)
    } else {
        parse_seq_member(run_id, &s).map(Some)
    }
}

fn index_run_id(index: &str, member: &str) -> Result<RunId, StoreError> {
    split_index_member(member)
        .and_then(|(_, id)| RunId::new(id).ok())
        .ok_or_else(|| {
            StoreError::corrupt(
                format!("run index {index}"),
                format!("malformed member {member:?}"),
            )
        })
}

fn matches_query(summary: &RunSummary, query: &RunQuery) -> bool {
    query
        .graph_id
        .as_ref()
        .is_none_or(|g| g == &summary.graph_id)
        && query
            .graph_hash
            .as_ref()
            .is_none_or(|h| h == &summary.graph_hash)
        && query
            .statuses
            .as_ref()
            .is_none_or(|s| s.contains(&summary.status))
}
