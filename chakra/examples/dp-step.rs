//! Writes a data-parallel training step as a Chakra trace (one rank's; replicate it on every
//! rank): `cargo run -p chakra --example dp-step -- OUT.et`. Illustrative times, not measured:
//! the batch is copied in (MEM_LOAD, 256 MiB); 8 layers forward (a 50 us CPU launch, then a
//! 2 ms kernel each); 8 layers backward (4 ms kernels), the gradients of every two layers
//! all-reduced as one 100 MB bucket as soon as they are ready; the optimizer (a 3 ms kernel)
//! waits for the four buckets.

use chakra::proto::Value;
use chakra::write::{Trace, attr};
use chakra::{CollectiveCommType, NodeType};

fn main() {
    let Some(out) = std::env::args().nth(1) else {
        eprintln!("usage: dp-step OUT.et");
        std::process::exit(2);
    };
    let mut t = Trace::new("0.0.4");
    let batch = t.node(
        "batch to GPU",
        NodeType::MemLoadNode,
        &[],
        0,
        vec![attr("tensor_size", Value::Int64Val(256 << 20))],
    );
    let mut last = batch;
    for l in 0..8 {
        let launch = t.cpu(&format!("forward {l} launch"), &[], 50);
        last = t.kernel(&format!("forward {l}"), &[last, launch], 2000);
    }
    let mut buckets = Vec::new();
    for l in (0..8).rev() {
        last = t.kernel(&format!("backward {l}"), &[last], 4000);
        if l % 2 == 0 {
            let name = format!("allreduce bucket {}", l / 2);
            buckets.push(t.collective(
                &name,
                &[last],
                CollectiveCommType::AllReduce,
                100_000_000,
                None,
            ));
        }
    }
    buckets.push(last);
    t.kernel("optimizer", &buckets, 3000);
    if let Err(e) = t.write(std::path::Path::new(&out)) {
        eprintln!("{out}: {e}");
        std::process::exit(2);
    }
}
