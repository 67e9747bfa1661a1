//! When the next scheduled poll starts (`docs/engine.md`, “The dispatcher”).
//!
//! The promise behind a poll interval is that a run which becomes due without a wake hint is
//! claimed within about one interval. A poll that starts one delay after the previous one
//! *ended* breaks it by the length of two polls, so the timer counts from the previous poll's
//! start and subtracts an allowance for how long the next poll will take. The allowance is
//! the slowest of the last [`RECENT_POLLS`] successful polls, not only the last one: a store
//! whose claims vary (a PostgreSQL claim is a write that waits for its WAL flush: the bench
//! measured one of 26.8 ms where most take under a millisecond) otherwise misses the interval
//! on exactly the poll that follows a fast one. So that one stall does not make the worker
//! poll back to back for the next several polls, an allowance taken from older polls is capped
//! at half the delay; the last poll's own duration is always allowed in full. One millisecond
//! more goes to the timer's tick ([`TIMER_SLACK`]).

use std::time::Duration;

use tokio::time::Instant;

/// How many of the latest successful polls the allowance looks at.
pub(crate) const RECENT_POLLS: usize = 8;

/// Added to every allowance: tokio's timer fires on the first millisecond tick at or after a
/// deadline, so a sleep lasts up to a millisecond longer than asked, and the vehicle a poll
/// launches takes a little time more before it reads the run.
pub(crate) const TIMER_SLACK: Duration = Duration::from_millis(1);

/// The durations of the latest successful polls, oldest overwritten first.
#[derive(Debug, Default)]
pub(crate) struct RecentPolls {
    took: [Duration; RECENT_POLLS],
    /// Where the next duration goes; the slot before it holds the last one.
    next: usize,
}

impl RecentPolls {
    /// Records one successful poll's duration.
    pub(crate) fn push(&mut self, took: Duration) {
        self.took[self.next] = took;
        self.next = (self.next + 1) % RECENT_POLLS;
    }

    /// The time to subtract from `delay`: the last poll's duration, or the slowest of the
    /// recent ones capped at half of `delay`, whichever is longer, plus [`TIMER_SLACK`].
    pub(crate) fn allowance(&self, delay: Duration) -> Duration {
        let last = self.took[(self.next + RECENT_POLLS - 1) % RECENT_POLLS];
        let slowest = self.took.iter().copied().max().unwrap_or_default();
        last.max(slowest.min(delay / 2)) + TIMER_SLACK
    }
}

/// The instant the next scheduled poll starts, for a poll that started at `started`, finished
/// at `now`, and a jittered `delay`: `delay` after `started` less the allowance for the next
/// poll's duration, and never sooner than 1 ms after `now` (a store slower than the interval
/// is polled back to back, not in a busy loop).
pub(crate) fn next_poll_at(
    started: Instant,
    now: Instant,
    delay: Duration,
    recent: &RecentPolls,
) -> Instant {
    let at = (started + delay)
        .checked_sub(recent.allowance(delay))
        .unwrap_or(now);
    at.max(now + Duration::from_millis(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn recent(tooks: &[u64]) -> RecentPolls {
        let mut r = RecentPolls::default();
        for t in tooks {
            r.push(ms(*t));
        }
        r
    }

    #[test]
    fn steady_polls_are_allowed_their_own_duration() {
        assert_eq!(
            recent(&[30, 30, 30]).allowance(ms(100)),
            ms(30) + TIMER_SLACK
        );
    }

    #[test]
    fn a_slow_poll_is_allowed_for_in_the_polls_after_it() {
        let r = recent(&[10, 40, 10, 10]);
        assert_eq!(r.allowance(ms(100)), ms(40) + TIMER_SLACK);
    }

    #[test]
    fn an_old_stall_counts_for_at_most_half_the_delay_but_the_last_poll_in_full() {
        assert_eq!(
            recent(&[10, 300, 10]).allowance(ms(100)),
            ms(50) + TIMER_SLACK
        );
        assert_eq!(
            recent(&[10, 10, 80]).allowance(ms(100)),
            ms(80) + TIMER_SLACK
        );
        // A short jittered delay: the last poll still counts in full.
        assert_eq!(
            recent(&[10, 300, 10]).allowance(ms(8)),
            ms(10) + TIMER_SLACK
        );
    }

    #[test]
    fn polls_older_than_the_window_are_forgotten() {
        let mut tooks = vec![45];
        tooks.extend([10; RECENT_POLLS]);
        assert_eq!(recent(&tooks).allowance(ms(100)), ms(10) + TIMER_SLACK);
    }

    #[test]
    fn without_any_poll_recorded_only_the_timer_slack_is_allowed() {
        assert_eq!(RecentPolls::default().allowance(ms(100)), TIMER_SLACK);
    }

    #[test]
    fn the_next_poll_is_one_delay_after_the_last_start_less_the_allowance() {
        let started = Instant::now();
        let now = started + ms(30);
        let at = next_poll_at(started, now, ms(100), &recent(&[30]));
        assert_eq!(at, started + ms(70) - TIMER_SLACK);
    }

    #[test]
    fn a_store_slower_than_the_delay_is_polled_one_millisecond_later() {
        let started = Instant::now();
        let now = started + ms(50);
        let at = next_poll_at(started, now, ms(20), &recent(&[50]));
        assert_eq!(at, now + ms(1));
    }
}
