//! Reading run events.

use docket_core::model::{Event, EventPage, EventQuery, RunId};

use super::Docket;
use crate::error::DocketError;

impl Docket {
    /// One event, by its sequence number (1-based, gap-free as written).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use docket::{Docket, DocketError, StartOptions, TestingMode};
    /// # let backend = docket::connect_backend("memory://").await?;
    /// # // Inline testing mode: `start_run` runs the graph to its end in the caller.
    /// # let docket = Docket::builder(backend, docket::nodes::registry()).testing(TestingMode::Inline).build()?;
    /// # let graph = docket.publish_graph_json(r#"{"schema_version": 1, "id": "three",
    /// #     "fields": {"n": {"schema": {"type": "integer"}}}, "outputs": {"n": {}},
    /// #     "nodes": {"a": {"implementation": "std.increment", "config": {"field": "n"}},
    /// #               "b": {"implementation": "std.increment", "config": {"field": "n"}},
    /// #               "c": {"implementation": "std.increment", "config": {"field": "n"}}},
    /// #     "edges": {"1": {"from": "$start", "to": "a"}, "2": {"from": "a", "to": "b"},
    /// #               "3": {"from": "b", "to": "c"}, "4": {"from": "c", "to": "$finish"}}}"#).await?.graph_ref;
    /// // A finished run of a three-node graph.
    /// let run = docket.start_run(&graph, Default::default(), StartOptions::default()).await?;
    /// let first = docket.fetch_event(&run.id, 1).await?;
    /// assert_eq!(first.event_type.as_str(), "run_initialized");
    /// // Past the end (or pruned, or another owner's run): not found.
    /// assert!(matches!(docket.fetch_event(&run.id, 10_000).await, Err(DocketError::NotFound)));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`DocketError::NotFound`] (run not visible, seq absent or pruned); store errors.
    pub async fn fetch_event(&self, run_id: &RunId, seq: u64) -> Result<Event, DocketError> {
        Ok(self
            .backend()
            .fetch_event(&self.scope(), run_id, seq)
            .await?)
    }

    /// The newest retained event (`None` when every event was pruned).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use docket::{Docket, DocketError, StartOptions, TestingMode};
    /// # let backend = docket::connect_backend("memory://").await?;
    /// # // Inline testing mode: `start_run` runs the graph to its end in the caller.
    /// # let docket = Docket::builder(backend, docket::nodes::registry()).testing(TestingMode::Inline).build()?;
    /// # let graph = docket.publish_graph_json(r#"{"schema_version": 1, "id": "three",
    /// #     "fields": {"n": {"schema": {"type": "integer"}}}, "outputs": {"n": {}},
    /// #     "nodes": {"a": {"implementation": "std.increment", "config": {"field": "n"}},
    /// #               "b": {"implementation": "std.increment", "config": {"field": "n"}},
    /// #               "c": {"implementation": "std.increment", "config": {"field": "n"}}},
    /// #     "edges": {"1": {"from": "$start", "to": "a"}, "2": {"from": "a", "to": "b"},
    /// #               "3": {"from": "b", "to": "c"}, "4": {"from": "c", "to": "$finish"}}}"#).await?.graph_ref;
    /// // A finished run of a three-node graph.
    /// let run = docket.start_run(&graph, Default::default(), StartOptions::default()).await?;
    /// let latest = docket.fetch_latest_event(&run.id).await?.expect("events are retained");
    /// assert_eq!(latest.seq, run.event_seq);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`DocketError::NotFound`]; store errors.
    pub async fn fetch_latest_event(&self, run_id: &RunId) -> Result<Option<Event>, DocketError> {
        Ok(self
            .backend()
            .fetch_latest_event(&self.scope(), run_id)
            .await?)
    }

