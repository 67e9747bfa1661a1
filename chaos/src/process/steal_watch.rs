//! Spotting steals while a worker is frozen, from the workers' journal files.
//!
//! A frozen worker's stale write is only dangerous in a narrow window: after another worker
//! (the thief) has claimed one of its runs, and before the thief's first commit moves the
//! run's seq on. A thaw at a random moment past the TTL mostly misses that window (the thief
//! commits a few milliseconds after it claims), so the injector thaws a frozen worker as
//! soon as it sees a thief's claim. It learns of claims the way the oracle does: every worker
//! appends each minted claim to its journal file before the claim reaches its engine, so the
//! injector reads the files' new lines every couple of milliseconds while a worker is
//! frozen.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::journal::{Line, Mint};
use crate::process::fleet::journals_in;

/// The claims minted so far, read incrementally from every journal in one directory.
#[derive(Debug)]
pub(crate) struct MintTail {
    dir: PathBuf,
    /// Bytes of each file already consumed (up to its last complete line).
    offsets: HashMap<PathBuf, u64>,
    /// Every mint read, with the journal that recorded it, in reading order.
    mints: Vec<(PathBuf, Mint)>,
}

/// The prefix of a mint's line (the other lines are never parsed here).
const MINT_LINE: &[u8] = b"{\"mint\":";

impl MintTail {
    /// Watches the journals in `dir` (none read yet).
    pub(crate) fn new(dir: &Path) -> Self {
        MintTail {
            dir: dir.to_owned(),
            offsets: HashMap::new(),
            mints: Vec::new(),
        }
    }

    /// How many mints have been read: a mark for [`MintTail::stolen_since`].
    pub(crate) fn mark(&self) -> usize {
        self.mints.len()
    }

    /// Reads the complete lines every journal gained since the last call.
    ///
    /// # Errors
    /// The directory or a file cannot be read.
    pub(crate) fn catch_up(&mut self) -> Result<(), String> {
        for path in journals_in(&self.dir)? {
            let offset = self.offsets.get(&path).copied().unwrap_or(0);
            let mut file =
                std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            file.seek(SeekFrom::Start(offset))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            let mut fresh = Vec::new();
            file.read_to_end(&mut fresh)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            // A line still being written is left for the next call.
            let Some(end) = fresh.iter().rposition(|b| *b == b'\n') else {
                continue;
            };
            for line in fresh[..end].split(|b| *b == b'\n') {
                if !line.starts_with(MINT_LINE) {
                    continue;
                }
                if let Ok(Line::Mint(mint)) = serde_json::from_slice::<Line>(line) {
                    self.mints.push((path.clone(), mint));
                }
            }
            self.offsets.insert(path, offset + end as u64 + 1);
        }
        Ok(())
    }

    /// The runs `journal`'s worker was handed claims for among the mints read after `mark`.
    pub(crate) fn claimed_since(&self, mark: usize, journal: &Path) -> HashSet<String> {
        self.mints
            .get(mark..)
            .unwrap_or_default()
            .iter()
            .filter(|(path, _)| path == journal)
            .map(|(_, mint)| mint.run_id.clone())
            .collect()
    }

    /// Whether a journal other than `victim`'s recorded a claim of one of `runs` among the
    /// mints read after `mark`.
    pub(crate) fn stolen_since(&self, mark: usize, victim: &Path, runs: &HashSet<String>) -> bool {
        self.mints
            .get(mark..)
            .unwrap_or_default()
            .iter()
            .any(|(path, mint)| path != victim && runs.contains(&mint.run_id))
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::journal::Line;

    fn mint(run: &str, tick: u64) -> String {
        let line = Line::Mint(Mint {
            run_id: run.to_owned(),
            token: "t".to_owned(),
            tick,
            called_tick: tick,
        });
        format!("{}\n", serde_json::to_string(&line).expect("a line"))
    }

    fn append(path: &Path, text: &str) {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .expect("the journal opens");
        file.write_all(text.as_bytes())
            .expect("the line is written");
    }

    #[test]
    fn a_thiefs_claim_of_a_frozen_workers_run_is_seen_once_its_line_is_complete() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let victim = dir.path().join("worker-0-0.jsonl");
        let thief = dir.path().join("worker-1-0.jsonl");
        append(&victim, &mint("r1", 10));
        let mut tail = MintTail::new(dir.path());
        tail.catch_up().expect("the journals are read");
        let armed = tail.mark();
        assert!(tail.claimed_since(armed, &victim).is_empty());

        // Other lines are skipped; the victim's claims after the mark are the runs it holds.
        append(&victim, "{\"effect\":\"k:1\"}\n");
        append(&victim, &mint("r2", 20));
        append(&thief, &mint("r3", 21));
        append(&victim, &mint("r4", 22));
        tail.catch_up().expect("the journals are read");
        let held = tail.claimed_since(armed, &victim);
        assert_eq!(held, HashSet::from(["r2".to_owned(), "r4".to_owned()]));
        let frozen = tail.mark();

        // A claim of a run it does not hold is no steal; half a line is not read yet.
        append(&thief, &mint("r1", 30));
        let whole = mint("r2", 32);
        let (first, rest) = whole.split_at(whole.len() / 2);
        append(&thief, first);
        tail.catch_up().expect("the journals are read");
        assert!(!tail.stolen_since(frozen, &victim, &held));

        append(&thief, rest);
        tail.catch_up().expect("the journals are read");
        assert!(tail.stolen_since(frozen, &victim, &held));
        assert!(!tail.stolen_since(tail.mark(), &victim, &held));
    }
}
