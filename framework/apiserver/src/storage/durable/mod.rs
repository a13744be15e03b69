//! The data directory (`--data-dir`): the server's whole state in one
//! embedded database, so a restarted server has every object at its
//! resourceVersion, the resourceVersion counter, and the identities
//! (CA, tokens, the service-account key) that kubeconfigs written before
//! still rely on.
//!
//! The database is [redb](https://docs.rs/redb): pure Rust (no C toolchain
//! to build, unlike SQLite), copy-on-write B-trees whose commit flips
//! between two checksummed slots, so a crash leaves the last committed
//! transaction whole. It holds only each object's latest version, as kine
//! does after compaction: history lives in memory, and a restart answers
//! older resourceVersions 410 Gone, as a compaction does.
//!
//! Writes reach it through the [`Journal`]: every lock hold of the store
//! that wrote anything sends its records as one message, and one writer
//! thread commits whatever has queued as one transaction (group commit).
//! A lock hold is therefore atomic on disk (an update and its side effects
//! land together or not at all); [`Durable`] tells requests when what they
//! saw is on disk, so nothing is acknowledged before it is.

mod writer;

use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, OnceLock};

use redb::{Database, ReadableDatabase, ReadableTable};
use tokio::sync::watch;

use super::object::ObjKey;
use crate::machinery::error::Error;
pub(crate) use writer::Record;
use writer::{split_key, Message, META, OBJECTS, RV_KEY};

/// The database file inside the directory.
const DB_FILE: &str = "state.redb";
/// What this server writes and reads; another value is another layout.
const FORMAT: &str = "kubeforge-apiserver/1";
const FORMAT_KEY: &str = "format";

/// What the database held when it was opened.
pub(crate) struct Snapshot {
    /// The highest resourceVersion ever issued.
    pub rv: u64,
    /// `(resource, key, resourceVersion, JSON)`; the resource as storage
    /// names it (`group/plural`).
    pub objects: Vec<(Arc<str>, ObjKey, u64, Vec<u8>)>,
}

/// An open data directory, before its writer starts: the place to read the
/// stored state and identities.
pub(crate) struct DataDir {
    path: PathBuf,
    db: Database,
}

/// The directory holds the CA's key and the tokens: only its owner may
/// read it, as etcd keeps its data directory 0700 (`fileutil.PrivateDirMode`).
fn owner_only(path: &Path, mode: u32) -> Result<(), Error> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .map_err(|e| fail(path, format!("cannot make it private to its owner: {e}")))?;
    }
    #[cfg(not(unix))]
    let _ = (path, mode);
    Ok(())
}

fn fail(dir: &Path, what: impl std::fmt::Display) -> Error {
    Error::DataDir(format!("data directory {}: {what}", dir.display()))
}

