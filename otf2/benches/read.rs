//! Reading speed: every event of a generated archive (8 ranks of 250,000 events each: sends,
//! receives, their regions and a collective now and then), decoded with clock offsets and
//! mappings as a replay reads them. Target (issue 54): at least 20 million events per second
//! per core. Memory stays one chunk per open reader whatever the trace's length.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use otf2::EventKind as E;
use otf2::write::{ArchiveWriter, MpiDefinitions};

const RANKS: u32 = 8;
const ROUNDS: u64 = 41_500;

fn archive(dir: &std::path::Path) -> (std::path::PathBuf, u64) {
    let defs = MpiDefinitions {
        ranks: RANKS,
        resolution: 1_000_000_000,
        regions: vec!["MPI_Send".into(), "MPI_Recv".into(), "MPI_Allreduce".into()],
    };
    let mut w = ArchiveWriter::create(dir, defs, 1 << 20).unwrap();
    let mut total = 0;
    for r in 0..RANKS {
        let (right, left) = ((r + 1) % RANKS, (r + RANKS - 1) % RANKS);
        let mut t = 0u64;
        let events = (0..ROUNDS).flat_map(move |i| {
            let mut v = vec![
                E::Enter { region: 0 },
                E::MpiSend {
                    receiver: right,
                    comm: 0,
                    tag: (i % 7) as u32,
                    length: 65536 + i,
                },
                E::Leave { region: 0 },
                E::Enter { region: 1 },
                E::MpiRecv {
                    sender: left,
                    comm: 0,
                    tag: (i % 7) as u32,
                    length: 65536 + i,
                },
                E::Leave { region: 1 },
            ];
            if i % 64 == 0 {
                v.push(E::Enter { region: 2 });
                v.push(E::MpiCollectiveBegin);
                v.push(E::MpiCollectiveEnd {
                    op: otf2::CollectiveOp::Allreduce,
                    comm: 0,
                    root: u32::MAX,
                    sent: 64,
                    received: 64,
                });
                v.push(E::Leave { region: 2 });
            }
            v.into_iter().map(move |k| {
                t += 1234;
                (t, k)
            })
        });
        total += w.events(r, events).unwrap();
    }
    (w.finish().unwrap(), total)
}

fn read_all(anchor: &std::path::Path) -> u64 {
    let a = otf2::Archive::open(anchor).unwrap();
    let mut n = 0;
    for loc in &a.defs.locations {
        let mut r = a.events(loc.id).unwrap();
        while let Some(e) = r.next_event().unwrap() {
            n += e.time & 1;
        }
        n += r.count();
    }
    n
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let (anchor, events) = archive(dir.path());
    let mut g = c.benchmark_group("otf2");
    g.throughput(Throughput::Elements(events));
    g.sample_size(10);
    g.bench_function("read_2M_events", |b| b.iter(|| read_all(&anchor)));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
