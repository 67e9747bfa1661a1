//! Which process holds a SQLite database's write lock, read from `/proc/locks` (Linux).
//!
//! In WAL mode a writer holds an exclusive POSIX lock on byte 120 of the `-shm` file (the
//! first of the WAL's lock bytes) from `BEGIN IMMEDIATE` until its transaction ends. Seeing
//! that lock held by a worker and killing it at once is how the harness kills a SQLite
//! writer mid-transaction.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The byte of the `-shm` file a WAL writer locks.
const WAL_WRITE_LOCK_BYTE: &str = "120";

/// The inode of the database's `-shm` file (`None` until the first connection made it).
#[must_use]
pub fn shm_inode(database: &Path) -> Option<u64> {
    let mut shm = database.as_os_str().to_owned();
    shm.push("-shm");
    std::fs::metadata(Path::new(&shm)).ok().map(|m| m.ino())
}

/// The pids holding the WAL write lock of the `-shm` file with inode `inode`.
#[must_use]
pub fn write_lock_holders(inode: u64) -> Vec<u32> {
    let Ok(locks) = std::fs::read_to_string("/proc/locks") else {
        return Vec::new();
    };
    holders_in(&locks, inode)
}

/// Parses `/proc/locks` text: `N: POSIX ADVISORY WRITE <pid> <maj>:<min>:<inode> <start> <end>`.
fn holders_in(locks: &str, inode: u64) -> Vec<u32> {
    let wanted = inode.to_string();
    locks
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // A blocked waiter's line starts with "->" and shifts the fields by one.
            let [_, "POSIX", _, "WRITE", pid, file, start, end] = fields.as_slice() else {
                return None;
            };
            let file_inode = file.rsplit(':').next()?;
            (file_inode == wanted && *start == WAL_WRITE_LOCK_BYTE && *end == WAL_WRITE_LOCK_BYTE)
                .then(|| pid.parse().ok())
                .flatten()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_write_lock_byte_of_that_shm_file_counts() {
        let locks = "\
19: POSIX  ADVISORY  READ 19544 fe:00:10027278 128 128
20: POSIX  ADVISORY  WRITE 21599 fe:00:10027278 120 120
21: POSIX  ADVISORY  WRITE 3800 fe:00:770190 0 EOF
22: POSIX  ADVISORY  WRITE 4242 fe:00:99 120 120
23: -> POSIX  ADVISORY  WRITE 555 fe:00:10027278 120 120
";
        assert_eq!(holders_in(locks, 10_027_278), vec![21599]);
        assert_eq!(holders_in(locks, 99), vec![4242]);
        assert!(holders_in(locks, 1).is_empty());
    }
}
