//! The injector: fires a run's seeded fault plan as its runs settle — kills (on SQLite, of a
//! worker seen holding the write lock when the draw says so), freezes (several at once, never
//! every worker), server crash-restarts and armed drops — and counts what it actually did.
//!
//! A freeze either stops a worker at once and continues it just past the orphan TTL, or
//! (three in four) waits for the worker's next claim, stops it, and continues it the moment
//! another worker's journal shows a claim of one of the runs it holds, so its stale write
//! races the thief's first commit (at most three TTLs: a thief busy with ready runs may not
//! steal at all).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use docket_core::store::Backend;

use crate::process::fleet::Fleet;
use crate::process::plan::Fault;
use crate::process::proxy::Proxy;
use crate::process::report::ProcessFaults;
use crate::process::servers::{PrivatePostgres, PrivateRedis};
use crate::process::sqlite_lock::{shm_inode, write_lock_holders};
use crate::process::steal_watch::MintTail;
use crate::workload::unfinished;

/// How often the injector looks at progress.
const POLL: Duration = Duration::from_millis(100);

/// How often it looks for steals while a worker is frozen: a thief commits a few milliseconds
/// after it claims, and the thaw must come first.
const STEAL_POLL: Duration = Duration::from_millis(2);

/// One frozen worker.
struct Frozen {
    /// Its slot.
    index: usize,
    /// When it was frozen.
    since: Instant,
    /// When it is thawed at the latest.
    until: Instant,
    /// Its journal file.
    journal: PathBuf,
    /// The runs it was handed claims for just before the freeze (a freeze ended by a steal
    /// waits for one; empty for the others).
    held: HashSet<String>,
    /// The mints read before the freeze (later ones may be steals).
    mark: usize,
}

impl Frozen {
    /// Whether to thaw it now: its hold is over, or another worker has claimed one of the runs
    /// it held (a steal: it cannot have handed them back while stopped).
    fn due(&self, tail: &MintTail) -> bool {
        Instant::now() >= self.until || tail.stolen_since(self.mark, &self.journal, &self.held)
    }
}

/// A freeze waiting for its worker's next claim (so the worker surely holds a run when it
/// stops), for at most [`ARM_WAIT`].
struct Armed {
    index: usize,
    journal: PathBuf,
    /// The mints read when it was armed.
    mark: usize,
    /// When it freezes anyway.
    deadline: Instant,
}

/// How long an armed freeze waits for a claim.
const ARM_WAIT: Duration = Duration::from_millis(500);

/// The slots a fault must leave alone: frozen, or armed to freeze.
fn occupied(frozen: &[Frozen], armed: Option<&Armed>) -> Vec<usize> {
    frozen
        .iter()
        .map(|f| f.index)
        .chain(armed.map(|a| a.index))
        .collect()
}

/// Freezes slot `index` now, for at most `hold`; a freeze armed at `armed` (a mark of the
/// tail) also ends at a steal of a run the worker claimed since.
fn freeze_now(
    world: &World,
    tail: &mut MintTail,
    index: usize,
    hold: Duration,
    armed: Option<usize>,
) -> Result<Frozen, String> {
    let journal = lock(&world.fleet).journal(index);
    lock(&world.fleet).freeze(index)?;
    let since = Instant::now();
    // Read after the stop: every claim it made is in its journal by now.
    tail.catch_up()?;
    let held = armed.map_or_else(HashSet::new, |mark| tail.claimed_since(mark, &journal));
    Ok(Frozen {
        index,
        since,
        until: since + hold,
        journal,
        held,
        mark: tail.mark(),
    })
}

/// The private server, if the backend has one.
pub(crate) enum Server {
    /// SQLite: a file, no server.
    None,
    /// A private PostgreSQL cluster.
    Postgres(PrivatePostgres),
    /// A private `redis-server`.
    Redis(PrivateRedis),
}

impl Server {
    /// Crash-restarts the server with `down` of outage (nothing for SQLite).
    pub(crate) fn restart(&mut self, down: Duration) -> Result<(), String> {
        match self {
            Server::None => Ok(()),
            Server::Postgres(pg) => pg.restart(down),
            Server::Redis(redis) => redis.restart(down),
        }
    }
}

/// Everything the injector touches.
pub(crate) struct World {
    /// The harness's direct connection (progress is read through it).
    pub(crate) store: Arc<dyn Backend>,
    /// The worker processes.
    pub(crate) fleet: Mutex<Fleet>,
    /// The private server (restarts run on a blocking thread, hence the `Arc`).
    pub(crate) server: Arc<Mutex<Server>>,
    /// The reply-dropping proxy, for PostgreSQL and Redis.
    pub(crate) proxy: Option<Proxy>,
    /// Runs started (progress is runs minus those still running or waiting).
    pub(crate) runs: u64,
    /// The workers' orphan TTL: freezes last longer.
    pub(crate) orphan_ttl: Duration,
    /// The SQLite database file (its writers are killed mid-transaction).
    pub(crate) sqlite_db: Option<PathBuf>,
}