impl DataDir {
    /// Opens (or creates) the state in `dir`. A directory locked by a
    /// running server, written in another format, corrupt or holding
    /// files that are not a server's state is an error: the server never
    /// starts empty on it.
    pub fn open(dir: &Path) -> Result<Self, Error> {
        std::fs::create_dir_all(dir).map_err(|e| fail(dir, format!("cannot create it: {e}")))?;
        owner_only(dir, 0o700)?;
        let file = dir.join(DB_FILE);
        if !file.exists() {
            let entries = std::fs::read_dir(dir)
                .map_err(|e| fail(dir, format!("cannot read it: {e}")))?
                .count();
            if entries > 0 {
                return Err(fail(
                    dir,
                    format!("it is not empty and holds no {DB_FILE}: not a server's state; choose an empty or new directory"),
                ));
            }
        }
        let db = Database::create(&file).map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => fail(
                dir,
                "it is in use by another running server (its database is locked); stop that server or choose another directory",
            ),
            redb::DatabaseError::UpgradeRequired(v) => fail(
                dir,
                format!("its database is in an older file format ({v}); start the version that wrote it, or move it aside to start empty"),
            ),
            other => fail(
                dir,
                format!("cannot open {DB_FILE}: {other}; if it is corrupt, move the directory aside to start empty"),
            ),
        })?;
        owner_only(&file, 0o600)?;
        let this = Self {
            path: dir.to_owned(),
            db,
        };
        match this.meta(FORMAT_KEY)? {
            Some(f) if f == FORMAT.as_bytes() => {}
            Some(f) => {
                return Err(fail(
                    dir,
                    format!(
                        "it was written in format {:?}; this server reads {FORMAT:?}: start the version that wrote it, or move it aside to start empty",
                        String::from_utf8_lossy(&f)
                    ),
                ))
            }
            None => this.put_meta(&[(FORMAT_KEY, FORMAT.as_bytes())])?,
        }
        Ok(this)
    }

    /// The error for a database that cannot be read: it names the
    /// directory and what to do.
    pub fn corrupt(&self, e: impl std::fmt::Display) -> Error {
        fail(
            &self.path,
            format!("cannot read {DB_FILE}: {e}; if it is corrupt, move the directory aside to start empty"),
        )
    }

    /// One value of the meta table.
    pub fn meta(&self, key: &str) -> Result<Option<Vec<u8>>, Error> {
        let tx = self.db.begin_read().map_err(|e| self.corrupt(e))?;
        let table = match tx.open_table(META) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(self.corrupt(e)),
        };
        let value = table.get(key).map_err(|e| self.corrupt(e))?;
        Ok(value.map(|v| v.value().to_vec()))
    }

    /// One meta value that must be text.
    pub fn meta_text(&self, key: &str) -> Result<Option<String>, Error> {
        self.meta(key)?
            .map(|b| String::from_utf8(b).map_err(|_| self.corrupt(format!("{key} is not text"))))
            .transpose()
    }

    /// Writes meta values durably, in one transaction.
    pub fn put_meta(&self, entries: &[(&str, &[u8])]) -> Result<(), Error> {
        writer::put_meta(&self.db, entries).map_err(|e| self.corrupt(e))
    }

    /// Every stored object and the resourceVersion counter.
    pub fn snapshot(&self) -> Result<Snapshot, Error> {
        let rv = match self.meta(RV_KEY)? {
            None => 0,
            Some(b) => u64::from_le_bytes(
                b.try_into()
                    .map_err(|_| self.corrupt("the resourceVersion counter is malformed"))?,
            ),
        };
        let tx = self.db.begin_read().map_err(|e| self.corrupt(e))?;
        let table = match tx.open_table(OBJECTS) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => {
                return Ok(Snapshot {
                    rv,
                    objects: Vec::new(),
                })
            }
            Err(e) => return Err(self.corrupt(e)),
        };
        let mut objects = Vec::new();
        for entry in table.iter().map_err(|e| self.corrupt(e))? {
            let (k, v) = entry.map_err(|e| self.corrupt(e))?;
            let (res, key) = split_key(k.value())
                .ok_or_else(|| self.corrupt(format!("malformed key {:?}", k.value())))?;
            let v = v.value();
            let (at, json) = v
                .split_first_chunk::<8>()
                .ok_or_else(|| self.corrupt(format!("malformed entry {:?}", k.value())))?;
            objects.push((res, key, u64::from_le_bytes(*at), json.to_vec()));
        }
        Ok(Snapshot { rv, objects })
    }

    /// Starts the writer thread, which owns the database from now on.
    pub fn start(self, rv: u64) -> Result<(Journal, Durable), Error> {
        let (tx, rx) = mpsc::channel();
        let (durable_tx, durable_rx) = watch::channel(rv);
        let failed = Arc::new(OnceLock::new());
        let thread = std::thread::Builder::new()
            .name("kubeforge-storage".into())
            .spawn({
                let failed = failed.clone();
                move || writer::run(self.db, self.path, rx, durable_tx, failed)
            })
            .map_err(|e| Error::DataDir(format!("cannot start the storage writer: {e}")))?;
        Ok((
            Journal {
                tx,
                thread: Some(thread),
            },
            Durable {
                rx: durable_rx,
                failed,
            },
        ))
    }
}

