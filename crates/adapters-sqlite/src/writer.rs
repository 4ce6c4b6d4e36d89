//! The single writer: every write of the store is a job sent to one thread that owns the only
//! read-write connection. The thread takes every job that is queued (up to a cap), runs them
//! in ONE transaction, each inside its own SAVEPOINT, commits once, and only then answers the
//! callers. A fsync'd commit costs the same for one job as for hundreds, so throughput comes
//! from the size of the groups, and durability stays `synchronous=FULL`.
//!
//! A job that fails (a conflict, a duplicate, insufficient funds) is rolled back to its
//! savepoint and answered with its error; the other jobs of the group are not affected. If the
//! group's transaction cannot be committed (or its state is lost), every job of the group is
//! answered with [`Error::Unavailable`]: none of them was written.
//!
//! The writer is a plain thread that calls SQLite directly (rusqlite): a statement is a
//! function call of a few microseconds. Through an async driver every statement would be a
//! round trip to the driver's own worker thread, and those round trips, not the fsyncs,
//! would bound the throughput of the whole store. Callers wait for their answer
//! asynchronously, so no tokio worker thread ever blocks on SQLite.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use room_app::Error;
use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

use crate::Result;
use crate::codec::sql;

/// Counters of the writer since the store was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// Write transactions committed.
    pub transactions: u64,
    /// Jobs run in committed transactions (successful or rolled back to their savepoint).
    pub jobs: u64,
    /// Transactions that failed as a whole (every job answered `Unavailable`).
    pub failed_transactions: u64,
}

#[derive(Default)]
struct Counters {
    transactions: AtomicU64,
    jobs: AtomicU64,
    failed_transactions: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> WriteStats {
        WriteStats {
            transactions: self.transactions.load(Ordering::Relaxed),
            jobs: self.jobs.load(Ordering::Relaxed),
            failed_transactions: self.failed_transactions.load(Ordering::Relaxed),
        }
    }
}

/// A job with its result type erased, so jobs of every kind share one queue.
trait ErasedJob: Send {
    /// Runs the job's statements and keeps the result for [`ErasedJob::answer`]. Returns
    /// whether the job succeeded.
    fn run(&mut self, conn: &Connection) -> bool;

    /// Answers the caller: its own result if the group committed, else `failure`.
    fn answer(self: Box<Self>, failure: Option<&Error>);
}

struct Job<T, F> {
    work: Option<F>,
    result: Option<Result<T>>,
    reply: oneshot::Sender<Result<T>>,
}

impl<T, F> ErasedJob for Job<T, F>
where
    T: Send,
    F: FnOnce(&Connection) -> Result<T> + Send,
{
    fn run(&mut self, conn: &Connection) -> bool {
        let result = match self.work.take() {
            Some(work) => work(conn),
            None => Err(Error::Invalid("a write job ran twice".into())),
        };
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn answer(self: Box<Self>, failure: Option<&Error>) {
        let result = match (failure, self.result) {
            (None, Some(result)) => result,
            (Some(failure), _) => Err(Error::Unavailable(format!(
                "the write transaction failed: {failure}"
            ))),
            (None, None) => Err(Error::Unavailable("the write job did not run".into())),
        };
        // The caller may have gone away (a timeout); the outcome is then unknown to it, which
        // every port allows for.
        let _ = self.reply.send(result);
    }
}

/// A write transaction that takes longer than this is logged.
const SLOW_TRANSACTION: Duration = Duration::from_millis(50);

enum Message {
    Job(Box<dyn ErasedJob>),
    Close(oneshot::Sender<()>),
}

/// The handle callers submit write jobs through. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Writer {
    sender: mpsc::Sender<Message>,
    counters: Arc<Counters>,
}

