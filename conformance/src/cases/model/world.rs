//! One generated history applied to the backend under test and to a fresh reference
//! [`MemoryStore`] side by side: every result and the whole observable state are compared
//! after every step, with claim tokens mapped between the two stores.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use docket_core::memory::MemoryStore;
use docket_core::model::{
    ClaimToken, Event, InterruptStatus, OwnerScope, Run, RunId, RunStatus, Scope, Timestamp,
    ValueMap,
};
use docket_core::runtime::Moment;
use docket_core::store::{
    AbandonBackoff, AbandonMode, AbandonPolicy, Backend, BatchedCommit, BatchedInit, ClaimBatch,
    ClaimRequest, ClaimedCommit, ClaimedSchedule, PrunePolicy, ReleaseWake, RunStore, StoreError,
    TenantShare,
};

use super::ops::{Mode, Op, Sched, Seq, Tok, RUNS};
use crate::fixtures::{
    claimed_commit, event_query, init_moment, init_proposal, moment_to, nz, run_query, t, tenant,
    tiny_graph, unclaimed_commit, with_schedule, Published,
};

/// A divergence or a setup failure, described for the failure report.
pub type Divergence = String;

fn owner(index: u8) -> OwnerScope {
    match index {
        0 => OwnerScope::Tenantless,
        1 => tenant("a"),
        _ => tenant("b"),
    }
}

fn scope(index: u8) -> Scope {
    match index {
        0 => Scope::System,
        1 => Scope::Tenantless,
        2 => Scope::from(tenant("a")),
        _ => Scope::from(tenant("b")),
    }
}

fn run_id(index: u8) -> RunId {
    RunId::new(format!("m{index}")).unwrap_or_else(|e| panic!("model run id: {e}"))
}

fn run_index(id: &RunId) -> Option<u8> {
    (0..RUNS).find(|&i| &run_id(i) == id)
}

/// Compares two results: equal values, or errors of the same kind.
/// Member by member, as [`same`]: a batch call beside the same calls one by one.
fn same_members<T: PartialEq + Debug>(
    what: &str,
    sut: &[Result<T, StoreError>],
    model: &[Result<T, StoreError>],
) -> Result<(), Divergence> {
    if sut.len() != model.len() {
        return Err(format!(
            "{what}: {} outcomes for {} members",
            sut.len(),
            model.len()
        ));
    }
    for (i, (a, b)) in sut.iter().zip(model).enumerate() {
        same(&format!("{what} member {i}"), a, b)?;
    }
    Ok(())
}

/// One `commit_claimed_batch` for the store under test beside the same commits one by one for
/// the model (each store presents its own token for the same pick).
#[derive(Default)]
struct Paired {
    batch: Vec<BatchedCommit>,
    singles: Vec<(Scope, ClaimedCommit, Vec<Event>)>,
}

impl Paired {
    /// Adds `moment` built on `expected` with `schedule`, under `tokens` (the store's, the
    /// model's).
    fn push(
        &mut self,
        scope: Scope,
        moment: Moment,
        expected: u64,
        schedule: ClaimedSchedule,
        tokens: &(ClaimToken, ClaimToken),
        now: Timestamp,
    ) {
        let mut proposal = with_schedule(claimed_commit(&moment, &tokens.0, now), schedule);
        proposal.expected_seq = expected;
        let mut single = proposal.clone();
        single.claim_token = tokens.1.clone();
        self.batch.push(BatchedCommit {
            scope: scope.clone(),
            proposal,
            events: moment.events.clone(),
        });
        self.singles.push((scope, single, moment.events));
    }

    /// Sends the batch and the singles and compares the outcomes member by member.
    async fn compare(
        self,
        what: &str,
        sut: &dyn Backend,
        model: &MemoryStore,
    ) -> Result<(), Divergence> {
        let a = sut.commit_claimed_batch(self.batch).await;
        let mut b = Vec::with_capacity(self.singles.len());
        for (scope, proposal, events) in self.singles {
            b.push(model.commit_claimed(&scope, proposal, events).await);
        }
        same_members(what, &a, &b)
    }
}

fn same<T: PartialEq + Debug>(
    what: &str,
    sut: &Result<T, StoreError>,
    model: &Result<T, StoreError>,
) -> Result<(), Divergence> {
    match (sut, model) {
        (Ok(a), Ok(b)) if a == b => Ok(()),
        (Err(a), Err(b)) if a.kind() == b.kind() => Ok(()),
        _ => Err(format!("{what}:\n  backend: {sut:?}\n  model:   {model:?}")),
    }
}

