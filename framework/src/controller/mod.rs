//! Controllers: the reconcile loop fed by informers through a workqueue, with
//! predicates, finalizers, owner references and an event recorder.
