//! The database's layout and its writer thread. The thread does group
//! commit: it blocks for the first message, takes every other already
//! queued, and commits them all in one transaction (one fsync), so
//! concurrent writers share the cost of a sync. Only then does it announce
//! the new durable resourceVersion.

use std::path::PathBuf;
use std::sync::{mpsc, Arc, OnceLock};

use bytes::Bytes;
use redb::{Database, Durability, TableDefinition};
use tokio::sync::watch;

use crate::storage::object::ObjKey;

/// `resource \0 namespace \0 name` → resourceVersion (8 bytes, little
/// endian) followed by the object's JSON.
pub(super) const OBJECTS: TableDefinition<&str, &[u8]> = TableDefinition::new("objects");
/// The format, the resourceVersion counter and the identities.
pub(super) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
pub(super) const RV_KEY: &str = "resourceVersion";

/// One object's new state (or its deletion) at a resourceVersion.
pub(crate) struct Record {
    /// The resource as storage names it (`group/plural`).
    pub res: Arc<str>,
    pub key: ObjKey,
    pub rv: u64,
    /// The JSON; `None` deletes the object.
    pub bytes: Option<Bytes>,
}

/// What the writer thread is asked to do.
pub(super) enum Message {
    /// One lock hold's writes, committed together.
    Objects(Vec<Record>),
    /// Identities and other meta values; answered once durable.
    Meta(Vec<(String, Vec<u8>)>, mpsc::Sender<Result<(), String>>),
}

fn db_key(res: &str, key: &ObjKey) -> String {
    format!("{res}\0{}\0{}", key.0, key.1)
}

/// The resource and key of a database key.
pub(super) fn split_key(k: &str) -> Option<(Arc<str>, ObjKey)> {
    let mut parts = k.splitn(3, '\0');
    let res = parts.next()?;
    let ns = parts.next()?;
    let name = parts.next()?;
    Some((Arc::from(res), (ns.to_owned(), name.to_owned())))
}

pub(super) fn run(
    db: Database,
    path: PathBuf,
    rx: mpsc::Receiver<Message>,
    durable: watch::Sender<u64>,
    failed: Arc<OnceLock<String>>,
) {
    // The counter only grows: a batch can hold only re-read objects, which
    // keep their older resourceVersions.
    let mut high = *durable.borrow();
    while let Ok(first) = rx.recv() {
        let mut records = Vec::new();
        let mut meta = Vec::new();
        let mut acks = Vec::new();
        let mut take = |m: Message| match m {
            Message::Objects(r) => records.extend(r),
            Message::Meta(entries, ack) => {
                meta.extend(entries);
                acks.push(ack);
            }
        };
        take(first);
        while let Ok(more) = rx.try_recv() {
            take(more);
        }
        let batch_high = records.iter().map(|r| r.rv).max().unwrap_or(0);
        let raised = (batch_high > high).then_some(batch_high);
        let result = commit(&db, &records, raised, &meta);
        for ack in acks {
            let _ = ack.send(result.clone());
        }
        match result {
            Ok(()) => {
                if let Some(rv) = raised {
                    high = rv;
                    durable.send_replace(rv);
                }
            }
            Err(why) => {
                let why = format!("data directory {}: {why}", path.display());
                tracing::error!(error = %why, "the data directory failed; writes are no longer acknowledged");
                let _ = failed.set(why);
                return;
            }
        }
    }
}

/// One transaction: the records, the counter when it rose, the meta values.
fn commit(
    db: &Database,
    records: &[Record],
    rv: Option<u64>,
    meta: &[(String, Vec<u8>)],
) -> Result<(), String> {
    let mut tx = db.begin_write().map_err(|e| e.to_string())?;
    tx.set_durability(Durability::Immediate)
        .map_err(|e| e.to_string())?;
    {
        let mut objects = tx.open_table(OBJECTS).map_err(|e| e.to_string())?;
        let mut value = Vec::new();
        for r in records {
            let key = db_key(&r.res, &r.key);
            match &r.bytes {
                Some(bytes) => {
                    value.clear();
                    value.extend_from_slice(&r.rv.to_le_bytes());
                    value.extend_from_slice(bytes);
                    objects
                        .insert(key.as_str(), value.as_slice())
                        .map_err(|e| e.to_string())?;
                }
                None => {
                    objects.remove(key.as_str()).map_err(|e| e.to_string())?;
                }
            }
        }
        let mut table = tx.open_table(META).map_err(|e| e.to_string())?;
        if let Some(rv) = rv {
            table
                .insert(RV_KEY, rv.to_le_bytes().as_slice())
                .map_err(|e| e.to_string())?;
        }
        for (k, v) in meta {
            table
                .insert(k.as_str(), v.as_slice())
                .map_err(|e| e.to_string())?;
        }
    }
    tx.commit().map_err(|e| e.to_string())
}

/// Writes meta values in their own durable transaction (before the writer
/// thread owns the database).
pub(super) fn put_meta(db: &Database, entries: &[(&str, &[u8])]) -> Result<(), String> {
    let owned: Vec<(String, Vec<u8>)> = entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.to_vec()))
        .collect();
    commit(db, &[], None, &owned)
}