/// A claim batch without its tokens (which each store mints itself).
fn tokenless(batch: &Result<ClaimBatch, StoreError>) -> Result<Vec<String>, StoreError> {
    batch.as_ref().map_err(Clone::clone).map(|b| {
        let leases = b.leases.iter().map(|l| {
            format!(
                "lease {} {:?} {}@{} seq {} at {:?} attempt {} ttl {}",
                l.run_id,
                l.owner,
                l.graph_id,
                l.graph_hash,
                l.checkpoint_seq,
                l.claimed_at,
                l.claim_attempt,
                l.orphan_ttl_ms
            )
        });
        let poisons = b
            .poisoned
            .iter()
            .map(|p| format!("poison {} at {:?} {:?}", p.run_id, p.poisoned_at, p.reason));
        leases.chain(poisons).collect()
    })
}

/// The backend under test, the model, the shared clock and the tokens each store minted.
pub struct World {
    sut: Arc<dyn Backend>,
    model: MemoryStore,
    now: Timestamp,
    /// Per run, every token minted so far as (backend token, model token), oldest first.
    tokens: BTreeMap<u8, Vec<(ClaimToken, ClaimToken)>>,
    graphs: Vec<Published>,
}

impl World {
    /// Publishes the tiny graph for every owner on both stores.
    pub async fn new(sut: Arc<dyn Backend>) -> Result<World, Divergence> {
        let world = World {
            sut,
            model: MemoryStore::new(),
            now: t(0),
            tokens: BTreeMap::new(),
            graphs: (0..3).map(|i| tiny_graph(&owner(i))).collect(),
        };
        for graph in &world.graphs {
            for store in [&*world.sut, &world.model as &dyn Backend] {
                store
                    .save_graph(&graph.owner, &graph.graph_ref, &graph.doc, t(0))
                    .await
                    .map_err(|e| format!("setup: save_graph failed: {e}"))?;
            }
        }
        Ok(world)
    }

    fn token(&self, run: u8, tok: Tok) -> (ClaimToken, ClaimToken) {
        let minted = self.tokens.get(&run).map_or(&[][..], Vec::as_slice);
        let pick = match tok {
            Tok::Current => minted.last(),
            Tok::Previous if minted.len() >= 2 => minted.get(minted.len() - 2),
            Tok::Previous | Tok::Foreign => None,
        };
        pick.cloned().unwrap_or_else(|| {
            let foreign = ClaimToken::mint();
            (foreign.clone(), foreign)
        })
    }

    /// The model's committed run, or the initial document of a run never started (so
    /// proposals for unknown runs are well-formed and reach the lookup).
    async fn base(&self, run: u8) -> Run {
        match self.model.fetch_run(&Scope::System, &run_id(run)).await {
            Ok(run) => run,
            Err(_) => init_moment(&self.graphs[0], &run_id(run), ValueMap::new(), t(0)).run,
        }
    }

    /// The next moment after `run`'s base moved to `to`, built on the seq `seq` picks.
    async fn proposal(&self, run: u8, seq: Seq, to: RunStatus) -> (Moment, u64) {
        let mut base = self.base(run).await;
        let expected = match seq {
            Seq::Current => base.checkpoint_seq,
            Seq::Stale => base.checkpoint_seq.saturating_sub(1),
            Seq::Future => base.checkpoint_seq + 1,
        };
        base.checkpoint_seq = expected;
        (self.moment_on(&base, to), expected)
    }

    /// The moment moving `base` to `to` (running resolves open interrupts).
    fn moment_on(&self, base: &Run, to: RunStatus) -> Moment {
        let mut moment = moment_to(base, to, self.now);
        if to == RunStatus::Running {
            for interrupt in moment.run.interrupts.values_mut() {
                if interrupt.status == InterruptStatus::Open {
                    interrupt.status = InterruptStatus::Resolved;
                    interrupt.resolved_at = Some(self.now);
                }
            }
        }
        moment
    }

    fn release_wake(&self, sched: Sched, moment: &Moment) -> ReleaseWake {
        match sched {
            Sched::Fitting | Sched::Retain => moment.disposition.unclaimed_wake(),
            Sched::Immediate => ReleaseWake::Immediate,
            Sched::At(ms) => ReleaseWake::At(self.now.add_millis(ms)),
            Sched::External => ReleaseWake::External,
            Sched::Terminal => ReleaseWake::Terminal,
        }
    }

    fn claimed_schedule(&self, sched: Sched, moment: &Moment) -> ClaimedSchedule {
        match sched {
            Sched::Fitting => moment.disposition.claimed_schedule(),
            Sched::Retain => ClaimedSchedule::RetainClaim,
            other => ClaimedSchedule::Release(self.release_wake(other, moment)),
        }
    }

