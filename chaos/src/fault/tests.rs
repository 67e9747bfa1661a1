use super::*;

use docket_core::memory::MemoryStore;

fn layer(plan: FaultPlan) -> FaultLayer {
    FaultLayer::new(Arc::new(MemoryStore::new()), plan, Arc::new(Journal::new()))
}

fn unlimited(seed: u64) -> FaultPlan {
    FaultPlan {
        max_stalls: u64::MAX,
        ..FaultPlan::smoke(seed)
    }
}

/// The decisions for `n` commits of distinct runs, each made twice (a repeat draws afresh).
fn decisions(layer: &FaultLayer, n: u64) -> Vec<Decision> {
    (0..n)
        .flat_map(|i| {
            let run = format!("run-{i}");
            [
                layer.decide(Op::Commit, &run, i % 7),
                layer.decide(Op::Commit, &run, i % 7),
            ]
        })
        .collect()
}

#[test]
fn the_same_seed_faults_the_same_calls_and_another_seed_does_not() {
    let a = decisions(&layer(unlimited(1)), 500);
    let b = decisions(&layer(unlimited(1)), 500);
    let c = decisions(&layer(unlimited(2)), 500);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn a_decision_depends_on_the_call_not_on_the_order_calls_arrive_in() {
    let forward = layer(unlimited(9));
    let backward = layer(unlimited(9));
    let keys: Vec<String> = (0..200).map(|i| format!("run-{i}")).collect();
    let mut there: Vec<(String, Decision)> = keys
        .iter()
        .map(|k| (k.clone(), forward.decide(Op::Commit, k, 3)))
        .collect();
    let mut back: Vec<(String, Decision)> = keys
        .iter()
        .rev()
        .map(|k| (k.clone(), backward.decide(Op::Commit, k, 3)))
        .collect();
    there.sort_by(|x, y| x.0.cmp(&y.0));
    back.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(there, back);
}

#[test]
fn each_kind_is_drawn_near_its_rate_and_a_healed_layer_injects_nothing() {
    let plan = unlimited(3);
    let layer = layer(plan);
    let all = decisions(&layer, 20_000);
    let share = |f: &dyn Fn(&Decision) -> bool| {
        #[allow(clippy::cast_precision_loss)]
        let share = all.iter().filter(|d| f(d)).count() as f64 / all.len() as f64;
        share
    };
    let near = |got: f64, want: f64| (got - want).abs() < want * 0.25 + 0.002;
    assert!(near(share(&|d| *d == Decision::Stall), plan.stall));
    assert!(near(
        share(&|d| *d == Decision::AmbiguousAfter),
        plan.ambiguous_after
    ));
    assert!(near(
        share(&|d| *d == Decision::AmbiguousUnsent),
        plan.ambiguous_unsent
    ));
    assert!(near(
        share(&|d| *d == Decision::ErrorBefore),
        plan.error_before
    ));
    assert!(near(
        share(&|d| matches!(d, Decision::Delay(ms) if (1..=plan.max_delay_ms).contains(ms))),
        plan.delay
    ));
    layer.heal();
    assert!(decisions(&layer, 1_000)
        .iter()
        .all(|d| *d == Decision::None));
}

#[test]
fn claims_never_stall_or_lose_requests_and_stalls_stop_at_the_cap() {
    let layer = layer(FaultPlan {
        stall: 0.5,
        ambiguous_unsent: 0.4,
        max_stalls: 3,
        ..FaultPlan::smoke(4)
    });
    for n in 0..2_000 {
        let d = layer.decide(Op::Claim, "", n);
        assert!(
            !matches!(d, Decision::Stall | Decision::AmbiguousUnsent),
            "{d:?}"
        );
    }
    let stalls = decisions(&layer, 200)
        .iter()
        .filter(|d| **d == Decision::Stall)
        .count();
    assert_eq!(stalls, 3);
    assert_eq!(layer.counts().stalls, 3);
}
