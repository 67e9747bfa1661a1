//! The three transitions: `initialize`, `commit_claimed`, `commit_unclaimed`.
//!
//! Rust runs the transition kernel's stateless checks first (`Init::new`, `Commit::claimed`,
//! `Commit::unclaimed`, which also normalize the events) and computes what the commit writes
//! (`Commit::committed_state`, `allowed_from`); the script then checks what only the stored row
//! can tell, in the kernel's order (scope → identity → `checkpoint_seq` fence → token fence →
//! status matrix → events), before its first write.

use docket_core::model::{Event, OperationalState, OwnerScope, Run, RunStatus, Scope, Timestamp};
use docket_core::store::rules::chain::fold_chains;
use docket_core::store::rules::transition::{self, Commit, Init};
use docket_core::store::{
    BatchedCommit, BatchedInit, ClaimedCommit, InitProposal, Message, StoreError, UnclaimedCommit,
};

use crate::codec::{encode_event, encode_run};
use crate::error::Access;
use crate::keys::seq_member;
use crate::scripts::expect_ok;
use crate::store::{Params, RedisStore};

/// Stored statuses that may become `to`, comma-separated (the status matrix stays in core).
fn allowed_from(to: RunStatus) -> String {
    transition::allowed_from(to)
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// The row's operational state after a commit, as the scripts' parameters.
fn committed(params: Params, ops: &OperationalState) -> Params {
    params
        .set("retain", if ops.claim_token.is_some() { "1" } else { "0" })
        .set("wake_at", opt_time(ops.wake_at))
        .set("attempts", ops.claim_attempts)
        .set("abandons", ops.claim_abandons)
        .set("poisoned_at", opt_time(ops.poison.map(|p| p.poisoned_at)))
        .set(
            "poison_reason",
            ops.poison.map_or("", |p| p.reason.as_str()),
        )
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
        let call = self.init_call(owner, proposal, events)?;
        let reply = self
            .script(
                &self.scripts().initialize,
                &call.keys,
                &call.args,
                Access::Write,
            )
            .await?;
        expect_ok(&reply)?;
        Ok(call.run)
    }

    /// `initialize_batch`: every member's `initialize` script in one pipeline, in order —
    /// one round trip for the batch. Each script is atomic on its own, so a member that is
    /// refused (graph absent, run id taken, also by an earlier member) writes nothing and its
    /// neighbours are unaffected; a lost reply makes the members without an answer
    /// `Ambiguous`, as for a single call.
    pub(crate) async fn do_initialize_batch(
        &self,
        members: Vec<BatchedInit>,
    ) -> Vec<Result<Run, StoreError>> {
        // The stateless checks run first; a member they refuse is never sent.
        let calls: Vec<Result<ScriptCall, StoreError>> = members
            .into_iter()
            .map(|m| self.init_call(&m.owner, m.proposal, m.events))
            .collect();
        self.run_batch(&self.scripts().initialize, calls).await
    }

    /// An `initialize` ready to send: the run, the script's keys and its arguments.
    fn init_call(
        &self,
        owner: &OwnerScope,
        proposal: InitProposal,
        events: Vec<Event>,
    ) -> Result<ScriptCall, StoreError> {
        let init = Init::new(owner, proposal, events)?;
        let run = init.run();
        let wake_at = init.initial_state().wake_at;
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
            .set("prefix", k.prefix())
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
            .set("wake_at", opt_time(wake_at))
            .set(
                "ckpt_type",
                init.initial_state().latest_checkpoint_type.as_str(),
            )
            .set("now", init.now().as_micros())
            .set("notify", due(wake_at, init.now()));
        let mut args = vec![params.into_arg()];
        args.extend(document_and_events(run, init.events())?);
        Ok(ScriptCall {
            run: init.run().clone(),
            keys,
            args,
        })
    }

    pub(crate) async fn do_commit_claimed(
        &self,
        scope: &Scope,
        proposal: ClaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let commit = Commit::claimed(proposal, events)?;
        let params = self.claimed_params(scope, &commit);
        self.commit(&self.scripts().commit_claimed, params, &commit)
            .await
    }

    /// `commit_claimed_batch`: every member's script call in one pipeline — one round trip
    /// for the batch. Each script still runs atomically on its own, in member order, so a
    /// member that fails wrote nothing and its neighbours are untouched; a connection lost
    /// before the replies arrive is `Ambiguous` for every member that was sent.
    ///
    /// A run's chained members (a worker's last barrier and completion) are first folded into
    /// one script call (`docs/storage-contract.md`, “Folded chains”): one script run where
    /// there would be two. A folded call that the script refuses says nothing exact about
    /// which member failed, so those members are sent again unfolded, in order, in a second
    /// pipeline, and answered from that.
    pub(crate) async fn do_commit_claimed_batch(
        &self,
        commits: Vec<BatchedCommit>,
    ) -> Vec<Result<Run, StoreError>> {
        // The stateless checks run first; a member they refuse is never sent.
        let checked: Vec<Result<(Scope, Commit), StoreError>> = commits
            .into_iter()
            .map(|c| Ok((c.scope, Commit::claimed(c.proposal, c.events)?)))
            .collect();
        let mut outcomes: Vec<Option<Result<Run, StoreError>>> = checked
            .iter()
            .map(|m| m.as_ref().err().map(|e| Err(e.clone())))
            .collect();
        let script = &self.scripts().commit_claimed;
        let folds = fold_chains(
            checked
                .iter()
                .enumerate()
                .filter_map(|(i, m)| m.as_ref().ok().map(|(scope, c)| (i, scope, c))),
        );
        if let Some(folds) = folds {
            let calls = folds
                .iter()
                .map(|f| self.claimed_call(&f.scope, &f.commit))
                .collect();
            let replies = self.run_batch(script, calls).await;
            for (fold, reply) in folds.iter().zip(replies) {
                if !fold.decides(&reply) {
                    continue;
                }
                for &index in &fold.members {
                    outcomes[index] = Some(match (&reply, &checked[index]) {
                        (Ok(_), Ok((_, commit))) => Ok(commit.run().clone()),
                        (Err(e), _) | (_, Err(e)) => Err(e.clone()),
                    });
                }
            }
        }
        // Every member still unanswered (all of them when nothing folded), one call each.
        let rest: Vec<usize> = (0..outcomes.len())
            .filter(|&i| outcomes[i].is_none())
            .collect();
        if !rest.is_empty() {
            let calls = rest
                .iter()
                .map(|&i| match &checked[i] {
                    Ok((scope, commit)) => self.claimed_call(scope, commit),
                    Err(e) => Err(e.clone()),
                })
                .collect();
            let replies = self.run_batch(script, calls).await;
            for (index, reply) in rest.into_iter().zip(replies) {
                outcomes[index] = Some(reply);
            }
        }
        outcomes
            .into_iter()
            .map(|o| {
                o.unwrap_or_else(|| {
                    Err(StoreError::ambiguous(Message(
                        "a batch member was left without an answer".into(),
                    )))
                })
            })
            .collect()
    }

    /// Sends the calls the stateless checks passed through `script` in one pipeline, in
    /// order, and answers each member: its refusal, its script's refusal, its run, or
    /// `Ambiguous` when the pipeline answered fewer replies than it was sent.
    async fn run_batch(
        &self,
        script: &redis::Script,
        calls: Vec<Result<ScriptCall, StoreError>>,
    ) -> Vec<Result<Run, StoreError>> {
        let sent: Vec<(&[String], &[Vec<u8>])> = calls
            .iter()
            .flatten()
            .map(|call| (call.keys.as_slice(), call.args.as_slice()))
            .collect();
        let mut replies = if sent.is_empty() {
            Vec::new()
        } else {
            self.runner()
                .run_pipelined(script, &sent, Access::Write)
                .await
        }
        .into_iter();
        calls
            .into_iter()
            .map(|call| {
                let call = call?;
                let reply = replies.next().unwrap_or_else(|| {
                    Err(StoreError::ambiguous(Message(
                        "the pipeline answered fewer replies than it was sent".into(),
                    )))
                })?;
                expect_ok(&reply)?;
                Ok(call.run)
            })
            .collect()
    }

    /// A claimed commit ready to send: the kernel's commit, its keys and its arguments.
    fn claimed_call(&self, scope: &Scope, commit: &Commit) -> Result<ScriptCall, StoreError> {
        let params = self.claimed_params(scope, commit);
        let (keys, args) = self.commit_call(params, commit)?;
        Ok(ScriptCall {
            run: commit.run().clone(),
            keys,
            args,
        })
    }

    /// The parameters of the claimed-commit script: the proposed run and the presented token.
    fn claimed_params(&self, scope: &Scope, commit: &Commit) -> Params {
        let token = commit.fence().token().map_or("", |t| t.as_str());
        proposed(self.wake_params(Params::new()).scope(scope), commit.run()).set("token", token)
    }

    pub(crate) async fn do_commit_unclaimed(
        &self,
        scope: &Scope,
        expected_seq: u64,
        proposal: UnclaimedCommit,
        events: Vec<Event>,
    ) -> Result<Run, StoreError> {
        let commit = Commit::unclaimed(expected_seq, proposal, events)?;
        let params = proposed(self.wake_params(Params::new()).scope(scope), commit.run());
        self.commit(&self.scripts().commit_unclaimed, params, &commit)
            .await
    }

    /// Runs one of the two commit scripts with the parameters both share.
    async fn commit(
        &self,
        script: &redis::Script,
        params: Params,
        commit: &Commit,
    ) -> Result<Run, StoreError> {
        let (keys, args) = self.commit_call(params, commit)?;
        let reply = self.script(script, &keys, &args, Access::Write).await?;
        expect_ok(&reply)?;
        Ok(commit.run().clone())
    }

    /// The keys and arguments of a commit script, with the parameters both commits share.
    fn commit_call(
        &self,
        params: Params,
        commit: &Commit,
    ) -> Result<(Vec<String>, Vec<Vec<u8>>), StoreError> {
        // The script keeps or clears the stored marker itself (`keep_admission`), so the state
        // computed here never carries one.
        let ops = commit.committed_state(None);
        let params = committed(params, &ops)
            .set("prefix", self.keys().prefix())
            .set(
                "keep_admission",
                if commit.keeps_admission() { "1" } else { "0" },
            )
            .set("expected_seq", commit.expected_seq())
            .set("ckpt_type", commit.checkpoint_type().as_str())
            .set("now", commit.now().as_micros())
            .set("notify", due(ops.wake_at, commit.now()));
        let run = commit.run();
        let mut args = vec![params.into_arg()];
        args.extend(document_and_events(run, commit.events())?);
        Ok((self.commit_keys(run), args))
    }
}

/// One member's script call in a batch (`initialize` or a claimed commit), kept with the run
/// it answers when its script accepts it.
struct ScriptCall {
    run: Run,
    keys: Vec<String>,
    args: Vec<Vec<u8>>,
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