    /// Applies `op` to both stores and compares the results.
    pub async fn apply(&mut self, op: &Op) -> Result<(), Divergence> {
        let now = self.now;
        let (sut, model) = (&*self.sut, &self.model);
        match *op {
            Op::Start {
                run,
                owner: o,
                wake_in,
            } => {
                let graph = &self.graphs[usize::from(o)];
                let moment = init_moment(graph, &run_id(run), ValueMap::new(), now);
                let proposal = init_proposal(&moment, now.add_millis(wake_in));
                let a = sut
                    .initialize(&graph.owner, proposal.clone(), moment.events.clone())
                    .await;
                let b = model
                    .initialize(&graph.owner, proposal, moment.events.clone())
                    .await;
                same("initialize", &a, &b)
            }
            Op::StartBatch { ref members } => {
                let batch: Vec<BatchedInit> = members
                    .iter()
                    .map(|&(run, o, wake_in)| {
                        let graph = &self.graphs[usize::from(o)];
                        let moment = init_moment(graph, &run_id(run), ValueMap::new(), now);
                        BatchedInit {
                            owner: graph.owner.clone(),
                            proposal: init_proposal(&moment, now.add_millis(wake_in)),
                            events: moment.events,
                        }
                    })
                    .collect();
                let a = sut.initialize_batch(batch.clone()).await;
                let mut b = Vec::with_capacity(batch.len());
                for member in batch {
                    b.push(
                        model
                            .initialize(&member.owner, member.proposal, member.events)
                            .await,
                    );
                }
                same_members("initialize_batch", &a, &b)
            }
            Op::Claim {
                limit,
                ttl_ms,
                max_attempts,
                preference,
                policy: order,
            } => {
                let policy = ClaimRequest {
                    policy: order,
                    now,
                    limit: nz(limit),
                    orphan_ttl_ms: ttl_ms,
                    max_claim_attempts: nz(max_attempts),
                    preference,
                };
                let a = sut.claim_due(&policy).await;
                let b = model.claim_due(&policy).await;
                same("claim_due", &tokenless(&a), &tokenless(&b))?;
                if let (Ok(a), Ok(b)) = (a, b) {
                    for (la, lb) in a.leases.into_iter().zip(b.leases) {
                        if let Some(i) = run_index(&la.run_id) {
                            self.tokens
                                .entry(i)
                                .or_default()
                                .push((la.claim_token, lb.claim_token));
                        }
                    }
                }
                Ok(())
            }
            Op::Share {
                owner: o,
                weight,
                cap,
            } => {
                let Some(tenant) = owner(o).tenant_id().cloned() else {
                    return Ok(());
                };
                let share = TenantShare {
                    weight: nz(weight),
                    cap: cap.map(nz),
                };
                let a = sut.set_tenant_share(&tenant, share).await;
                let b = model.set_tenant_share(&tenant, share).await;
                same("set_tenant_share", &a, &b)?;
                same(
                    "tenant_shares",
                    &sut.tenant_shares().await,
                    &model.tenant_shares().await,
                )
            }
            Op::Commit {
                run,
                token,
                seq,
                to,
                schedule,
                scope: s,
            } => {
                let (ta, tb) = self.token(run, token);
                let (moment, expected) = self.proposal(run, seq, to).await;
                let schedule = self.claimed_schedule(schedule, &moment);
                let mut pa = with_schedule(claimed_commit(&moment, &ta, now), schedule);
                pa.expected_seq = expected;
                let mut pb = pa.clone();
                pb.claim_token = tb;
                let a = sut
                    .commit_claimed(&scope(s), pa, moment.events.clone())
                    .await;
                let b = model
                    .commit_claimed(&scope(s), pb, moment.events.clone())
                    .await;
                same("commit_claimed", &a, &b)
            }
            Op::Batch { ref members } => {
                let mut pair = Paired::default();
                for &(run, token, seq, to, schedule, s) in members {
                    let tokens = self.token(run, token);
                    let (moment, expected) = self.proposal(run, seq, to).await;
                    let schedule = self.claimed_schedule(schedule, &moment);
                    pair.push(scope(s), moment, expected, schedule, &tokens, now);
                }
                pair.compare("commit_claimed_batch", sut, model).await
            }
            Op::Chain {
                run,
                token,
                seq,
                scope: s,
                first,
                second,
            } => {
                let tokens = self.token(run, token);
                let (m1, expected) = self.proposal(run, seq, first.0).await;
                let m2 = self.moment_on(&m1.run, second.0);
                let on_first = m1.run.checkpoint_seq;
                let mut pair = Paired::default();
                for (moment, expected, sched) in [(m1, expected, first.1), (m2, on_first, second.1)]
                {
                    let schedule = self.claimed_schedule(sched, &moment);
                    pair.push(scope(s), moment, expected, schedule, &tokens, now);
                }
                pair.compare("commit_claimed_batch (a chain)", sut, model)
                    .await
            }
            Op::Signal {
                run,
                seq,
                to,
                wake,
                scope: s,
            } => {
                let (moment, expected) = self.proposal(run, seq, to).await;
                let mut proposal = unclaimed_commit(&moment, now);
                proposal.wake = self.release_wake(wake, &moment);
                let a = sut
                    .commit_unclaimed(&scope(s), expected, proposal.clone(), moment.events.clone())
                    .await;
                let b = model
                    .commit_unclaimed(&scope(s), expected, proposal, moment.events.clone())
                    .await;
                same("commit_unclaimed", &a, &b)
            }
            Op::Abandon {
                run,
                token,
                seq,
                max,
                mode,
                retry_in,
            } => {
                let (ta, tb) = self.token(run, token);
                let base = self.base(run).await.checkpoint_seq;
                let expected = match seq {
                    Seq::Current => base,
                    Seq::Stale => base.saturating_sub(1),
                    Seq::Future => base + 1,
                };
                let policy = AbandonPolicy {
                    expected_seq: expected,
                    now,
                    retry_at: now.add_millis(retry_in),
                    max_claim_abandons: nz(max),
                    mode: match mode {
                        Mode::Poisoning => AbandonMode::Poisoning,
                        Mode::Plain => AbandonMode::NonPoisoning { backoff: None },
                        Mode::Backoff => AbandonMode::NonPoisoning {
                            backoff: Some(AbandonBackoff {
                                base_ms: 100,
                                cap_ms: 300,
                            }),
                        },
                    },
                };
                let a = sut.abandon_claim(&run_id(run), &ta, &policy).await;
                let b = model.abandon_claim(&run_id(run), &tb, &policy).await;
                same("abandon_claim", &a, &b)
            }
            Op::Release { run, token } => {
                let (ta, tb) = self.token(run, token);
                let a = sut.release_claim(&run_id(run), &ta, now).await;
                let b = model.release_claim(&run_id(run), &tb, now).await;
                same("release_claim", &a, &b)
            }
            Op::Advance { ms } => {
                self.now = now.add_millis(ms);
                Ok(())
            }
            Op::RetryPoisoned { run, scope: s } => {
                let a = sut.retry_poisoned_run(&scope(s), &run_id(run), now).await;
                let b = model.retry_poisoned_run(&scope(s), &run_id(run), now).await;
                same("retry_poisoned_run", &a, &b)
            }
            Op::Prune {
                event_ms,
                run_ms,
                batch,
            } => {
                let policy = PrunePolicy {
                    now,
                    event_retention_ms: event_ms,
                    run_retention_ms: run_ms,
                    batch_size: nz(batch),
                };
                let a = sut.prune(&policy).await;
                let b = model.prune(&policy).await;
                same("prune", &a, &b)
            }
        }
    }

