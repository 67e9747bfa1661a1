//! Reading run events.

use docket_core::model::{Event, EventPage, EventQuery, RunId};

use super::Docket;
use crate::error::DocketError;

impl Docket {
    /// One event.
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
    /// # Errors
    /// [`DocketError::NotFound`]; store errors.
    pub async fn fetch_latest_event(&self, run_id: &RunId) -> Result<Option<Event>, DocketError> {
        Ok(self
            .backend()
            .fetch_latest_event(&self.scope(), run_id)
            .await?)
    }

    /// Events after `query.after_seq`, ascending.
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
