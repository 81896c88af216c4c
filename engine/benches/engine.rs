//! Engine cost per event: trivial events sharing timestamps in batches of 1, 10 and 100, with
//! 1,000 events pending.
//! Target (issue 2): under 200 ns per event.

use bevy_app::App;
use bevy_ecs::prelude::*;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hetsim_engine::*;

entity_event!(Work, "bench.work");

#[derive(Resource)]
struct Budget(u64, u64);

fn budget_gap(b: &Budget) -> u64 {
    b.1
}

/// Each handled event schedules its successor one round later, keeping 1,000 pending.
fn handle(
    mut inbox: ResMut<Inbox<Work>>,
    mut cal: ResMut<Calendar>,
    clock: Res<Clock>,
    mut budget: ResMut<Budget>,
) {
    for Work(e) in inbox.drain() {
        if budget.0 > 0 {
            budget.0 -= 1;
            cal.schedule(SimTime(clock.now.0 + budget_gap(&budget) as u128), Work(e));
        }
    }
}

fn setup(events: u64, pending: u64, batch: u64) -> App {
    let mut app = App::empty();
    app.add_plugins(EnginePlugin::default())
        .add_sim_event::<Work>()
        .insert_resource(Budget(events, pending / batch));
    // Six chained systems, as DESIGN.md measured; one does the work.
    app.add_systems(SimStep, handle.in_set(SimSet::Workload));
    for set in [
        SimSet::Runtime,
        SimSet::Protocol,
        SimSet::Collectives,
        SimSet::Compute,
        SimSet::Network,
    ] {
        app.add_systems(SimStep, (|| {}).in_set(set));
    }
    let e = app.world_mut().spawn_empty().id();
    let mut cal = app.world_mut().resource_mut::<Calendar>();
    for i in 0..pending {
        // `batch` events share each timestamp.
        cal.schedule(SimTime((i / batch) as u128), Work(e));
    }
    app
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("engine");
    let events = 100_000;
    g.throughput(Throughput::Elements(events));
    g.sample_size(10);
    for batch in [1u64, 10, 100] {
        g.bench_function(format!("batch{batch}_pending1k"), |b| {
            b.iter_batched(
                || setup(events, 1000, batch),
                |mut app| run(&mut app).unwrap(),
                criterion::BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