impl Writer {
    /// Starts the writer thread on `conn` (which must be the database's only writer). Between
    /// two groups, the writer starts the WAL over when `restart_wanted` is set (see
    /// [`crate::checkpoint`]); `busy_timeout` is the connection's usual busy timeout.
    pub(crate) fn spawn(
        conn: Connection,
        max_jobs: usize,
        restart_wanted: Arc<AtomicBool>,
        busy_timeout: Duration,
    ) -> Result<Self> {
        let max_jobs = max_jobs.max(1);
        // Enough room that callers rarely wait for the queue, bounded so that an overloaded
        // store pushes back instead of growing without limit.
        let (sender, receiver) = mpsc::channel(max_jobs.saturating_mul(4).max(64));
        let counters = Arc::new(Counters::default());
        let thread_counters = counters.clone();
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || {
                let restart = Restart {
                    wanted: restart_wanted,
                    busy_timeout,
                };
                run(conn, receiver, max_jobs, &thread_counters, &restart)
            })
            .map_err(|e| Error::unavailable(format!("cannot start the SQLite writer: {e}")))?;
        Ok(Writer { sender, counters })
    }

    /// Runs `work` in the writer's next transaction, in its own savepoint, and returns its
    /// result once that transaction is committed.
    pub(crate) async fn submit<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Box::new(Job {
            work: Some(work),
            result: None,
            reply,
        });
        self.sender
            .send(Message::Job(job))
            .await
            .map_err(|_| Error::Unavailable("the SQLite store is closed".into()))?;
        answer
            .await
            .map_err(|_| Error::Unavailable("the SQLite writer stopped before answering".into()))?
    }

    /// Lets the queued jobs finish, then closes the connection. Later writes fail with
    /// [`Error::Unavailable`].
    pub(crate) async fn close(&self) {
        let (done, closed) = oneshot::channel();
        if self.sender.send(Message::Close(done)).await.is_ok() {
            let _ = closed.await;
        }
    }

    pub(crate) fn stats(&self) -> WriteStats {
        self.counters.snapshot()
    }
}

/// When and how the writer starts the WAL over.
struct Restart {
    wanted: Arc<AtomicBool>,
    busy_timeout: Duration,
}

fn run(
    conn: Connection,
    mut receiver: mpsc::Receiver<Message>,
    max_jobs: usize,
    counters: &Counters,
    restart: &Restart,
) {
    let mut closers = Vec::new();
    while let Some(first) = receiver.blocking_recv() {
        let mut jobs = Vec::with_capacity(max_jobs);
        let mut next = Some(first);
        while let Some(message) = next.take() {
            match message {
                Message::Job(job) => jobs.push(job),
                Message::Close(done) => closers.push(done),
            }
            if jobs.len() < max_jobs {
                next = receiver.try_recv().ok();
            }
        }
        if !closers.is_empty() {
            // Refuse new jobs, but run every job queued before the close.
            receiver.close();
        }
        if !jobs.is_empty() {
            run_group(&conn, jobs, counters);
        }
        if restart.wanted.swap(false, Ordering::AcqRel) {
            crate::checkpoint::restart_log(&conn, restart.busy_timeout);
        }
    }
    if let Err((_, error)) = conn.close() {
        tracing::warn!(%error, "closing the SQLite writer connection failed");
    }
    for done in closers {
        let _ = done.send(());
    }
}

