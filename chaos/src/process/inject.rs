//! The injector: fires a run's seeded fault plan as its runs settle — kills (on SQLite, of a
//! worker seen holding the write lock when the draw says so), freezes just past the orphan
//! TTL (several at once, never every worker), server crash-restarts and armed drops — and
//! counts what it actually did.

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
use crate::workload::unfinished;

/// How often the injector looks at progress.
const POLL: Duration = Duration::from_millis(100);

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
    // Frozen workers: (slot, frozen at, thaw at). Several at once, never all.
    let mut frozen: Vec<(usize, Instant, Instant)> = Vec::new();
    let workers = lock(&world.fleet).len();
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        let mut still = Vec::new();
        for (index, since, until) in frozen.drain(..) {
            if Instant::now() >= until || stopping {
                lock(&world.fleet).thaw(index)?;
                if since.elapsed() > world.orphan_ttl {
                    faults.freezes += 1;
                }
            } else {
                still.push((index, since, until));
            }
        }
        frozen = still;
        if stopping || (next == plan.len() && frozen.is_empty()) {
            return Ok(faults);
        }
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
                    if world.sqlite_db.is_some() && rng.gen_bool(0.5) {
                        let busy: Vec<usize> = frozen.iter().map(|(i, _, _)| *i).collect();
                        if kill_writer(&world, &busy).await? {
                            faults.kills += 1;
                            faults.kills_holding_write_lock += 1;
                            next += 1;
                            continue;
                        }
                    }
                    let candidates: Vec<usize> = (0..workers)
                        .filter(|i| frozen.iter().all(|(f, _, _)| f != i))
                        .collect();
                    let index = candidates[rng.gen_range(0..candidates.len())];
                    if lock(&world.fleet).kill_and_restart(index)? {
                        faults.kills += 1;
                    } else {
                        faults.workers_exited += 1;
                    }
                }
                Fault::Freeze => {
                    let candidates: Vec<usize> = (0..workers)
                        .filter(|i| frozen.iter().all(|(f, _, _)| f != i))
                        .collect();
                    if candidates.len() < 2 {
                        // Never freeze the last running worker: this one waits for a thaw.
                        break;
                    }
                    let index = candidates[rng.gen_range(0..candidates.len())];
                    let ttl = world.orphan_ttl;
                    // Just past the TTL, so the thaw often races the thief's first commit
                    // (the case a missing token check lets through).
                    let hold = ttl + Duration::from_millis(rng.gen_range(30..400));
                    lock(&world.fleet).freeze(index)?;
                    let now = Instant::now();
                    frozen.push((index, now, now + hold));
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
        tokio::time::sleep(POLL).await;
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
