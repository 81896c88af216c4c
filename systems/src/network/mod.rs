//! The network: fluid flows sharing link bandwidth with max-min fairness.

pub mod maxmin;
