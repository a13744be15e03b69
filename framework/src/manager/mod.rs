//! The manager: one shared cache for every controller, leader election,
//! health, readiness and metrics endpoints, and graceful shutdown.
