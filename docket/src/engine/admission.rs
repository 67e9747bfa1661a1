//! The admission phase (spec §7.3 "Preference", §9.7 152): serializes claim scans of one
//! instance and alternates the preferred claim class after successful demand-1 scans, so a
//! worker at concurrency one neither starves expired claims nor ready runs.

use std::future::Future;

use tokio::sync::Mutex;

use docket_core::store::ClaimClass;

/// Per-instance claim serializer. The preference is not durable: a new phase starts at
/// [`ClaimClass::Ready`].
#[derive(Debug)]
pub struct AdmissionPhase {
    preference: Mutex<ClaimClass>,
}

impl Default for AdmissionPhase {
    fn default() -> Self {
        Self::new()
    }
}

impl AdmissionPhase {
    /// A phase preferring ready runs first.
    #[must_use]
    pub fn new() -> Self {
        AdmissionPhase {
            preference: Mutex::new(ClaimClass::Ready),
        }
    }

    /// The preference the next scan will receive.
    pub async fn preference(&self) -> ClaimClass {
        *self.preference.lock().await
    }

    /// Runs `scan` with exclusive ownership of the phase and the current preference. After a
    /// *successful* scan with `demand == 1` the preference flips (ready ↔ expired); errors,
    /// scans above demand one and a dropped caller never flip it.
    ///
    /// # Errors
    /// Whatever `scan` returns.
    ///
    /// # Cancel safety
    /// Dropping the future releases the phase without advancing it.
    pub async fn run<F, Fut, T, E>(&self, demand: u32, scan: F) -> Result<T, E>
    where
        F: FnOnce(ClaimClass) -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let mut guard = self.preference.lock().await;
        let preference = *guard;
        let result = scan(preference).await;
        if result.is_ok() && demand == 1 {
            *guard = match preference {
                ClaimClass::Ready => ClaimClass::Expired,
                ClaimClass::Expired => ClaimClass::Ready,
            };
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn demand_one_successes_alternate_and_errors_or_larger_demands_do_not() {
        let phase = AdmissionPhase::new();
        let mut seen = Vec::new();
        for _ in 0..3 {
            let p: Result<ClaimClass, ()> = phase.run(1, |p| async move { Ok(p) }).await;
            seen.push(p.expect("ok"));
        }
        assert_eq!(
            seen,
            vec![ClaimClass::Ready, ClaimClass::Expired, ClaimClass::Ready]
        );
        let _: Result<(), ()> = phase.run(1, |_| async { Err(()) }).await;
        assert_eq!(phase.preference().await, ClaimClass::Expired);
        let _: Result<(), ()> = phase.run(3, |_| async { Ok(()) }).await;
        assert_eq!(phase.preference().await, ClaimClass::Expired);
    }
}