/// Locks `m`, whatever a panicking holder left behind (the fleet and server stay usable).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Fires the plan as runs settle, until it is done (and the last freeze thawed) or `stop`.
pub(crate) async fn inject(
    world: Arc<World>,
    plan: Vec<(u64, Fault)>,
    seed: u64,
    stop: Arc<AtomicBool>,
) -> Result<ProcessFaults, String> {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x00F0_0D5E);
    let mut faults = ProcessFaults::default();
    let mut next = 0;
    // Frozen workers: several at once, never all.
    let mut frozen: Vec<Frozen> = Vec::new();
    let (workers, dir) = {
        let fleet = lock(&world.fleet);
        (fleet.len(), fleet.dir().to_owned())
    };
    let mut tail = MintTail::new(&dir);
    let ttl = world.orphan_ttl;
    let mut looked = None::<Instant>;
    let mut armed: Option<Armed> = None;
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        if armed.is_some() || !frozen.is_empty() {
            tail.catch_up()?;
        }
        let mut still = Vec::new();
        for worker in frozen.drain(..) {
            if stopping || worker.due(&tail) {
                lock(&world.fleet).thaw(worker.index)?;
                let stolen = !stopping && Instant::now() < worker.until;
                if stolen || worker.since.elapsed() > ttl {
                    faults.freezes += 1;
                }
                if stolen {
                    faults.thawed_on_steal += 1;
                }
            } else {
                still.push(worker);
            }
        }
        frozen = still;
        if let Some(a) = armed.take() {
            // Stopping: it was never frozen, nothing to thaw.
            let claimed = !tail.claimed_since(a.mark, &a.journal).is_empty();
            if !stopping && (claimed || Instant::now() >= a.deadline) {
                frozen.push(freeze_now(
                    &world,
                    &mut tail,
                    a.index,
                    ttl * 3,
                    Some(a.mark),
                )?);
            } else if !stopping {
                armed = Some(a);
            }
        }
        if stopping || (next == plan.len() && frozen.is_empty() && armed.is_none()) {
            return Ok(faults);
        }
        // Progress (a read of the store) is looked at every POLL; steals in between.
        if looked.is_some_and(|at| at.elapsed() < POLL) {
            let watching = armed.is_some() || !frozen.is_empty();
            tokio::time::sleep(if watching { STEAL_POLL } else { POLL }).await;
            continue;
        }
        looked = Some(Instant::now());
        let settled = match unfinished(world.store.as_ref()).await {
            Ok(open) => world.runs.saturating_sub(open.len() as u64),
            Err(_) => 0,
        };
        while next < plan.len() && plan[next].0 <= settled {
            let (_, fault) = plan[next];
            match fault {
                Fault::Kill => {
                    // SQLite: every other kill waits (briefly) for a worker holding the
                    // write lock, so writers die mid-transaction.
                    let busy = occupied(&frozen, armed.as_ref());
                    if world.sqlite_db.is_some()
                        && rng.gen_bool(0.5)
                        && kill_writer(&world, &busy).await?
                    {
                        faults.kills += 1;
                        faults.kills_holding_write_lock += 1;
                        next += 1;
                        continue;
                    }
                    let candidates: Vec<usize> =
                        (0..workers).filter(|i| !busy.contains(i)).collect();
                    let index = candidates[rng.gen_range(0..candidates.len())];
                    if lock(&world.fleet).kill_and_restart(index)? {
                        faults.kills += 1;
                    } else {
                        faults.workers_exited += 1;
                    }
                }
                Fault::Freeze => {
                    let busy = occupied(&frozen, armed.as_ref());
                    let candidates: Vec<usize> =
                        (0..workers).filter(|i| !busy.contains(i)).collect();
                    if candidates.len() < 2 || armed.is_some() {
                        // Never freeze the last running worker, and arm one freeze at a time:
                        // this one waits.
                        break;
                    }
                    let index = candidates[rng.gen_range(0..candidates.len())];
                    // Three freezes in four wait for the worker's next claim, then hold it
                    // until a thief claims one of its runs (or three TTLs pass): the thaw then
                    // races the thief's first commit, the case a missing token check lets
                    // through. The rest freeze now and thaw at a random moment just past the
                    // TTL.
                    if rng.gen_bool(0.75) {
                        tail.catch_up()?;
                        armed = Some(Armed {
                            index,
                            journal: lock(&world.fleet).journal(index),
                            mark: tail.mark(),
                            deadline: Instant::now() + ARM_WAIT,
                        });
                    } else {
                        let hold = ttl + Duration::from_millis(rng.gen_range(30..400));
                        frozen.push(freeze_now(&world, &mut tail, index, hold, None)?);
                    }
                }
                Fault::Restart => {
                    let down = Duration::from_millis(rng.gen_range(200..800));
                    let server = Arc::clone(&world.server);
                    tokio::task::spawn_blocking(move || lock(&server).restart(down))
                        .await
                        .map_err(|e| e.to_string())??;
                    faults.restarts += 1;
                }
                Fault::Drop => {
                    if let Some(proxy) = &world.proxy {
                        proxy.arm();
                    }
                }
            }
            next += 1;
        }
    }
}

/// Kills the first live, unfrozen worker seen holding the SQLite write lock within a second;
/// returns whether one was killed.
async fn kill_writer(world: &World, frozen: &[usize]) -> Result<bool, String> {
    let Some(db) = &world.sqlite_db else {
        return Ok(false);
    };
    let deadline = Instant::now() + Duration::from_secs(1);
    while Instant::now() < deadline {
        if let Some(inode) = shm_inode(db) {
            for pid in write_lock_holders(inode) {
                let mut fleet = lock(&world.fleet);
                let Some(slot) = fleet.slot_of(pid) else {
                    continue;
                };
                if !frozen.contains(&slot) && fleet.kill_and_restart(slot)? {
                    return Ok(true);
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    Ok(false)
}