/// Runs `jobs` in one transaction and answers them.
fn run_group(conn: &Connection, mut jobs: Vec<Box<dyn ErasedJob>>, counters: &Counters) {
    let started = std::time::Instant::now();
    let mut committing = started;
    let outcome = run_jobs(conn, &mut jobs, &mut committing);
    let elapsed = started.elapsed();
    metrics::histogram!("room_sqlite_write_transaction_seconds").record(elapsed.as_secs_f64());
    let count = jobs.len() as u64;
    if elapsed >= SLOW_TRANSACTION {
        // Every caller of the group waited this long: worth a line when it happens.
        tracing::warn!(
            jobs = count,
            statements_ms = committing.duration_since(started).as_secs_f64() * 1e3,
            commit_ms = committing.elapsed().as_secs_f64() * 1e3,
            "slow SQLite write transaction"
        );
    }
    match &outcome {
        Ok(()) => {
            counters.transactions.fetch_add(1, Ordering::Relaxed);
            counters.jobs.fetch_add(count, Ordering::Relaxed);
            metrics::counter!("room_sqlite_write_transactions_total").increment(1);
            metrics::histogram!("room_sqlite_write_jobs_per_transaction").record(count as f64);
        }
        Err(error) => {
            counters.failed_transactions.fetch_add(1, Ordering::Relaxed);
            metrics::counter!("room_sqlite_write_transaction_failures_total").increment(1);
            tracing::error!(%error, jobs = count, "a SQLite write transaction failed");
            // Leave no transaction open for the next group. This fails harmlessly if SQLite
            // already rolled back.
            let _ = conn.execute_batch("ROLLBACK");
        }
    }
    let failure = outcome.err();
    for job in jobs {
        job.answer(failure.as_ref());
    }
}

