//! A tenant cap across worker processes: four `docket worker --claim-policy tenant-fair`
//! processes drain one store while the test samples, as fast as it can read, how many of the
//! capped tenant's runs are claimed at once. The cap must never be exceeded, must be reached
//! (so the workers really did run side by side), and every run must finish.

use std::num::NonZeroU32;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use docket::core::model::{RunId, RunStatus, Scope, TenantId, Timestamp};
use docket::core::store::TenantShare;
use docket::{Docket, StartOptions};

/// One node that sleeps, so each claim is held long enough to be seen.
const SLOW_GRAPH: &str = r#"{"schema_version": 1, "id": "slow",
  "nodes": {"nap": {"implementation": "std.sleep_ms", "config": {"ms": 60}}},
  "edges": {"a": {"from": "$start", "to": "nap"}, "b": {"from": "nap", "to": "$finish"}}}"#;

/// Runs the check on the store at `url` (which must be fresh).
pub async fn a_cap_of_two_holds_across_four_worker_processes(url: &str) {
    let docket = Docket::connect(url).await.expect("connect");
    let capped = TenantId::new("capped").expect("id");
    let free = TenantId::new("free").expect("id");
    let share = TenantShare {
        weight: NonZeroU32::MIN,
        cap: NonZeroU32::new(2),
    };
    docket
        .set_tenant_share(&capped, share)
        .await
        .expect("share");
    let mut capped_runs = Vec::new();
    let mut all_runs = Vec::new();
    for (tenant, count) in [(&capped, 16), (&free, 16)] {
        let handle = docket.tenant(tenant.clone());
        let graph = handle.save_graph_json(SLOW_GRAPH).await.expect("graph");
        for i in 0..count {
            let id = RunId::new(format!("{tenant}-{i:02}")).expect("id");
            let options = StartOptions {
                run_id: Some(id.clone()),
                ..StartOptions::default()
            };
            handle
                .start_run(&graph, Default::default(), options)
                .await
                .expect("start");
            if tenant == &capped {
                capped_runs.push(id.clone());
            }
            all_runs.push(id);
        }
    }

    let mut workers: Vec<Child> = (0..4)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_docket"))
                .args(["--backend", url, "worker", "--claim-policy", "tenant-fair"])
                .args(["--concurrency", "4", "--poll-interval-ms", "20"])
                .args(["--until-idle", "--idle-check-ms", "50"])
                .env("RUST_LOG", "error")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn a worker")
        })
        .collect();

    let deadline = Instant::now() + Duration::from_secs(120);
    let mut most = 0;
    let mut samples = 0u64;
    loop {
        // Two passes over the runs: a claim seen in both, unchanged, was held from its first
        // read to its second, and every first read precedes every second one, so all such
        // claims were held at one instant. One pass alone could count a run just released
        // beside another just claimed.
        let first = claims_of(&docket, &capped_runs).await;
        let second = claims_of(&docket, &capped_runs).await;
        let held = first.iter().filter(|claim| second.contains(claim)).count();
        most = most.max(held);
        samples += 1;
        assert!(
            held <= 2,
            "{held} runs of the capped tenant were claimed at once"
        );
        let exited = workers
            .iter_mut()
            .all(|w| w.try_wait().expect("poll a worker").is_some());
        if exited {
            break;
        }
        if Instant::now() > deadline {
            for worker in &mut workers {
                let _ = worker.kill();
            }
            panic!("the workers did not finish within two minutes");
        }
    }
    for worker in &mut workers {
        let status = worker.wait().expect("wait for a worker");
        assert!(status.success(), "a worker failed: {status}");
    }
    assert_eq!(most, 2, "the cap was never reached in {samples} samples");
    for id in &all_runs {
        let run = docket
            .backend()
            .fetch_run(&Scope::System, id)
            .await
            .expect("fetch");
        assert_eq!(run.status, RunStatus::Done, "run {id}");
    }
}

/// The runs of `ids` claimed right now, each with the time its claim was taken.
async fn claims_of(docket: &Docket, ids: &[RunId]) -> Vec<(RunId, Timestamp)> {
    let mut claims = Vec::new();
    for id in ids {
        let info = docket
            .backend()
            .inspect_run(&Scope::System, id)
            .await
            .expect("inspect");
        if let Some(at) = info.claimed_at {
            claims.push((id.clone(), at));
        }
    }
    claims
}
