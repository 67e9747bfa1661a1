//! The delivery seam: how a job's terminal result (or a notification) reaches a session.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use docket_core::ops::SessionId;

use super::ids::{InteractionLineageId, JobId};
use super::job::JobTerminalResult;

/// How a subscriber wants to hear about a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum JobDeliveryKind {
    /// A durable record only.
    Record,
    /// A notification that never triggers work by itself.
    Notification,
    /// An event that may request runtime work.
    Event,
}

/// One subscriber of a job.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct JobSubscription {
    subscription_id: String,
    session_id: SessionId,
    delivery: JobDeliveryKind,
}

impl JobSubscription {
    /// A subscription.
    #[must_use]
    pub fn new(
        subscription_id: impl Into<String>,
        session_id: SessionId,
        delivery: JobDeliveryKind,
    ) -> Self {
        JobSubscription {
            subscription_id: subscription_id.into(),
            session_id,
            delivery,
        }
    }

    /// The implicit subscription of a job without subscribers: its origin session, as a
    /// notification, under the id `origin`.
    #[must_use]
    pub fn origin(session_id: SessionId) -> Self {
        Self::new("origin", session_id, JobDeliveryKind::Notification)
    }

    /// The subscription id.
    #[must_use]
    pub fn subscription_id(&self) -> &str {
        &self.subscription_id
    }

    /// The subscribing session.
    #[must_use]
    pub fn session_id(&self) -> &SessionId {
        &self.session_id
    }

    /// How it is delivered.
    #[must_use]
    pub fn delivery(&self) -> JobDeliveryKind {
        self.delivery
    }
}

/// A notification emitted by a running job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobNotification {
    /// The notification's id.
    pub notification_id: String,
    /// Its title.
    pub title: String,
    /// Its body.
    pub body: String,
}

/// What is delivered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobDeliveryContent {
    /// The job ended.
    Terminal(JobTerminalResult),
    /// A notification from a running job.
    Notification(JobNotification),
}

/// One delivery to one subscriber.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobDeliveryApplication {
    /// A record.
    Record {
        /// The job.
        job_id: JobId,
        /// The delivery's sequence within the job.
        delivery_sequence: u64,
        /// The subscriber.
        subscription: JobSubscription,
        /// What is delivered.
        content: JobDeliveryContent,
    },
    /// A notification.
    Notification {
        /// The job.
        job_id: JobId,
        /// The delivery's sequence within the job.
        delivery_sequence: u64,
        /// The subscriber.
        subscription: JobSubscription,
        /// What is delivered.
        content: JobDeliveryContent,
    },
    /// An event that may request runtime work.
    Event {
        /// The job.
        job_id: JobId,
        /// The delivery's sequence within the job.
        delivery_sequence: u64,
        /// The subscriber.
        subscription: JobSubscription,
        /// The job's lineage.
        interaction_lineage_id: InteractionLineageId,
        /// What is delivered.
        content: JobDeliveryContent,
    },
}

impl JobDeliveryApplication {
    /// The job, subscriber session and (for a terminal delivery) the terminal result, from
    /// any variant.
    #[must_use]
    pub fn parts(&self) -> (&JobId, &SessionId, Option<&JobTerminalResult>) {
        let (job_id, subscription, content) = match self {
            JobDeliveryApplication::Record {
                job_id,
                subscription,
                content,
                ..
            }
            | JobDeliveryApplication::Notification {
                job_id,
                subscription,
                content,
                ..
            }
            | JobDeliveryApplication::Event {
                job_id,
                subscription,
                content,
                ..
            } => (job_id, subscription, content),
        };
        let terminal = match content {
            JobDeliveryContent::Terminal(terminal) => Some(terminal),
            JobDeliveryContent::Notification(_) => None,
        };
        (job_id, subscription.session_id(), terminal)
    }
}

/// Where deliveries go. Re-application after a crash is normal, so `apply` must be
/// idempotent.
///
/// # Errors
/// A text explaining the failure; the delivery stays pending and is retried.
#[async_trait]
pub trait JobDeliverySink: Send + Sync {
    /// Applies one delivery.
    ///
    /// # Errors
    /// A text explaining the failure; the delivery is retried later.
    async fn apply(&self, application: JobDeliveryApplication) -> Result<(), String>;
}
