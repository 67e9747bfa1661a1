//! Tenant shares: the weights and caps tenant-fair claiming applies (`docs/claim-order.md`,
//! “Weights and caps”).

use docket_core::model::{OwnerScope, TenantId};
use docket_core::store::TenantShare;

use crate::{Docket, DocketError};

impl Docket {
    /// Stores `share` as `tenant`'s weight and cap under `ClaimPolicy::TenantFair`
    /// (replacing an earlier one). Shares are operator settings of the whole store, so a
    /// handle bound to a tenant may not change them.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), docket::DocketError> {
    /// use std::num::NonZeroU32;
    /// use docket::core::model::TenantId;
    /// use docket::core::store::TenantShare;
    ///
    /// let docket = docket::Docket::connect("memory://").await?;
    /// let acme = TenantId::new("acme").expect("a tenant id");
    /// let share = TenantShare { weight: NonZeroU32::new(3).unwrap(), cap: NonZeroU32::new(2) };
    /// docket.set_tenant_share(&acme, share).await?;
    /// assert_eq!(docket.tenant_shares().await?, vec![(acme, share)]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`DocketError::InvalidOptions`] on a tenant-bound handle; [`DocketError::Store`] for
    /// infrastructure failures.
    pub async fn set_tenant_share(
        &self,
        tenant: &TenantId,
        share: TenantShare,
    ) -> Result<(), DocketError> {
        if let OwnerScope::Tenant(own) = self.owner() {
            return Err(DocketError::InvalidOptions(format!(
                "tenant shares are operator settings; a handle bound to tenant {own} cannot \
                 change them"
            )));
        }
        self.backend().set_tenant_share(tenant, share).await?;
        Ok(())
    }

    /// Every stored tenant share, by tenant id (a tenant-bound handle sees only its own).
    ///
    /// # Errors
    /// [`DocketError::Store`] for infrastructure failures or a corrupt stored share.
    pub async fn tenant_shares(&self) -> Result<Vec<(TenantId, TenantShare)>, DocketError> {
        let mut shares = self.backend().tenant_shares().await?;
        if let OwnerScope::Tenant(own) = self.owner() {
            shares.retain(|(tenant, _)| tenant == own);
        }
        Ok(shares)
    }
}
