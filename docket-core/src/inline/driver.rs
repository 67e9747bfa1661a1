//! The drive loop: accept proposed moments, serve parks, stop on a wait, a terminal run or
//! the step limit.

use super::{InlineError, InlineOptions, InlineRun, Stop};
use crate::graph::RuntimeGraph;
use crate::model::{validate_durable, CheckpointType, Run, Timestamp};
use crate::node::NodeRegistry;
use crate::runtime::{
    propose_advance, Checkpoint, Disposition, ErrorKind, Moment, ParkKind, Phase, Proposal,
    RuntimeError,
};

/// One inline drive: the committed run so far and its checkpoints.
pub(super) struct Driver<'a> {
    rtg: &'a RuntimeGraph,
    nodes: &'a NodeRegistry,
    options: &'a InlineOptions,
    run: Run,
    checkpoints: Vec<Checkpoint>,
    floor: Option<Timestamp>,
}

impl<'a> Driver<'a> {
    pub(super) fn new(
        rtg: &'a RuntimeGraph,
        nodes: &'a NodeRegistry,
        options: &'a InlineOptions,
        run: Run,
    ) -> Self {
        Driver {
            rtg,
            nodes,
            options,
            run,
            checkpoints: Vec::new(),
            floor: None,
        }
    }

    /// Commits `moment` the way a store would: it must be the next checkpoint and durable.
    pub(super) fn accept(&mut self, moment: &Moment) -> Result<(), InlineError> {
        let expected = self.run.checkpoint_seq + 1;
        if moment.run.checkpoint_seq != expected {
            return Err(self.fail(RuntimeError::new(
                ErrorKind::InvalidRun,
                Phase::Settle,
                format!(
                    "proposed checkpoint {} does not follow {}",
                    moment.run.checkpoint_seq, self.run.checkpoint_seq
                ),
            )));
        }
        if let Err(e) = validate_durable(&moment.run) {
            return Err(self.fail(RuntimeError::new(
                ErrorKind::InvalidRun,
                Phase::Settle,
                format!("the proposed run is not durable: {e}"),
            )));
        }
        self.run = moment.run.clone();
        self.checkpoints.push(Checkpoint::from_moment(moment));
        Ok(())
    }

    /// Drives until a wait, a terminal run or the step limit.
    pub(super) async fn drive(mut self) -> Result<InlineRun, InlineError> {
        let mut committed = 0_u64;
        loop {
            if self.options.max_steps.is_some_and(|max| committed >= max) {
                return Ok(self.finish(Stop::MaxSteps));
            }
            match self.advance().await? {
                Proposal::Moment(moment) => {
                    self.accept(&moment)?;
                    if moment.checkpoint_type != CheckpointType::RetryScheduled {
                        committed += 1;
                    }
                    match moment.disposition {
                        Disposition::Continue
                        | Disposition::Park {
                            kind: ParkKind::Immediate,
                            ..
                        } => {}
                        Disposition::Park {
                            kind: ParkKind::At(t),
                            ..
                        } => {
                            let updated = moment.run.updated_at.unwrap_or(moment.proposed_at);
                            self.options.sleeper.sleep(t.millis_since(updated)).await;
                            self.floor = Some(t);
                        }
                        Disposition::Park {
                            kind: ParkKind::External,
                            ..
                        } => return Ok(self.finish(Stop::Waiting)),
                        Disposition::Park {
                            kind: ParkKind::Terminal,
                            ..
                        } => return Ok(self.finish(Stop::Terminal)),
                    }
                }
                Proposal::Park {
                    resume_at, wait_ms, ..
                } => {
                    self.options.sleeper.sleep(wait_ms).await;
                    self.floor = Some(resume_at);
                }
                Proposal::Wait { .. } => return Ok(self.finish(Stop::Waiting)),
                Proposal::Terminal(_) => return Ok(self.finish(Stop::Terminal)),
            }
        }
    }

    /// Commits exactly one moment, serving uncommitted parks first.
    pub(super) async fn step(mut self) -> Result<InlineRun, InlineError> {
        loop {
            match self.advance().await? {
                Proposal::Moment(moment) => {
                    self.accept(&moment)?;
                    return Ok(self.finish(Stop::Stepped));
                }
                Proposal::Park {
                    resume_at, wait_ms, ..
                } => {
                    self.options.sleeper.sleep(wait_ms).await;
                    self.floor = Some(resume_at);
                }
                Proposal::Wait { .. } => return Ok(self.finish(Stop::Waiting)),
                Proposal::Terminal(_) => return Ok(self.finish(Stop::Terminal)),
            }
        }
    }

    /// One `propose_advance`, with the served park deadline as resume floor (used once).
    async fn advance(&mut self) -> Result<Proposal, InlineError> {
        let config = match self.floor.take() {
            Some(floor) => self.options.config.clone().with_resume_floor(Some(floor)),
            None => self.options.config.clone(),
        };
        match propose_advance(self.rtg, &self.run, self.nodes, &config).await {
            Ok(p) => Ok(p),
            Err(e) => Err(self.fail(e)),
        }
    }

    pub(super) fn finish(self, stop: Stop) -> InlineRun {
        InlineRun {
            run: self.run,
            checkpoints: self.checkpoints,
            stop,
        }
    }

    pub(super) fn fail(&self, error: RuntimeError) -> InlineError {
        InlineError {
            error,
            checkpoints: self.checkpoints.clone(),
        }
    }
}
