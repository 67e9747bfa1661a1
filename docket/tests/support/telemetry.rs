//! Captures the `tracing` spans and events emitted on the current thread, so tests can assert
//! the engine's telemetry by name (`docs/engine.md`, “Telemetry”) and that no claim token ever
//! appears in it.
//!
//! `#[tokio::test]` runs every task on the test's own thread, so a thread-local default
//! subscriber sees the worker, the dispatcher and the vehicles.

use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Registry;

/// One span (at creation) or event: its name — an event's message — and its fields.
#[derive(Clone, Debug)]
pub struct Record {
    pub span: bool,
    pub name: String,
    pub fields: Vec<(String, String)>,
}

impl Record {
    /// The value of field `name`, if recorded.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Everything captured so far, in emission order.
#[derive(Clone, Default)]
pub struct Telemetry(Arc<Mutex<Vec<Record>>>);

impl Telemetry {
    /// Starts capturing on this thread until the guard is dropped.
    pub fn capture() -> (Telemetry, tracing::subscriber::DefaultGuard) {
        let telemetry = Telemetry::default();
        let subscriber = Registry::default().with(telemetry.clone());
        let guard = tracing::subscriber::set_default(subscriber);
        (telemetry, guard)
    }

    pub fn records(&self) -> Vec<Record> {
        self.0.lock().expect("capture lock").clone()
    }

    /// Events (not spans) named `name`.
    pub fn events(&self, name: &str) -> Vec<Record> {
        self.records()
            .into_iter()
            .filter(|r| !r.span && r.name == name)
            .collect()
    }

    /// Spans named `name`.
    pub fn spans(&self, name: &str) -> Vec<Record> {
        self.records()
            .into_iter()
            .filter(|r| r.span && r.name == name)
            .collect()
    }

    /// Every record one of whose field values contains `needle`.
    pub fn mentioning(&self, needle: &str) -> Vec<Record> {
        self.records()
            .into_iter()
            .filter(|r| r.fields.iter().any(|(_, v)| v.contains(needle)))
            .collect()
    }

    pub fn clear(&self) {
        self.0.lock().expect("capture lock").clear();
    }
}

struct Fields<'a>(&'a mut Vec<(String, String)>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Telemetry {
    fn on_new_span(&self, attrs: &Attributes<'_>, _: &Id, _: Context<'_, S>) {
        let mut fields = Vec::new();
        attrs.record(&mut Fields(&mut fields));
        self.0.lock().expect("capture lock").push(Record {
            span: true,
            name: attrs.metadata().name().to_owned(),
            fields,
        });
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let mut fields = Vec::new();
        event.record(&mut Fields(&mut fields));
        let name = fields
            .iter()
            .position(|(k, _)| k == "message")
            .map(|i| fields.remove(i).1)
            .unwrap_or_else(|| event.metadata().name().to_owned());
        self.0.lock().expect("capture lock").push(Record {
            span: false,
            name,
            fields,
        });
    }
}
