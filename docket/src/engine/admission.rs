//! The admission phase (`docs/engine.md`, “Admission preference”; scenario 152 of
//! `docs/scenarios.md`): serializes claim scans of one instance and alternates the preferred claim
//! class after successful demand-1 scans, so a worker at concurrency one neither starves expired
//! claims nor ready runs.

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

    #[tokio::test]
    async fn concurrent_scans_run_one_at_a_time() {
        use std::sync::atomic::{AtomicU32, Ordering};
        use std::sync::Arc;

        let phase = Arc::new(AdmissionPhase::new());
        let (inside, most) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
        let scans: Vec<_> = (0..8)
            .map(|_| {
                let (phase, inside, most) = (phase.clone(), inside.clone(), most.clone());
                tokio::spawn(async move {
                    phase
                        .run(1, |p| async move {
                            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(now, Ordering::SeqCst);
                            // Give every other scan the chance to enter, were it allowed to.
                            for _ in 0..10 {
                                tokio::task::yield_now().await;
                            }
                            inside.fetch_sub(1, Ordering::SeqCst);
                            Ok::<_, ()>(p)
                        })
                        .await
                })
            })
            .collect();
        let mut seen = Vec::new();
        for scan in scans {
            seen.push(scan.await.expect("joined").expect("ok"));
        }
        assert_eq!(most.load(Ordering::SeqCst), 1, "never two scans at once");
        // Serialized demand-1 successes alternate strictly: four of each class.
        let ready = seen.iter().filter(|c| **c == ClaimClass::Ready).count();
        assert_eq!((ready, seen.len() - ready), (4, 4));
    }

    #[tokio::test]
    async fn a_dropped_scan_releases_the_phase_without_advancing_it() {
        let phase = AdmissionPhase::new();
        let (entered_tx, entered_rx) = tokio::sync::oneshot::channel::<()>();
        {
            let scan = phase.run(1, |_| async move {
                let _ = entered_tx.send(());
                std::future::pending::<Result<(), ()>>().await
            });
            tokio::pin!(scan);
            tokio::select! {
                _ = &mut scan => panic!("the scan never finishes"),
                _ = entered_rx => {}
            }
            // `scan` is dropped here, mid-scan, like a killed caller.
        }
        let preference =
            tokio::time::timeout(std::time::Duration::from_secs(5), phase.preference())
                .await
                .expect("the dropped scan released the phase");
        assert_eq!(preference, ClaimClass::Ready, "and did not advance it");
        let next: Result<ClaimClass, ()> = phase.run(1, |p| async move { Ok(p) }).await;
        assert_eq!(next, Ok(ClaimClass::Ready));
    }
}
