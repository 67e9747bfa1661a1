//! The registry's writes, each one `EVALSHA` of one script (`lua/ops_*.lua`), so every check
//! and every write of one call are one atomic server-side step and one round trip.
//!
//! A transition sends the action's from-set, target and effects bound from
//! [`rules::TABLE`]; the script only compares the stored status with that set (nothing about
//! the state machine is written in Lua) and returns the current status when it refuses, which
//! [`rules::check_from`] turns into the typed `InvalidTransition`.

use docket_core::model::Timestamp;
use docket_core::ops::rules::{self, RegistrationFacts, TransitionRule};
use docket_core::ops::{
    CompletedOperation, CompletionSeq, OperationId, OperationLifecycleSnapshot, OperationStatus,
    OperationTransition, OpsError, SessionId,
};

use super::record::{completed, decode, decode_tagged, pair, parse_id, unencodable};
use crate::error::Access;
use crate::scripts::Reply;
use crate::store::{Params, RedisStore};

/// A status list as the scripts read it (`listed` in the prelude).
fn status_list(statuses: &[OperationStatus]) -> String {
    statuses
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// A `"1"`/`"0"` script flag.
fn flag(on: bool) -> &'static str {
    if on {
        "1"
    } else {
        "0"
    }
}

/// A reply status no script sends.
fn unexpected(status: &str) -> OpsError {
    OpsError::permanent(docket_core::store::Message(format!(
        "unexpected registry script status {status:?}"
    )))
}

/// The script parameters of `rule`: from-set, target and effects, straight from the table.
fn rule_params(params: Params, rule: &TransitionRule) -> Params {
    params
        .set("from", status_list(rule.from))
        .set("to", rule.to.map_or("", OperationStatus::as_str))
        .set("progress", flag(rule.counts_progress))
        .set("start", flag(rule.stamps_started_at))
        .set("mint", flag(rule.mints_completion_seq))
}

impl RedisStore {
    /// Registers `record` (a fresh Provisioning record) under `max_concurrent`.
    pub(super) async fn ops_register(
        &self,
        record: &OperationLifecycleSnapshot,
        max_concurrent: Option<u32>,
    ) -> Result<(), OpsError> {
        let k = self.keys();
        let owner = &record.owner;
        let source = record
            .source
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(unencodable)?
            .unwrap_or_default();
        let params = Params::new()
            .set("id", record.id)
            .set("kind", record.kind.name())
            .set("status", record.status.as_str())
            .set("created_at", record.created_at.as_micros())
            .set(
                "limit",
                max_concurrent.map(|l| l.to_string()).unwrap_or_default(),
            );
        let reply = self
            .script(
                &self.scripts().ops_register,
                &[
                    k.ops_owner(owner),
                    k.ops_record(owner, &record.id),
                    k.ops_live(owner),
                    k.ops_names(owner),
                ],
                &[
                    params.into_arg(),
                    record.display_name.clone().into_bytes(),
                    record.source_label.clone().into_bytes(),
                    source.into_bytes(),
                ],
                Access::Write,
            )
            .await?;
        // The script reports the facts it found; the rules turn them into the refusal.
        let status = reply.status()?;
        let facts = match status.as_str() {
            "ok" => return Ok(()),
            "owner_retired" => RegistrationFacts {
                owner_retired: true,
                id_taken: false,
                active: 0,
            },
            "already_registered" => RegistrationFacts {
                owner_retired: false,
                id_taken: true,
                active: 0,
            },
            "max_concurrent" => RegistrationFacts {
                owner_retired: false,
                id_taken: false,
                active: reply.number(1)?,
            },
            other => return Err(unexpected(other)),
        };
        rules::check_registration(*owner, record.id, facts, max_concurrent)?;
        Err(unexpected(&status))
    }

