//! The `/openapi/v3` documents.
