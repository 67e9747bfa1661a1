//! The three transitions: `initialize`, `commit_claimed`, `commit_unclaimed`.
//!
//! Rust runs every pure rule first (`rules::transition::validate_*`, which also normalizes the
//! events); the script then checks what only the stored row can tell, in the order of spec §4.1
//! (scope → identity → fences → status matrix → events), before its first write.

use docket_core::model::{Event, OwnerScope, Run, RunStatus, Scope, Timestamp};
use docket_core::store::rules::transition::{
    validate_claimed, validate_initialize, validate_unclaimed,
};
use docket_core::store::{
    ClaimedCommit, ClaimedSchedule, InitProposal, ReleaseWake, StoreError, UnclaimedCommit,
};

use super::{Params, RedisStore};
use crate::codec::{encode_event, encode_run};
use crate::error::Access;
use crate::keys::seq_member;
use crate::scripts::expect_ok;

/// Stored statuses that may become `to` (the status matrix stays in core).
fn allowed_from(to: RunStatus) -> String {
    RunStatus::DURABLE
        .iter()
        .filter(|from| from.can_become(to))
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

fn opt_time(t: Option<Timestamp>) -> String {
    t.map(|t| t.as_micros().to_string()).unwrap_or_default()
}

/// `ARGV[2..]`: the document, then `seq19, event JSON` pairs.
fn document_and_events(run: &Run, events: &[Event]) -> Result<Vec<Vec<u8>>, StoreError> {
    let mut args = Vec::with_capacity(2 + 2 * events.len());
    args.push(encode_run(run)?);
    for event in events {
        args.push(seq_member(event.seq).into_bytes());
        args.push(encode_event(event)?);
    }
    Ok(args)
}

/// Parameters describing the proposed run, shared by both commits.
fn proposed(params: Params, run: &Run) -> Params {
    params
        .set("run_id", run.id.as_str())
        .set("graph_id", run.graph_id.as_str())
        .set("graph_hash", run.graph_hash.as_str())
        .set("started_at", opt_time(run.started_at))
        .set("allowed_from", allowed_from(run.status))
        .set("status", run.status.as_str())
        .set("seq", run.checkpoint_seq)
        .set("event_seq", run.event_seq)
        .set("step", run.step)
        .set("updated_at", opt_time(run.updated_at))
        .set("finished_at", opt_time(run.finished_at))
        .set("terminal", if run.status.is_terminal() { "1" } else { "0" })
}

/// A wake hint is published when the recorded wake is already due.
fn due(wake: Option<Timestamp>, now: Timestamp) -> &'static str {
    if wake.is_some_and(|w| w <= now) {
        "1"
    } else {
        "0"
    }
}

impl RedisStore {
    fn commit_keys(&self, run: &Run) -> Vec<String> {
        let k = self.keys();
        vec![
            k.run(&run.id),
            k.events(&run.id),
            k.event_seqs(&run.id),
            k.events_by_time(),
            k.ready(),
            k.claims(),
            k.poisoned(),
            k.terminal(),
        ]
    }

    fn wake_params(&self, params: Params) -> Params {
        params
            .set("channel", self.keys().wake_channel())
            .set("namespace", self.namespace())
    }

    pub(crate) async fn do_initialize(
        &self,
        owner: &OwnerScope,
        proposal: InitProposal,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let events = validate_initialize(owner, &proposal, &events)?;
        let run = &proposal.run;
        let k = self.keys();
        let keys = vec![
            k.run(&run.id),
            k.events(&run.id),
            k.event_seqs(&run.id),
            k.events_by_time(),
            k.ready(),
            k.runs_all(),
            k.runs_of(owner),
            k.graph(owner, &run.graph_id, &run.graph_hash),
        ];
        let params = self
            .wake_params(Params::new())
            .set("run_id", run.id.as_str())
            .set("owner", owner.scope_key())
            .set("graph_id", run.graph_id.as_str())
            .set("graph_hash", run.graph_hash.as_str())
            .set("status", run.status.as_str())
            .set("seq", run.checkpoint_seq)
            .set("event_seq", run.event_seq)
            .set("step", run.step)
            .set("started_at", opt_time(run.started_at))
            .set("updated_at", opt_time(run.updated_at))
            .set("wake_at", proposal.wake_at.as_micros())
            .set("ckpt_type", proposal.checkpoint_type.as_str())
            .set("now", proposal.now.as_micros())
            .set("notify", due(Some(proposal.wake_at), proposal.now));
        let mut args = vec![params.into_arg()];
        args.extend(document_and_events(run, &events)?);
        let reply = self
            .script(&self.scripts().initialize, &keys, &args, Access::Write)
            .await?;
        expect_ok(&reply)?;
        Ok(proposal.run)
    }

    pub(crate) async fn do_commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let events = validate_claimed(&proposal, &events)?;
        let run = &proposal.run;
        let (retain, wake) = match proposal.schedule {
            ClaimedSchedule::RetainClaim => (true, None),
            ClaimedSchedule::Release(wake) => (false, wake.wake_at(proposal.now)),
        };
        let params = proposed(self.wake_params(Params::new()).scope(scope), run)
            .set("expected_seq", proposal.expected_seq)
            .set("token", proposal.claim_token.as_str())
            .set("ckpt_type", proposal.checkpoint_type.as_str())
            .set("retain", if retain { "1" } else { "0" })
            .set("wake_at", opt_time(wake))
            .set("now", proposal.now.as_micros())
            .set("notify", due(wake, proposal.now));
        let mut args = vec![params.into_arg()];
        args.extend(document_and_events(run, &events)?);
        let reply = self
            .script(
                &self.scripts().commit_claimed,
                &self.commit_keys(run),
                &args,
                Access::Write,
            )
            .await?;
        expect_ok(&reply)?;
        Ok(proposal.run)
    }

    pub(crate) async fn do_commit_unclaimed(
        &self,
        scope: &Scope,
        expected_seq: u64,
        proposal: UnclaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let events = validate_unclaimed(expected_seq, &proposal, &events)?;
        let run = &proposal.run;
        let wake = ReleaseWake::wake_at(proposal.wake, proposal.now);
        let params = proposed(self.wake_params(Params::new()).scope(scope), run)
            .set("expected_seq", expected_seq)
            .set("ckpt_type", proposal.checkpoint_type.as_str())
            .set("wake_at", opt_time(wake))
            .set("now", proposal.now.as_micros())
            .set("notify", due(wake, proposal.now));
        let mut args = vec![params.into_arg()];
        args.extend(document_and_events(run, &events)?);
        let reply = self
            .script(
                &self.scripts().commit_unclaimed,
                &self.commit_keys(run),
                &args,
                Access::Write,
            )
            .await?;
        expect_ok(&reply)?;
        Ok(proposal.run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_from_follows_the_status_matrix() {
        assert_eq!(allowed_from(RunStatus::Running), "running,waiting");
        assert_eq!(allowed_from(RunStatus::Cancelled), "running,waiting");
        assert_eq!(allowed_from(RunStatus::Done), "running");
        assert_eq!(allowed_from(RunStatus::Waiting), "running");
    }

    #[test]
    fn only_a_due_wake_publishes() {
        let now = Timestamp::from_millis(10);
        assert_eq!(due(Some(now), now), "1");
        assert_eq!(due(Some(now.add_millis(1)), now), "0");
        assert_eq!(due(None, now), "0");
    }
}
