//! The operation registry of the connected store, reached through the facade.
//!
//! The registry is the store's third trait ([`OpsLifecycleRegistry`]): it lives in the same
//! file, schema or namespace as the runs and is opened by the same URL, so a `Docket`
//! connected with [`Docket::connect`] reaches it without a second connection. The facade adds
//! nothing to its rules; it only pages for the caller and types the "this store has no
//! registry" case.

use docket_core::model::MAX_PAGE_LIMIT;
use docket_core::ops::{
    OperationId, OperationLifecycleSnapshot, OperationQuery, OpsLifecycleRegistry, SessionId,
};

use super::Docket;
use crate::error::DocketError;

impl Docket {
    /// The operation registry of the store behind this facade.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), docket::DocketError> {
    /// use docket::core::model::Timestamp;
    /// use docket::core::ops::{OperationId, OperationKind, OperationSpec, SessionId};
    ///
    /// let docket = docket::Docket::connect("memory://").await?;
    /// let session = SessionId::random();
    /// let spec = OperationSpec::new(
    ///     OperationId::random(),
    ///     OperationKind::Custom("build".into()),
    ///     "nightly build",
    /// );
    /// let registered = docket
    ///     .ops_registry()?
    ///     .register_operation(&session, &spec, None, Timestamp::now_utc())
    ///     .await?;
    /// assert!(!registered.is_terminal());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`DocketError::OpsRegistryUnavailable`] when the backend offers no registry (a custom
    /// store that implements only runs and graphs).
    pub fn ops_registry(&self) -> Result<&dyn OpsLifecycleRegistry, DocketError> {
        self.backend()
            .ops_registry()
            .ok_or(DocketError::OpsRegistryUnavailable)
    }

    /// Every retained operation of `owner` (live and terminal), ascending by display name
    /// then id: pages through [`OpsLifecycleRegistry::list_operations`] until the last page.
    ///
    /// # Errors
    /// [`DocketError::OpsRegistryUnavailable`]; the registry's errors as [`DocketError::Ops`]
    /// (a nil owner is `InvalidArgument`, an undecodable record `Corrupt`).
    pub async fn all_operations(
        &self,
        owner: &SessionId,
    ) -> Result<Vec<OperationLifecycleSnapshot>, DocketError> {
        let registry = self.ops_registry()?;
        let mut out = Vec::new();
        let mut query = OperationQuery::first(MAX_PAGE_LIMIT);
        loop {
            let page = registry.list_operations(owner, &query).await?;
            out.extend(page.operations);
            if !page.has_more {
                return Ok(out);
            }
            query.after = page.next_after;
        }
    }

    /// One operation of `owner`.
    ///
    /// # Errors
    /// [`DocketError::NotFound`] when the owner holds no operation with this id (another
    /// owner's operation looks the same); otherwise as [`Docket::all_operations`].
    pub async fn fetch_operation(
        &self,
        owner: &SessionId,
        id: &OperationId,
    ) -> Result<OperationLifecycleSnapshot, DocketError> {
        self.ops_registry()?
            .operation_snapshot(owner, id)
            .await?
            .ok_or(DocketError::NotFound)
    }
}
