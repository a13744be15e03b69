//! Sharded controllers: a controller's replicas split its objects between
//! them, each reconciling only the objects of the slots it holds, and
//! handing slots over as replicas join and leave, so that no object is
//! ever reconciled by two replicas at once.
//!
//! - The uid hash (KEP-5866's 64-bit FNV-1a) is cut into
//!   [`SLOTS`](crate::cache::SLOTS) slots ([`Slots`](crate::cache::Slots)).
//! - Each replica holds a member Lease (`<ring>-<identity>`, labelled
//!   [`RING_LABEL`]); the ring's own Lease (`<ring>`) records which member
//!   each slot is meant for and which holds it ([`RingState`]), changed
//!   only by updates conditional on its resourceVersion.
//! - A slot moves in two writes: the old holder stops admitting reconciles
//!   of it, waits for those in flight, and writes it free; the new holder
//!   writes itself in and starts. A replica that stops renewing its Lease
//!   stops itself within the renew deadline and is written out by the
//!   others after the lease duration.
//! - The replica's informer of the primary kind follows the slots held
//!   ([`Holdings`](crate::cache::Holdings)): it lists and watches with
//!   their `shardSelector` where the server serves it, so the server sends
//!   only them; elsewhere, and always for owned kinds, each object carries
//!   its slot as a label, written by the replica holding it, and the
//!   informers select by label ([`Mechanism`]). An owned object's slot is
//!   its owner's, so the replica holding an owner sees its children.
//!
//! Used through [`ControllerBuilder::sharded`](crate::controller::ControllerBuilder::sharded);
//! the gate is public for controllers written by hand.
//!
//! The design follows timebertt's kubernetes-controller-sharding (shard
//! Leases, moves by drain) with the ring kept by the replicas themselves
//! instead of a sharder, and client-go's leader election for liveness.

mod gate;
pub(crate) mod labeller;
mod mechanism;
pub(crate) mod membership;
mod metrics;
mod ring;

pub use gate::{Permit, ShardGate};
pub use mechanism::{serves_shard_selector, Mechanism};
pub use membership::{Sharding, RING_LABEL, SLOTS_ANNOTATION, SUMMARY_ANNOTATION};
pub use metrics::ShardMetrics;
pub use ring::{Plan, RingState, RING_ANNOTATION};
