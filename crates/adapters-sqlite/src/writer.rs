//! The single writer: every write of the store is a job sent to one task that owns the only
//! read-write connection. The task takes every job that is queued (up to a cap), runs them in
//! ONE transaction, each inside its own savepoint, commits once, and only then answers the
//! callers. A fsync'd commit costs the same for one job as for hundreds, so throughput comes
//! from the size of the groups, and durability stays `synchronous=FULL`.
//!
//! A job that fails (a conflict, a duplicate, insufficient funds) is rolled back alone and
//! answered with its error; the other jobs of the group are not affected. A job of several
//! statements runs inside its own SAVEPOINT for that ([`Isolation::Savepoint`]). A job that
//! writes with ONE statement needs none ([`Isolation::Statement`]): SQLite rolls a failing
//! statement back by itself, and every statement is a round trip to the driver's worker
//! thread, which is what bounds the writer's throughput. If the group's transaction cannot be
//! committed (or its state is lost), every job of the group is answered with
//! [`Error::Unavailable`]: none of them was written.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use room_app::Error;
use sqlx::{Connection, SqliteConnection};
use tokio::sync::{mpsc, oneshot};

use crate::Result;
use crate::codec::db;

/// How a job is kept apart from the other jobs of its transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Isolation {
    /// The job writes with one statement and fails only when that statement failed or wrote
    /// nothing (it may read before and after). SQLite undoes a failing statement alone.
    Statement,
    /// The job runs in its own savepoint, rolled back if it fails: for any job. (Every job
    /// of the store is one statement at the moment; the writer's tests use this.)
    Savepoint,
}

/// A job's future: borrows the writer's connection for the time it runs.
pub(crate) type JobFuture<'c, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'c>>;

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
pub(crate) struct Counters {
    transactions: AtomicU64,
    jobs: AtomicU64,
    failed_transactions: AtomicU64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> WriteStats {
        WriteStats {
            transactions: self.transactions.load(Ordering::Relaxed),
            jobs: self.jobs.load(Ordering::Relaxed),
            failed_transactions: self.failed_transactions.load(Ordering::Relaxed),
        }
    }
}

/// A job with its result type erased, so jobs of every kind share one queue.
trait ErasedJob: Send {
    fn isolation(&self) -> Isolation;

    /// Runs the job's statements; keeps the result for [`ErasedJob::answer`]. Returns whether
    /// the job succeeded (its savepoint is released) or failed (rolled back).
    fn run<'a>(
        &'a mut self,
        conn: &'a mut SqliteConnection,
    ) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>>;

    /// Answers the caller: its own result if the group committed, else `failure`.
    fn answer(self: Box<Self>, failure: Option<&Error>);
}

struct Job<T, F> {
    isolation: Isolation,
    work: Option<F>,
    result: Option<Result<T>>,
    reply: oneshot::Sender<Result<T>>,
}

impl<T, F> ErasedJob for Job<T, F>
where
    T: Send + 'static,
    F: for<'c> FnOnce(&'c mut SqliteConnection) -> JobFuture<'c, T> + Send + 'static,
{
    fn isolation(&self) -> Isolation {
        self.isolation
    }

    fn run<'a>(
        &'a mut self,
        conn: &'a mut SqliteConnection,
    ) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
        Box::pin(async move {
            let result = match self.work.take() {
                Some(work) => work(conn).await,
                None => Err(Error::Invalid("a write job ran twice".into())),
            };
            let ok = result.is_ok();
            self.result = Some(result);
            ok
        })
    }

    fn answer(self: Box<Self>, failure: Option<&Error>) {
        let result = match (failure, self.result) {
            (None, Some(result)) => result,
            (Some(failure), _) => Err(copy(failure)),
            (None, None) => Err(Error::Unavailable("the write job did not run".into())),
        };
        // The caller may have gone away (a timeout); the outcome is then unknown to it, which
        // every port allows for.
        let _ = self.reply.send(result);
    }
}

