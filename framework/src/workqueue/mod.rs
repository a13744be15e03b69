//! A workqueue with client-go's semantics: deduplication, delays and
//! rate-limited retries. Knows nothing of Kubernetes.
