//! The StarPU-like task runtime. So far: task graphs (`graph`: handles, accesses, implicit and
//! explicit dependencies, tiled Cholesky, LU and QR generators, DAG files). Workers, memory
//! nodes, schedulers and their plugin come next (see the runtime issue's notes).

pub mod graph;