    /// Events after `query.after_seq`, ascending: keyset paging that stays correct while
    /// the run goes on writing. Keep `next_after_seq` of a page to ask for the next one
    /// (also across restarts, e.g. to tail a run into another system).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use docket::{Docket, DocketError, StartOptions, TestingMode};
    /// # let backend = docket::connect_backend("memory://").await?;
    /// # // Inline testing mode: `start_run` runs the graph to its end in the caller.
    /// # let docket = Docket::builder(backend, docket::nodes::registry()).testing(TestingMode::Inline).build()?;
    /// # let graph = docket.publish_graph_json(r#"{"schema_version": 1, "id": "three",
    /// #     "fields": {"n": {"schema": {"type": "integer"}}}, "outputs": {"n": {}},
    /// #     "nodes": {"a": {"implementation": "std.increment", "config": {"field": "n"}},
    /// #               "b": {"implementation": "std.increment", "config": {"field": "n"}},
    /// #               "c": {"implementation": "std.increment", "config": {"field": "n"}}},
    /// #     "edges": {"1": {"from": "$start", "to": "a"}, "2": {"from": "a", "to": "b"},
    /// #               "3": {"from": "b", "to": "c"}, "4": {"from": "c", "to": "$finish"}}}"#).await?.graph_ref;
    /// // A finished run of a three-node graph.
    /// let run = docket.start_run(&graph, Default::default(), StartOptions::default()).await?;
    /// use docket::core::model::EventQuery;
    ///
    /// let mut query = EventQuery { after_seq: 0, limit: 5 };
    /// let mut seen = Vec::new();
    /// loop {
    ///     let page = docket.list_events(&run.id, &query).await?;
    ///     assert!(page.events.len() <= 5);
    ///     seen.extend(page.events.iter().map(|e| e.seq));
    ///     if !page.has_more {
    ///         break;
    ///     }
    ///     query.after_seq = page.next_after_seq;
    /// }
    /// assert_eq!(seen, (1..=run.event_seq).collect::<Vec<_>>());
    ///
    /// // A page size outside 1..=1000 is refused.
    /// let err = docket.list_events(&run.id, &EventQuery { after_seq: 0, limit: 0 }).await.unwrap_err();
    /// assert!(matches!(err, DocketError::Store(_)), "{err}");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`DocketError::NotFound`]; store errors (`InvalidArgument` for a bad limit).
    pub async fn list_events(
        &self,
        run_id: &RunId,
        query: &EventQuery,
    ) -> Result<EventPage, DocketError> {
        Ok(self
            .backend()
            .list_events(&self.scope(), run_id, query)
            .await?)
    }

    /// Every retained event of a run, ascending (pages through [`Docket::list_events`]).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use docket::{Docket, DocketError, StartOptions, TestingMode};
    /// # let backend = docket::connect_backend("memory://").await?;
    /// # // Inline testing mode: `start_run` runs the graph to its end in the caller.
    /// # let docket = Docket::builder(backend, docket::nodes::registry()).testing(TestingMode::Inline).build()?;
    /// # let graph = docket.publish_graph_json(r#"{"schema_version": 1, "id": "three",
    /// #     "fields": {"n": {"schema": {"type": "integer"}}}, "outputs": {"n": {}},
    /// #     "nodes": {"a": {"implementation": "std.increment", "config": {"field": "n"}},
    /// #               "b": {"implementation": "std.increment", "config": {"field": "n"}},
    /// #               "c": {"implementation": "std.increment", "config": {"field": "n"}}},
    /// #     "edges": {"1": {"from": "$start", "to": "a"}, "2": {"from": "a", "to": "b"},
    /// #               "3": {"from": "b", "to": "c"}, "4": {"from": "c", "to": "$finish"}}}"#).await?.graph_ref;
    /// // A finished run of a three-node graph.
    /// let run = docket.start_run(&graph, Default::default(), StartOptions::default()).await?;
    /// use docket::core::model::EventType;
    ///
    /// let events = docket.all_events(&run.id).await?;
    /// let completed: Vec<_> = events
    ///     .iter()
    ///     .filter(|e| e.event_type == EventType::NodeCompleted)
    ///     .filter_map(|e| e.node_id.as_deref())
    ///     .collect();
    /// assert_eq!(completed, ["a", "b", "c"]);
    /// assert_eq!(events.iter().filter(|e| e.event_type == EventType::RunCompleted).count(), 1);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`Docket::list_events`].
    pub async fn all_events(&self, run_id: &RunId) -> Result<Vec<Event>, DocketError> {
        let mut out = Vec::new();
        let mut query = EventQuery {
            after_seq: 0,
            limit: docket_core::model::MAX_PAGE_LIMIT,
        };
        loop {
            let page = self.list_events(run_id, &query).await?;
            out.extend(page.events);
            if !page.has_more {
                return Ok(out);
            }
            query.after_seq = page.next_after_seq;
        }
    }
}