    /// One transition (validated) of one operation; returns the record after it.
    pub(super) async fn ops_transition(
        &self,
        owner: &SessionId,
        id: &OperationId,
        transition: &OperationTransition,
        now: Timestamp,
    ) -> Result<OperationLifecycleSnapshot, OpsError> {
        let k = self.keys();
        let rule = rules::rule(transition.action);
        let outcome = transition
            .outcome
            .as_ref()
            .filter(|_| rule.mints_completion_seq)
            .map(serde_json::to_string)
            .transpose()
            .map_err(unencodable)?
            .unwrap_or_default();
        let params = rule_params(Params::new(), rule)
            .set("id", id)
            .set("now", now.as_micros())
            .set("keep", self.ops_retention().max_terminal())
            .set("op_prefix", k.ops_record_prefix(owner))
            .set("channel", k.ops_channel());
        let reply = self
            .script(
                &self.scripts().ops_transition,
                &[
                    k.ops_owner(owner),
                    k.ops_record(owner, id),
                    k.ops_live(owner),
                    k.ops_done(owner),
                    k.ops_names(owner),
                ],
                &[params.into_arg(), outcome.into_bytes()],
                Access::Write,
            )
            .await?;
        let what = format!("operation record {owner}/{id}");
        match reply.status()?.as_str() {
            "ok" => decode(owner, id, &pair(reply.byte_strings(1)?, &what)?),
            "owner_retired" => Err(OpsError::OwnerRetired { owner: *owner }),
            "not_found" => Err(OpsError::NotFound { id: *id }),
            "invalid_transition" => {
                let stored = reply.string(1)?;
                let status = OperationStatus::parse(&stored)
                    .ok_or_else(|| OpsError::corrupt(what, format!("unknown status {stored:?}")))?;
                match rules::check_from(*id, transition.action, status) {
                    Err(refused) => Err(refused),
                    // The script found the status outside the from-set the table gave it.
                    Ok(_) => Err(unexpected("invalid_transition from a legal status")),
                }
            }
            other => Err(unexpected(other)),
        }
    }

    /// `terminate_owner` (`retire == false`) or `retire_owner` (`retire == true`).
    pub(super) async fn ops_terminate(
        &self,
        owner: &SessionId,
        reason: &str,
        retire: bool,
        now: Timestamp,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        let k = self.keys();
        let termination = rules::termination(reason);
        let rule = rules::rule(termination.action);
        let outcome = termination
            .outcome
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(unencodable)?
            .unwrap_or_default();
        let params = rule_params(Params::new(), rule)
            .set("retire", flag(retire))
            .set("now", now.as_micros())
            .set("keep", self.ops_retention().max_terminal())
            .set("op_prefix", k.ops_record_prefix(owner))
            .set("channel", k.ops_channel());
        let reply = self
            .script(
                &self.scripts().ops_terminate,
                &[
                    k.ops_owner(owner),
                    k.ops_live(owner),
                    k.ops_done(owner),
                    k.ops_names(owner),
                ],
                &[params.into_arg(), outcome.into_bytes()],
                Access::Write,
            )
            .await?;
        match reply.status()?.as_str() {
            "ok" => terminated(owner, &reply, &termination),
            "owner_retired" => Err(OpsError::OwnerRetired { owner: *owner }),
            "corrupt" => Err(OpsError::corrupt(
                format!("operation records of {owner}"),
                reply.string(1)?,
            )),
            other => Err(unexpected(other)),
        }
    }

    /// `collect_completed`: drains the owner's terminal records in completion order.
    pub(super) async fn ops_collect(
        &self,
        owner: &SessionId,
    ) -> Result<Vec<CompletedOperation>, OpsError> {
        let k = self.keys();
        let params = Params::new().set("op_prefix", k.ops_record_prefix(owner));
        let reply = self
            .script(
                &self.scripts().ops_collect,
                &[k.ops_owner(owner), k.ops_done(owner), k.ops_names(owner)],
                &[params.into_arg()],
                Access::Write,
            )
            .await?;
        match reply.status()?.as_str() {
            "ok" => {
                let mut drained = (1..reply.len())
                    .map(|i| {
                        let record = decode_tagged(owner, reply.byte_strings(i)?)?;
                        completed(record)
                    })
                    .collect::<Result<Vec<_>, OpsError>>()?;
                drained.sort_by_key(|d| d.completion_seq);
                Ok(drained)
            }
            "owner_retired" => Err(OpsError::OwnerRetired { owner: *owner }),
            "corrupt" => Err(OpsError::corrupt(
                format!("operation records of {owner}"),
                reply.string(1)?,
            )),
            other => Err(unexpected(other)),
        }
    }
}

/// The `{id, seq, ...}` list of a termination, with the outcome every record received.
fn terminated(
    owner: &SessionId,
    reply: &Reply,
    termination: &OperationTransition,
) -> Result<Vec<CompletedOperation>, OpsError> {
    let outcome = termination
        .outcome
        .clone()
        .ok_or_else(|| unexpected("a termination without its outcome"))?;
    let mut ended = Vec::with_capacity(reply.len() / 2);
    let mut i = 1;
    while i + 1 < reply.len() {
        let id = parse_id(owner, &reply.bytes(i)?)?;
        ended.push(CompletedOperation {
            id,
            completion_seq: CompletionSeq(reply.number(i + 1)?),
            outcome: outcome.clone(),
        });
        i += 2;
    }
    Ok(ended)
}