/// Runs every job in its savepoint and commits. An error means the transaction as a whole
/// failed: nothing of it is written.
/// `committing` is set to when the COMMIT started, to tell the statements' time from the
/// commit's (the fsync) when a transaction is slow.
fn run_jobs(
    conn: &Connection,
    jobs: &mut [Box<dyn ErasedJob>],
    committing: &mut std::time::Instant,
) -> Result<()> {
    // IMMEDIATE takes the write lock now, so no statement of a job can fail for want of it.
    conn.execute_batch("BEGIN IMMEDIATE").map_err(sql)?;
    let run = |statement: &str| {
        conn.prepare_cached(statement)
            .and_then(|mut prepared| prepared.execute([]))
            .map_err(sql)
    };
    for job in jobs.iter_mut() {
        run("SAVEPOINT job")?;
        // A job that panics fails alone (it is answered Unavailable) instead of taking the
        // writer thread, and with it every later write, down.
        let succeeded = catch_unwind(AssertUnwindSafe(|| job.run(conn))).unwrap_or_else(|_| {
            tracing::error!("a SQLite write job panicked");
            false
        });
        if !succeeded {
            // This fails if SQLite rolled back the whole transaction (an I/O error, a full
            // disk): then the jobs before this one are lost too, and the group fails.
            run("ROLLBACK TO job")?;
        }
        run("RELEASE job")?;
    }
    *committing = std::time::Instant::now();
    conn.execute_batch("COMMIT").map_err(sql)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer(dir: &tempfile::TempDir) -> (Writer, std::path::PathBuf) {
        let path = dir.path().join("w.db");
        let conn = Connection::open(&path).unwrap();
        // A deferred foreign key is checked at COMMIT: a job can break it without failing,
        // and the COMMIT of its group fails instead.
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA foreign_keys = ON;
             CREATE TABLE parent (id INTEGER PRIMARY KEY);
             CREATE TABLE child (id INTEGER PRIMARY KEY,
                 parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);
             CREATE TABLE log (entry TEXT NOT NULL);",
        )
        .unwrap();
        let writer = Writer::spawn(
            conn,
            64,
            Arc::new(AtomicBool::new(false)),
            Duration::from_secs(5),
        );
        (writer.unwrap(), path)
    }

    fn insert(writer: &Writer, statement: &'static str) -> tokio::task::JoinHandle<Result<()>> {
        let writer = writer.clone();
        tokio::spawn(async move {
            writer
                .submit(move |conn| {
                    conn.execute(statement, []).map_err(sql)?;
                    Ok(())
                })
                .await
        })
    }

    fn log(path: &std::path::Path) -> Vec<String> {
        let conn = Connection::open(path).unwrap();
        let mut statement = conn
            .prepare("SELECT entry FROM log ORDER BY entry")
            .unwrap();
        statement
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    /// Jobs submitted while the writer is busy share its next transaction. The first job
    /// holds the writer until the others are queued, so the grouping is certain.
    async fn blocked_writer(
        writer: &Writer,
    ) -> (
        tokio::task::JoinHandle<Result<()>>,
        std::sync::mpsc::Sender<()>,
    ) {
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let (started, running) = oneshot::channel::<()>();
        let blocker = {
            let writer = writer.clone();
            tokio::spawn(async move {
                writer
                    .submit(move |_| {
                        let _ = started.send(());
                        let _ = wait.recv();
                        Ok(())
                    })
                    .await
            })
        };
        running.await.unwrap();
        (blocker, release)
    }

    /// Waits until `count` jobs wait in the writer's queue.
    async fn queued(writer: &Writer, count: usize) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while writer.sender.max_capacity() - writer.sender.capacity() < count {
            assert!(std::time::Instant::now() < deadline, "jobs were not queued");
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_commit_fails_every_job_of_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, path) = writer(&dir);
        let (blocker, release) = blocked_writer(&writer).await;
        let first = insert(&writer, "INSERT INTO log VALUES ('first')");
        let orphan = insert(&writer, "INSERT INTO child VALUES (1, 99)");
        let last = insert(&writer, "INSERT INTO log VALUES ('last')");
        queued(&writer, 3).await;
        release.send(()).unwrap();
        blocker.await.unwrap().unwrap();
        for job in [first, orphan, last] {
            let result = job.await.unwrap();
            assert!(
                matches!(result, Err(Error::Unavailable(_))),
                "every job of a group whose COMMIT failed is Unavailable, got {result:?}"
            );
        }
        assert_eq!(log(&path), Vec::<String>::new(), "nothing was written");
        let stats = writer.stats();
        assert_eq!((stats.transactions, stats.failed_transactions), (1, 1));

        // The writer goes on with the next group.
        insert(&writer, "INSERT INTO log VALUES ('after')")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(log(&path), vec!["after".to_owned()]);
        writer.close().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_job_fails_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, path) = writer(&dir);
        let panicking = writer
            .submit(|conn| -> Result<()> {
                conn.execute("INSERT INTO log VALUES ('before the panic')", [])
                    .map_err(sql)?;
                panic!("a bug in a job");
            })
            .await;
        assert!(
            matches!(panicking, Err(Error::Unavailable(_))),
            "got {panicking:?}"
        );
        insert(&writer, "INSERT INTO log VALUES ('after')")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(log(&path), vec!["after".to_owned()]);
        writer.close().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_job_rolls_back_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, path) = writer(&dir);
        let (blocker, release) = blocked_writer(&writer).await;
        let first = insert(&writer, "INSERT INTO log VALUES ('first')");
        // Writes a row, then fails: the row must go with it.
        let failing = {
            let writer = writer.clone();
            tokio::spawn(async move {
                writer
                    .submit(|conn| {
                        conn.execute("INSERT INTO log VALUES ('failing')", [])
                            .map_err(sql)?;
                        Err::<(), _>(Error::Conflict("changed my mind".into()))
                    })
                    .await
            })
        };
        let broken = insert(&writer, "INSERT INTO no_such_table VALUES (1)");
        let last = insert(&writer, "INSERT INTO log VALUES ('last')");
        queued(&writer, 4).await;
        release.send(()).unwrap();
        blocker.await.unwrap().unwrap();
        first.await.unwrap().unwrap();
        assert!(matches!(failing.await.unwrap(), Err(Error::Conflict(_))));
        assert!(broken.await.unwrap().is_err());
        last.await.unwrap().unwrap();
        assert_eq!(log(&path), vec!["first".to_owned(), "last".to_owned()]);
        let stats = writer.stats();
        assert_eq!(
            (stats.transactions, stats.jobs),
            (2, 5),
            "the blocker alone, then one group of four jobs"
        );

        writer.close().await;
        let late = insert(&writer, "INSERT INTO log VALUES ('late')")
            .await
            .unwrap();
        assert!(matches!(late, Err(Error::Unavailable(_))), "got {late:?}");
    }
}
