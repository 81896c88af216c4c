//! StarPU-SimGrid's driver threads and pushes: which workers a push signals under eager and prio
//! ([`drivers`]), and the driver threads' pushes and loops and the order SimGrid wakes them in
//! ([`threads`]).

pub mod drivers;
pub mod threads;