fn copy(error: &Error) -> Error {
    Error::Unavailable(error.to_string())
}

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
    /// Starts the writer task on `conn` (which must be the database's only writer).
    pub(crate) fn spawn(conn: SqliteConnection, max_jobs: usize) -> Self {
        let max_jobs = max_jobs.max(1);
        // Enough room that callers rarely wait for the queue, bounded so that an overloaded
        // store pushes back instead of growing without limit.
        let (sender, receiver) = mpsc::channel(max_jobs.saturating_mul(4).max(64));
        let counters = Arc::new(Counters::default());
        tokio::spawn(run(conn, receiver, max_jobs, counters.clone()));
        Writer { sender, counters }
    }

    /// Runs `work` in the writer's next transaction and returns its result once that
    /// transaction is committed.
    pub(crate) async fn submit<T, F>(&self, isolation: Isolation, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut SqliteConnection) -> JobFuture<'c, T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Box::new(Job {
            isolation,
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

async fn run(
    mut conn: SqliteConnection,
    mut receiver: mpsc::Receiver<Message>,
    max_jobs: usize,
    counters: Arc<Counters>,
) {
    let mut messages = Vec::with_capacity(max_jobs);
    let mut closers = Vec::new();
    loop {
        if receiver.recv_many(&mut messages, max_jobs).await == 0 {
            break;
        }
        let mut jobs = Vec::with_capacity(messages.len());
        for message in messages.drain(..) {
            match message {
                Message::Job(job) => jobs.push(job),
                Message::Close(done) => closers.push(done),
            }
        }
        if !closers.is_empty() {
            // Refuse new jobs, but run every job queued before the close.
            receiver.close();
        }
        if !jobs.is_empty() {
            run_group(&mut conn, jobs, &counters).await;
        }
    }
    if let Err(error) = conn.close().await {
        tracing::warn!(%error, "closing the SQLite writer connection failed");
    }
    for done in closers {
        let _ = done.send(());
    }
}

/// Runs `jobs` in one transaction and answers them.
async fn run_group(
    conn: &mut SqliteConnection,
    jobs: Vec<Box<dyn ErasedJob>>,
    counters: &Counters,
) {
    let mut jobs = jobs;
    let outcome = run_jobs(conn, &mut jobs).await;
    let count = jobs.len() as u64;
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
            let _ = sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await;
        }
    }
    let failure = outcome.err();
    for job in jobs {
        job.answer(failure.as_ref());
    }
}

