//! The bundled example graphs publish and end in the status the demo expects.

mod support;

use serde_json::json;

use docket::core::model::RunStatus;
use docket::examples::EXAMPLES;
use docket::StartOptions;

use support::Fx;

#[tokio::test]
async fn every_bundled_example_reaches_its_expected_status() {
    let fx = Fx::manual();
    for (n, example) in EXAMPLES.iter().enumerate() {
        let graph_ref = fx
            .docket
            .save_graph_json(example.json)
            .await
            .expect("the example publishes");
        let run = fx
            .docket
            .start_run(&graph_ref, example.input(n), StartOptions::default())
            .await
            .expect("start");
        let run = fx.drive(&run.id).await;
        let run = if example.needs_approval {
            assert_eq!(
                run.status,
                RunStatus::Waiting,
                "{} waits for approval",
                example.id
            );
            let interrupt = run
                .interrupts
                .keys()
                .next()
                .cloned()
                .expect("one interrupt");
            fx.docket
                .resolve_interrupt(&run.id, &interrupt, json!(true))
                .await
                .expect("resolve");
            fx.drive(&run.id).await
        } else {
            run
        };
        assert_eq!(
            run.status, example.expected,
            "{} ends {:?}",
            example.id, example.expected
        );
    }
}
