//! Object lifecycle semantics, independent of HTTP: create, update (incl.
//! the status and finalize subresources) and delete exactly as
//! kube-apiserver's generic registry store and strategies behave —
//! server-set metadata, generation bumps, status subresource rules,
//! finalizers and `deletionTimestamp`, optimistic concurrency — plus the
//! hooks that run after every successful write (CRD registration, the
//! garbage collector's bookkeeping). Handlers and the in-server controllers
//! both write through here; requests through the admission chain
//! ([`admit`]), the controllers without.

mod binding;
mod checks;
pub(crate) mod crds;
mod create;
mod delete;
pub(crate) mod engines;
mod eviction;
mod graceful;
mod hooks;
mod opts;
pub(crate) mod owners;
mod update;

pub(crate) use binding::bind;
pub(crate) use create::{create, create_admitted};
pub(crate) use delete::{delete, delete_admitted, DeleteOpts, Deleted, Propagation};
pub(crate) use eviction::evict;
pub(crate) use hooks::after_restart;
pub(crate) use opts::{store_error, too_large, Sub, WriteOpts, Written};
pub(crate) use update::{update, update_admitted, Precondition};