/// Runs every job and commits. An error means the transaction as a whole failed: nothing of
/// it is written.
async fn run_jobs(conn: &mut SqliteConnection, jobs: &mut [Box<dyn ErasedJob>]) -> Result<()> {
    // IMMEDIATE takes the write lock now, so no statement of a job can fail for want of it.
    sqlx::raw_sql("BEGIN IMMEDIATE")
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    let mut savepoint_open = false;
    for job in jobs.iter_mut() {
        let isolation = job.isolation();
        if isolation == Isolation::Savepoint {
            // A fresh savepoint right before the job; releasing the previous one in the same
            // round trip keeps what came before it.
            let begin = if savepoint_open {
                "RELEASE job; SAVEPOINT job"
            } else {
                "SAVEPOINT job"
            };
            sqlx::raw_sql(begin).execute(&mut *conn).await.map_err(db)?;
            savepoint_open = true;
        }
        let succeeded = job.run(conn).await;
        if !succeeded && isolation == Isolation::Savepoint {
            // This fails if SQLite rolled back the whole transaction (an I/O error, a full
            // disk): then the jobs before this one are lost too, and the group fails.
            sqlx::raw_sql("ROLLBACK TO job")
                .execute(&mut *conn)
                .await
                .map_err(db)?;
        }
    }
    sqlx::raw_sql("COMMIT")
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use sqlx::ConnectOptions;
    use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode};

    use super::*;

    async fn writer(dir: &tempfile::TempDir) -> (Writer, SqliteConnectOptions) {
        let options = SqliteConnectOptions::new()
            .filename(dir.path().join("w.db"))
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal);
        let mut conn = options.connect().await.unwrap();
        // A deferred foreign key is checked at COMMIT: a job can break it without failing,
        // and the COMMIT of its group fails instead.
        sqlx::raw_sql(
            "CREATE TABLE parent (id INTEGER PRIMARY KEY);
             CREATE TABLE child (id INTEGER PRIMARY KEY,
                 parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);
             CREATE TABLE log (entry TEXT NOT NULL);",
        )
        .execute(&mut conn)
        .await
        .unwrap();
        (Writer::spawn(conn, 64), options)
    }

    fn insert(writer: &Writer, sql: &'static str) -> tokio::task::JoinHandle<Result<()>> {
        let writer = writer.clone();
        tokio::spawn(async move {
            writer
                .submit(Isolation::Savepoint, move |conn| {
                    Box::pin(async move {
                        sqlx::query(sql).execute(&mut *conn).await.map_err(db)?;
                        Ok(())
                    })
                })
                .await
        })
    }

    async fn log(options: &SqliteConnectOptions) -> Vec<String> {
        let mut conn = options.connect().await.unwrap();
        sqlx::query_scalar("SELECT entry FROM log ORDER BY entry")
            .fetch_all(&mut conn)
            .await
            .unwrap()
    }

    // Tasks spawned together on a current-thread runtime queue their jobs before the writer
    // task runs again, so they land in one group.
    #[tokio::test(flavor = "current_thread")]
    async fn a_failed_commit_fails_every_job_of_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, options) = writer(&dir).await;
        let first = insert(&writer, "INSERT INTO log VALUES ('first')");
        let orphan = insert(&writer, "INSERT INTO child VALUES (1, 99)");
        let last = insert(&writer, "INSERT INTO log VALUES ('last')");
        for job in [first, orphan, last] {
            let result = job.await.unwrap();
            assert!(
                matches!(result, Err(Error::Unavailable(_))),
                "every job of a group whose COMMIT failed is Unavailable, got {result:?}"
            );
        }
        assert_eq!(
            log(&options).await,
            Vec::<String>::new(),
            "nothing was written"
        );
        let stats = writer.stats();
        assert_eq!((stats.transactions, stats.failed_transactions), (0, 1));

        // The writer goes on with the next group.
        insert(&writer, "INSERT INTO log VALUES ('after')")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(log(&options).await, vec!["after".to_owned()]);
        writer.close().await;
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_failed_job_rolls_back_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, options) = writer(&dir).await;
        let first = insert(&writer, "INSERT INTO log VALUES ('first')");
        // Writes a row, then fails: the row must go with it.
        let failing = {
            let writer = writer.clone();
            tokio::spawn(async move {
                writer
                    .submit(Isolation::Savepoint, |conn| {
                        Box::pin(async move {
                            sqlx::query("INSERT INTO log VALUES ('failing')")
                                .execute(&mut *conn)
                                .await
                                .map_err(db)?;
                            Err::<(), _>(Error::Conflict("changed my mind".into()))
                        })
                    })
                    .await
            })
        };
        let broken = insert(&writer, "INSERT INTO no_such_table VALUES (1)");
        let last = insert(&writer, "INSERT INTO log VALUES ('last')");
        first.await.unwrap().unwrap();
        assert!(matches!(failing.await.unwrap(), Err(Error::Conflict(_))));
        assert!(broken.await.unwrap().is_err());
        last.await.unwrap().unwrap();
        assert_eq!(
            log(&options).await,
            vec!["first".to_owned(), "last".to_owned()]
        );
        let stats = writer.stats();
        assert_eq!(
            (stats.transactions, stats.jobs),
            (1, 4),
            "one group of four jobs"
        );

        writer.close().await;
        let late = insert(&writer, "INSERT INTO log VALUES ('late')")
            .await
            .unwrap();
        assert!(matches!(late, Err(Error::Unavailable(_))), "got {late:?}");
    }
}
