//! The cache: reflectors that list and watch, indexed stores of `Arc<K>`, and
//! shared informers with their factory.
