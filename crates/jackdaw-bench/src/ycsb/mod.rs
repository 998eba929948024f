//! YCSB (the Yahoo! Cloud Serving Benchmark) as YCSB defines it: CoreWorkload's workloads A–F
//! with YCSB's generators, keys, records and property files, run on every engine of the harness.
//!
//! [`gen`] holds the generators (ported from YCSB's definitions and pinned by tests to values
//! computed with YCSB's own jar), [`workload`] CoreWorkload (properties, keys, records, the
//! choice of operations), [`run`] the load and run phases on the engines, [`report`] the tables
//! and charts.

pub mod gen;
pub mod report;
pub mod run;
pub mod workload;

pub use report::YcsbReport;
pub use run::{run, YcsbConfig};
