//! The worker processes: `chaos-worker` children, each with its own journal file per
//! incarnation (`worker-<i>-<generation>.jsonl`), killed with SIGKILL and restarted, frozen
//! with SIGSTOP and thawed with SIGCONT.
//!
//! Signals other than SIGKILL go through the `kill` command: the workspace forbids `unsafe`,
//! and `std` only sends SIGKILL.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One worker slot: the process currently filling it, and how many came before.
#[derive(Debug)]
struct Slot {
    child: Child,
    generation: u32,
    frozen: bool,
}

/// The worker processes of one chaos run.
#[derive(Debug)]
pub struct Fleet {
    binary: PathBuf,
    url: String,
    dir: PathBuf,
    orphan_ttl_ms: u64,
    /// Extra arguments for every worker (a mutant, in tests of the oracle).
    extra: Vec<String>,
    slots: Vec<Slot>,
}

impl Fleet {
    /// Starts `workers` processes of `binary` against `url`, journals and logs in `dir`, each
    /// with `extra` arguments.
    ///
    /// # Errors
    /// A process could not be started.
    pub fn start(
        binary: &Path,
        url: &str,
        dir: &Path,
        workers: usize,
        orphan_ttl_ms: u64,
        extra: Vec<String>,
    ) -> Result<Self, String> {
        let mut fleet = Fleet {
            binary: binary.to_owned(),
            url: url.to_owned(),
            dir: dir.to_owned(),
            orphan_ttl_ms,
            extra,
            slots: Vec::new(),
        };
        for index in 0..workers {
            let child = fleet.spawn(index, 0)?;
            fleet.slots.push(Slot {
                child,
                generation: 0,
                frozen: false,
            });
        }
        Ok(fleet)
    }

    fn spawn(&self, index: usize, generation: u32) -> Result<Child, String> {
        let name = incarnation(index, generation);
        let log = File::create(self.dir.join(format!("{name}.log"))).map_err(|e| e.to_string())?;
        let log_err = log.try_clone().map_err(|e| e.to_string())?;
        Command::new(&self.binary)
            .args(["--backend", &self.url, "--journal"])
            .arg(self.dir.join(format!("{name}.jsonl")))
            .args(["--orphan-ttl-ms", &self.orphan_ttl_ms.to_string()])
            .args(&self.extra)
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", self.binary.display()))
    }

    /// How many slots.
    #[must_use]
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are no slots.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The slot whose current process has `pid`.
    #[must_use]
    pub fn slot_of(&self, pid: u32) -> Option<usize> {
        self.slots.iter().position(|s| s.child.id() == pid)
    }

    /// Whether slot `index` is frozen.
    #[must_use]
    pub fn is_frozen(&self, index: usize) -> bool {
        self.slots[index].frozen
    }

    /// SIGKILLs the process in slot `index` and starts its successor. Returns whether a live
    /// process was killed (one that had already died is only replaced).
    ///
    /// # Errors
    /// The successor could not be started.
    pub fn kill_and_restart(&mut self, index: usize) -> Result<bool, String> {
        let alive = matches!(self.slots[index].child.try_wait(), Ok(None));
        let _ = self.slots[index].child.kill();
        let _ = self.slots[index].child.wait();
        let generation = self.slots[index].generation + 1;
        let child = self.spawn(index, generation)?;
        self.slots[index] = Slot {
            child,
            generation,
            frozen: false,
        };
        Ok(alive)
    }

    /// SIGSTOP to slot `index`.
    ///
    /// # Errors
    /// `kill -STOP` failed.
    pub fn freeze(&mut self, index: usize) -> Result<(), String> {
        signal(&self.slots[index].child, "-STOP")?;
        self.slots[index].frozen = true;
        Ok(())
    }

    /// SIGCONT to slot `index`.
    ///
    /// # Errors
    /// `kill -CONT` failed.
    pub fn thaw(&mut self, index: usize) -> Result<(), String> {
        signal(&self.slots[index].child, "-CONT")?;
        self.slots[index].frozen = false;
        Ok(())
    }

    /// Replaces every process that exited on its own (a worker should never exit; the count
    /// is reported).
    ///
    /// # Errors
    /// A successor could not be started.
    pub fn replace_exited(&mut self) -> Result<u64, String> {
        let mut replaced = 0;
        for index in 0..self.slots.len() {
            if matches!(self.slots[index].child.try_wait(), Ok(Some(_))) {
                self.kill_and_restart(index)?;
                replaced += 1;
            }
        }
        Ok(replaced)
    }

    /// Thaws every frozen process, asks every process to stop (SIGTERM: the worker finishes
    /// its in-flight moments and its observers), and SIGKILLs any still running after
    /// `grace`.
    pub fn stop(&mut self, grace: Duration) {
        for slot in &mut self.slots {
            if slot.frozen {
                let _ = signal(&slot.child, "-CONT");
                slot.frozen = false;
            }
            let _ = signal(&slot.child, "-TERM");
        }
        let deadline = Instant::now() + grace;
        for slot in &mut self.slots {
            while matches!(slot.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = slot.child.kill();
            let _ = slot.child.wait();
        }
    }

    /// The journal file of the process now in slot `index`.
    #[must_use]
    pub fn journal(&self, index: usize) -> PathBuf {
        let name = incarnation(index, self.slots[index].generation);
        self.dir.join(format!("{name}.jsonl"))
    }

    /// The directory holding every journal and log.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Every journal file any incarnation wrote.
    ///
    /// # Errors
    /// The directory cannot be read.
    pub fn journals(&self) -> Result<Vec<PathBuf>, String> {
        journals_in(&self.dir)
    }
}

/// The name of a process's journal and log files, without the extension.
fn incarnation(index: usize, generation: u32) -> String {
    format!("worker-{index}-{generation}")
}

/// The `*.jsonl` files in `dir`.
///
/// # Errors
/// The directory cannot be read.
pub fn journals_in(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    out.sort();
    Ok(out)
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for slot in &mut self.slots {
            let _ = signal(&slot.child, "-CONT");
            let _ = slot.child.kill();
            let _ = slot.child.wait();
        }
    }
}

fn signal(child: &Child, which: &str) -> Result<(), String> {
    let status = Command::new("kill")
        .arg(which)
        .arg(child.id().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("kill {which}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("kill {which} {} failed ({status})", child.id()))
    }
}
