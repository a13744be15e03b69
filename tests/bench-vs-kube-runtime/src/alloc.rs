//! The heap counters behind the figures: the system allocator wrapped in
//! `cap::Cap` (installed as the global allocator in `main`), which counts
//! the bytes asked for, live and the most ever live at once, and
//! reallocates in place, so counting does not change how either side's
//! buffers grow.

use std::alloc::System;

use cap::Cap;

/// The counting allocator's type.
pub type Heap = Cap<System>;

/// A counting allocator with no limit.
pub const fn heap() -> Heap {
    Cap::new(System, usize::MAX)
}

/// Bytes live now.
pub fn live() -> usize {
    crate::HEAP.allocated()
}

/// The most bytes ever live at once in this process.
pub fn peak() -> usize {
    crate::HEAP.max_allocated()
}