    /// Compares everything observable: every run's projection and events, and the listing.
    pub async fn compare_state(&self) -> Result<(), Divergence> {
        let (sut, model) = (&*self.sut, &self.model);
        for i in 0..RUNS {
            let id = run_id(i);
            same(
                &format!("inspect_run {id}"),
                &sut.inspect_run(&Scope::System, &id).await,
                &model.inspect_run(&Scope::System, &id).await,
            )?;
            let query = event_query(0, 1_000);
            same(
                &format!("list_events {id}"),
                &sut.list_events(&Scope::System, &id, &query).await,
                &model.list_events(&Scope::System, &id, &query).await,
            )?;
        }
        same(
            "list_runs",
            &sut.list_runs(&Scope::System, &run_query(1_000)).await,
            &model.list_runs(&Scope::System, &run_query(1_000)).await,
        )
    }
}

/// Applies `ops` to a fresh backend and a fresh model, comparing after every step.
///
/// # Errors
/// The first divergence, with the step that caused it.
pub async fn run_history(sut: Arc<dyn Backend>, ops: &[Op]) -> Result<(), Divergence> {
    let mut world = World::new(sut).await?;
    for (step, op) in ops.iter().enumerate() {
        world
            .apply(op)
            .await
            .map_err(|d| format!("step {step} ({op:?}) returned differently: {d}"))?;
        world
            .compare_state()
            .await
            .map_err(|d| format!("after step {step} ({op:?}) the state differs: {d}"))?;
    }
    Ok(())
}