/// The sending end of the writer thread. Dropping it (through
/// [`Journal::close`]) ends the thread after what is queued is committed,
/// which closes the database and frees the directory.
pub(crate) struct Journal {
    tx: mpsc::Sender<Message>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Journal {
    /// Queues one lock hold's records.
    pub fn send(&self, records: Vec<Record>) {
        // A closed channel means the writer failed; `Durable` says so.
        let _ = self.tx.send(Message::Objects(records));
    }

    /// Queues meta values; [`MetaAck::wait`] returns once they (and all
    /// queued before them) are durable.
    pub fn put_meta(&self, entries: Vec<(String, Vec<u8>)>) -> MetaAck {
        let (ack_tx, ack_rx) = mpsc::channel();
        // A closed channel drops `ack_tx`, which `wait` reports.
        let _ = self.tx.send(Message::Meta(entries, ack_tx));
        MetaAck(ack_rx)
    }

    /// Commits what is queued and closes the database.
    pub fn close(mut self) {
        let thread = self.thread.take();
        drop(self);
        if let Some(t) = thread {
            let _ = t.join();
        }
    }
}

/// The answer to [`Journal::put_meta`].
pub(crate) struct MetaAck(mpsc::Receiver<Result<(), String>>);

impl MetaAck {
    /// Blocks until the values are durable.
    pub fn wait(self) -> Result<(), Error> {
        self.0
            .recv()
            .map_err(|_| Error::DataDir("the storage writer has stopped".into()))?
            .map_err(Error::DataDir)
    }
}

/// How far the database has caught up with the store.
#[derive(Clone)]
pub(crate) struct Durable {
    rx: watch::Receiver<u64>,
    failed: Arc<OnceLock<String>>,
}

impl Durable {
    /// Waits until every write up to `rv` is durable; an error when the
    /// database failed (nothing after that point can be acknowledged).
    pub async fn reached(&self, rv: u64) -> Result<(), String> {
        if *self.rx.borrow() >= rv {
            return Ok(());
        }
        // Ends with an error only when the writer stopped short of `rv`.
        match self.rx.clone().wait_for(|at| *at >= rv).await {
            Ok(_) => Ok(()),
            Err(_) => Err(self
                .failed
                .get()
                .cloned()
                .unwrap_or_else(|| "the storage writer has stopped".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_written_in_another_format_is_refused_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let data = DataDir::open(dir.path()).unwrap();
        data.put_meta(&[(FORMAT_KEY, b"kubeforge-apiserver/0")])
            .unwrap();
        drop(data);
        let err = DataDir::open(dir.path())
            .err()
            .expect("refused")
            .to_string();
        assert!(
            err.contains("kubeforge-apiserver/0") && err.contains(FORMAT),
            "{err}"
        );
        assert!(err.contains(&dir.path().display().to_string()), "{err}");
        let reopened = Database::open(dir.path().join(DB_FILE)).unwrap();
        let tx = reopened.begin_read().unwrap();
        let format = tx
            .open_table(META)
            .unwrap()
            .get(FORMAT_KEY)
            .unwrap()
            .unwrap()
            .value()
            .to_vec();
        assert_eq!(format, b"kubeforge-apiserver/0", "nothing rewritten");
    }

    #[cfg(unix)]
    #[test]
    fn the_directory_and_its_database_are_private_to_their_owner() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("state");
        drop(DataDir::open(&data).unwrap());
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&data), 0o700);
        assert_eq!(mode(&data.join(DB_FILE)), 0o600);
    }

    #[test]
    fn a_snapshot_holds_what_the_writer_committed_and_the_counter() {
        let dir = tempfile::tempdir().unwrap();
        let data = DataDir::open(dir.path()).unwrap();
        let (journal, durable) = data.start(0).unwrap();
        let record = |name: &str, rv, bytes: Option<&'static [u8]>| Record {
            res: Arc::from("/configmaps"),
            key: ("ns".to_owned(), name.to_owned()),
            rv,
            bytes: bytes.map(bytes::Bytes::from_static),
        };
        journal.send(vec![
            record("a", 2, Some(b"{}")),
            record("b", 3, Some(b"{}")),
        ]);
        // A deletion, then a re-read that keeps an older resourceVersion:
        // the counter stays at the highest.
        journal.send(vec![record("b", 4, None)]);
        journal.send(vec![record("a", 2, Some(b"{\"x\":1}"))]);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(durable.reached(4)).unwrap();
        journal.close();
        let snapshot = DataDir::open(dir.path()).unwrap().snapshot().unwrap();
        assert_eq!(snapshot.rv, 4);
        assert_eq!(snapshot.objects.len(), 1);
        let (res, key, rv, json) = &snapshot.objects[0];
        assert_eq!((&**res, key.1.as_str(), *rv), ("/configmaps", "a", 2));
        assert_eq!(json, br#"{"x":1}"#);
    }
}
