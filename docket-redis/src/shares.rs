//! Tenant shares (`set_tenant_share`, `tenant_shares`): one hash field per tenant,
//! `"<weight>:<cap>"` with an empty cap for none, read by `lua/claim_fair.lua`. Setting one
//! runs `lua/set_share.lua`, which keeps the share summary of the fair cursor hash in step.

use std::num::NonZeroU32;

use docket_core::model::TenantId;
use docket_core::store::{StoreError, TenantShare};

use crate::error::Access;
use crate::scripts::expect_ok;
use crate::store::{Params, RedisStore};

/// The stored form of a share.
pub(crate) fn encode_share(share: TenantShare) -> String {
    match share.cap {
        Some(cap) => format!("{}:{cap}", share.weight),
        None => format!("{}:", share.weight),
    }
}

/// Digits only, no sign and no leading `+` (which `u32::from_str` would accept but the
/// script refuses), so Rust and Lua agree on every stored value.
fn positive(text: &str) -> Option<NonZeroU32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// Decodes a stored share; anything but `"<weight>:<cap>"` with a positive weight and an
/// empty or positive cap is `Corrupt`.
pub(crate) fn decode_share(tenant: &str, stored: &[u8]) -> Result<TenantShare, StoreError> {
    let bad = || {
        StoreError::corrupt(
            format!("tenant share of {tenant:?}"),
            format!(
                "{:?} is not \"<weight>:<cap>\"",
                String::from_utf8_lossy(stored)
            ),
        )
    };
    let text = std::str::from_utf8(stored).map_err(|_| bad())?;
    let (weight, cap) = text.split_once(':').ok_or_else(bad)?;
    Ok(TenantShare {
        weight: positive(weight).ok_or_else(bad)?,
        cap: if cap.is_empty() {
            None
        } else {
            Some(positive(cap).ok_or_else(bad)?)
        },
    })
}

impl RedisStore {
    pub(crate) async fn do_set_tenant_share(
        &self,
        tenant: &TenantId,
        share: TenantShare,
    ) -> Result<(), StoreError> {
        let k = self.keys();
        let params = Params::new()
            .set("tenant", tenant.as_str())
            .set("share", encode_share(share));
        let reply = self
            .script(
                &self.scripts().set_share,
                &[k.tenant_shares(), k.fair_cursor()],
                &[params.into_arg()],
                Access::Write,
            )
            .await?;
        expect_ok(&reply)
    }

    pub(crate) async fn do_tenant_shares(
        &self,
    ) -> Result<Vec<(TenantId, TenantShare)>, StoreError> {
        let stored = self.hgetall(&self.keys().tenant_shares()).await?;
        let mut shares = stored
            .into_iter()
            .map(|(tenant, value)| {
                let share = decode_share(&tenant, &value)?;
                let id = TenantId::new(tenant.clone())
                    .map_err(|e| StoreError::corrupt(format!("tenant share of {tenant:?}"), e))?;
                Ok((id, share))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        shares.sort_by(|a, b| a.0.as_str().as_bytes().cmp(b.0.as_str().as_bytes()));
        Ok(shares)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(weight: u32, cap: Option<u32>) -> TenantShare {
        TenantShare {
            weight: NonZeroU32::new(weight).expect("weight"),
            cap: cap.and_then(NonZeroU32::new),
        }
    }

    #[test]
    fn shares_round_trip_and_anything_else_is_corrupt() {
        for s in [
            share(1, None),
            share(3, Some(2)),
            share(u32::MAX, Some(u32::MAX)),
        ] {
            assert_eq!(decode_share("t", encode_share(s).as_bytes()).ok(), Some(s));
        }
        assert_eq!(encode_share(share(3, None)), "3:");
        for bad in [
            "",
            "3",
            "0:",
            "3:0",
            "+3:",
            "3:-1",
            "x:1",
            "4294967296:",
            "3:2:1",
        ] {
            assert!(
                matches!(
                    decode_share("t", bad.as_bytes()),
                    Err(StoreError::Corrupt { .. })
                ),
                "{bad:?}"
            );
        }
    }
}
