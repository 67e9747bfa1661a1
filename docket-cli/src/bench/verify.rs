//! Reading back what the bench wrote: one run and its whole history, page by page, so runs
//! with hundreds of thousands of events are checked in constant memory.

use docket_core::model::{EventQuery, Run, RunId, MAX_PAGE_LIMIT};

use super::BenchError;
use docket::history::HistoryCheck;
use docket::Docket;

/// Run `id` as committed, and every violation of its history.
pub(crate) async fn run_and_history(
    docket: &Docket,
    id: &RunId,
) -> Result<(Run, Vec<String>), BenchError> {
    let run = docket.fetch_run(id).await?;
    let mut check = HistoryCheck::new();
    let mut query = EventQuery {
        after_seq: 0,
        limit: MAX_PAGE_LIMIT,
    };
    loop {
        let page = docket.list_events(id, &query).await?;
        check.feed(&page.events);
        if !page.has_more {
            break;
        }
        query.after_seq = page.next_after_seq;
    }
    let problems = check.finish(&run);
    Ok((run, problems))
}
