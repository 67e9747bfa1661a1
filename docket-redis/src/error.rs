//! Mapping of Redis failures onto the portable [`StoreError`] (`docs/storage-contract.md`,
//! “The traits”): no Redis type crosses the store traits, only a message.

use docket_core::store::{Message, StoreError};
use redis::{ErrorKind, RedisError, ServerErrorKind};

/// Whether a command could have changed the store, which decides how a lost reply is reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Reads: a lost reply is simply retryable.
    Read,
    /// Write scripts: a reply lost after the command may have been sent is `Ambiguous`.
    Write,
}

/// Maps a Redis failure.
///
/// * Refusals that prove nothing ran (connection refused, `BUSY` — another script is running —,
///   `LOADING`, `TRYAGAIN`, `MASTERDOWN`, `CLUSTERDOWN`, `READONLY` during a failover, `OOM`
///   with `noeviction`) are retryable `Unavailable`.
/// * A connection reset, I/O error or response timeout is retryable `Unavailable` for reads and
///   `Ambiguous` for writes: the script may have run before the reply was lost.
/// * `WRONGTYPE` means a key of the namespace holds the wrong type: `Corrupt`.
/// * Anything else (`NOPERM`, unknown command, a script error) is a permanent `Unavailable`.
pub(crate) fn map_redis_error(err: &RedisError, access: Access) -> StoreError {
    let message = Message(format!("redis: {err}"));
    let code = err.code().unwrap_or_default();
    if matches!(code, "BUSY" | "OOM") {
        return StoreError::retryable(message);
    }
    if code == "WRONGTYPE" {
        return StoreError::corrupt("redis key", message.0);
    }
    match err.kind() {
        ErrorKind::Server(
            ServerErrorKind::BusyLoading
            | ServerErrorKind::TryAgain
            | ServerErrorKind::MasterDown
            | ServerErrorKind::ClusterDown
            | ServerErrorKind::ReadOnly,
        ) => StoreError::retryable(message),
        _ if err.is_connection_refusal() => StoreError::retryable(message),
        _ if err.is_io_error() || err.is_timeout() || err.is_connection_dropped() => match access {
            Access::Read => StoreError::retryable(message),
            Access::Write => StoreError::ambiguous(message),
        },
        _ => StoreError::permanent(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use docket_core::store::StoreErrorKind;

    fn io(kind: std::io::ErrorKind) -> RedisError {
        RedisError::from(std::io::Error::new(kind, "test"))
    }

    #[test]
    fn refused_connections_are_retryable_for_reads_and_writes() {
        for access in [Access::Read, Access::Write] {
            let e = map_redis_error(&io(std::io::ErrorKind::ConnectionRefused), access);
            assert_eq!(e.kind(), StoreErrorKind::Unavailable);
            assert!(e.is_retryable());
        }
    }

    #[test]
    fn a_reset_after_sending_is_ambiguous_only_for_writes() {
        let reset = io(std::io::ErrorKind::ConnectionReset);
        assert_eq!(
            map_redis_error(&reset, Access::Write).kind(),
            StoreErrorKind::Ambiguous
        );
        let read = map_redis_error(&reset, Access::Read);
        assert_eq!(read.kind(), StoreErrorKind::Unavailable);
        assert!(read.is_retryable());
        assert_eq!(
            map_redis_error(&io(std::io::ErrorKind::TimedOut), Access::Write).kind(),
            StoreErrorKind::Ambiguous
        );
    }

    #[test]
    fn busy_is_retryable_and_wrongtype_is_corruption() {
        let busy = redis::make_extension_error("BUSY".into(), Some("script running".into()));
        let e = map_redis_error(&busy, Access::Write);
        assert_eq!(e.kind(), StoreErrorKind::Unavailable);
        assert!(e.is_retryable());
        let wrong = redis::make_extension_error("WRONGTYPE".into(), None);
        assert_eq!(
            map_redis_error(&wrong, Access::Read).kind(),
            StoreErrorKind::Corrupt
        );
        let noperm = redis::make_extension_error("NOPERM".into(), None);
        assert!(!map_redis_error(&noperm, Access::Read).is_retryable());
    }
}
