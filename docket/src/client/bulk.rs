//! Starting many runs at once: [`Docket::start_runs`].

use docket_core::model::{GraphRef, Run, ValueMap};
use docket_core::runtime::{build_initial_run, propose_init, Initialization, Moment};

use super::{Docket, StartOptions};
use crate::error::DocketError;

/// The most runs [`Docket::start_runs`] sends to the store in one
/// `RunStore::initialize_batch` call: large enough that the per-transaction cost vanishes,
/// small enough that one transaction never holds the writer (SQLite) or a connection for
/// long.
pub const START_BATCH_LIMIT: usize = 500;

impl Docket {
    /// Starts one run of `graph_ref` per `(input, options)` pair, sending the runs to the
    /// store in batches of at most [`START_BATCH_LIMIT`] — one transaction per batch on the
    /// built-in SQL stores — instead of one transaction per run.
    ///
    /// Each pair is validated exactly as [`Docket::start_run`] validates it; the answer has
    /// one outcome per pair, in order, and a pair that fails — invalid input, a taken run id,
    /// the same run id as an earlier pair (`Conflict`) — fails alone, never changing the
    /// others' outcomes.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use docket::core::model::{RunId, RunStatus};
    /// use docket::{parse_input, Docket, StartOptions};
    ///
    /// let docket = Docket::connect("memory://").await?;
    /// # let approval = r#"{"schema_version": 1, "id": "expense",
    /// #     "inputs": {"amount": {"schema": {"type": "integer", "min": 0}, "required": true}},
    /// #     "fields": {"approved": {"schema": {"type": "boolean"}}}, "outputs": {"approved": {}},
    /// #     "nodes": {"approve": {"implementation": "std.approval", "config": {"field": "approved"}}},
    /// #     "edges": {"a": {"from": "$start", "to": "approve"}, "b": {"from": "approve", "to": "$finish"}}}"#;
    /// // `approval`: one required integer input `amount`, then a `std.approval` node.
    /// let graph = docket.publish_graph_json(approval).await?.graph_ref;
    ///
    /// let named = |id: &str| StartOptions { run_id: Some(RunId::new(id).unwrap()), ..StartOptions::default() };
    /// let outcomes = docket
    ///     .start_runs(&graph, vec![
    ///         (parse_input(r#"{"amount": 10}"#)?, named("bulk-1")),
    ///         (parse_input(r#"{"amount": "lots"}"#)?, StartOptions::default()), // invalid input
    ///         (parse_input(r#"{"amount": 30}"#)?, StartOptions::default()),     // generated id
    ///         (parse_input(r#"{"amount": 40}"#)?, named("bulk-1")),             // id taken above
    ///     ])
    ///     .await?;
    /// assert_eq!(outcomes.len(), 4);
    /// assert_eq!(outcomes[0].as_ref().map(|r| r.id.as_str()).ok(), Some("bulk-1"));
    /// assert_eq!(outcomes[1].as_ref().unwrap_err().kind(), "invalid_input");
    /// assert_eq!(outcomes[2].as_ref().map(|r| r.status).ok(), Some(RunStatus::Running));
    /// assert!(outcomes[3].is_err(), "the second run with one id is a conflict");
    /// // The first `bulk-1` kept its own input.
    /// assert_eq!(docket.fetch_run(&RunId::new("bulk-1")?).await?.input["amount"], 10);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// The outer error is for the whole call: [`DocketError::NotFound`] for an unknown or
    /// forged `graph_ref`, `InvalidGraph` / `GraphMismatch` as for
    /// [`Docket::runtime_graph`]. Each inner error is that run's own, as
    /// [`Docket::start_run`] would answer it: `Runtime` for invalid input, store errors
    /// (`Conflict` for a taken id; an infrastructure error of a batch fails every run of that
    /// batch that was not refused on its own, and `Ambiguous` means re-read the run).
    ///
    /// # Cancel safety
    /// Not cancel safe: a dropped call may have started any prefix of the runs.
    pub async fn start_runs(
        &self,
        graph_ref: &GraphRef,
        runs: Vec<(ValueMap, StartOptions)>,
    ) -> Result<Vec<Result<Run, DocketError>>, DocketError> {
        let rtg = self.runtime_graph(graph_ref).await?;
        let e = self.engine.inner();
        let mut outcomes: Vec<Option<Result<Run, DocketError>>> = Vec::with_capacity(runs.len());
        // (index of the run, its moment), waiting to be sent.
        let mut pending: Vec<(usize, Moment)> = Vec::new();
        for (index, (input, options)) in runs.into_iter().enumerate() {
            let moment = build_initial_run(
                &rtg,
                input,
                options.run_id,
                options.metadata,
                e.runtime.ids(),
            )
            .map_err(DocketError::from)
            .and_then(|run| Ok(propose_init(&rtg, &run, e.clock.now())?));
            match moment {
                Ok(Initialization::Moment(moment)) => {
                    outcomes.push(None);
                    pending.push((index, *moment));
                }
                Ok(Initialization::Terminal(run)) => outcomes.push(Some(Ok(*run))),
                Err(error) => outcomes.push(Some(Err(error))),
            }
        }
        let mut started = Vec::new();
        for chunk in chunks(pending, START_BATCH_LIMIT) {
            let (indexes, moments): (Vec<usize>, Vec<Moment>) = chunk.into_iter().unzip();
            let answers = e
                .lifecycle
                .start_batch(e.backend.as_ref(), &self.owner, moments)
                .await;
            for (index, answer) in indexes.into_iter().zip(answers) {
                match answer {
                    Ok(moment) => started.push((index, moment.run)),
                    Err(error) => outcomes[index] = Some(Err(error.into())),
                }
            }
        }
        // Inline testing mode drives each started run on, as `start_run` does.
        for (index, run) in started {
            outcomes[index] = Some(self.after_signal(run).await);
        }
        Ok(outcomes
            .into_iter()
            // Every run was answered above; the fallback is never taken.
            .map(|outcome| outcome.unwrap_or(Err(DocketError::NotFound)))
            .collect())
    }
}

/// `items` in order, cut into vectors of at most `size`.
fn chunks<T>(items: Vec<T>, size: usize) -> Vec<Vec<T>> {
    let mut out = Vec::new();
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        out.push(items.by_ref().take(size).collect());
    }
    out
}
