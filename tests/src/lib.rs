//! End-to-end tests across kubeforge's crates live in `tests/tests/`; this
//! library holds their shared helpers.
