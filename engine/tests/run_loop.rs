//! The run loop's contract: batches per timestamp, zero-delay cascades, set order, switches,
//! stall detection and limits.

use bevy_app::App;
use bevy_ecs::prelude::*;
use hetsim_engine::*;

entity_event!(Tick, "test.tick");
entity_event!(Echo, "test.echo");

/// What the test systems saw: (time in fs, label).
#[derive(Resource, Default)]
struct Log(Vec<(u128, &'static str)>);

#[derive(Resource, Default)]
struct Pending(u32);

fn app(limits: RunLimits) -> App {
    let mut app = App::empty();
    app.add_plugins(EnginePlugin {
        seed: 1,
        limits,
        progress: false,
    })
    .add_sim_event::<Tick>()
    .add_sim_event::<Echo>()
    .register_switch("echo", true, "answers every tick at the same time")
    .init_resource::<Log>()
    .init_resource::<Pending>()
    .add_systems(SimStep, on_tick.in_set(SimSet::Workload))
    .add_systems(
        SimStep,
        on_echo.in_set(SimSet::Network).run_if(switch_on("echo")),
    );
    app
}

fn on_tick(
    mut inbox: ResMut<Inbox<Tick>>,
    mut cal: ResMut<Calendar>,
    clock: Res<Clock>,
    mut log: ResMut<Log>,
) {
    for Tick(e) in inbox.drain() {
        log.0.push((clock.now.0, "tick"));
        cal.schedule(clock.now, Echo(e)); // zero delay: same timestamp, next step
    }
}

fn on_echo(mut inbox: ResMut<Inbox<Echo>>, clock: Res<Clock>, mut log: ResMut<Log>) {
    for _ in inbox.drain() {
        log.0.push((clock.now.0, "echo"));
    }
}

fn schedule_ticks(app: &mut App, times: &[u128]) {
    let e = app.world_mut().spawn_empty().id();
    let mut cal = app.world_mut().resource_mut::<Calendar>();
    for &t in times {
        cal.schedule(SimTime(t), Tick(e));
    }
}

#[test]
fn zero_delay_cascades_run_at_the_same_time_before_advancing() {
    let mut app = app(RunLimits::default());
    schedule_ticks(&mut app, &[10, 10, 20]);
    let stats = run(&mut app).unwrap();
    let log = &app.world().resource::<Log>().0;
    assert_eq!(
        log,
        &[
            (10, "tick"),
            (10, "tick"),
            (10, "echo"),
            (10, "echo"),
            (20, "tick"),
            (20, "echo")
        ]
    );
    assert_eq!(stats.events, 6);
    // Two timestamps, each a batch plus one cascade step.
    assert_eq!(stats.steps, 4);
    assert_eq!(stats.sim_time, SimTime(20));
}

#[test]
fn a_switched_off_system_does_not_run_and_its_events_are_dropped() {
    let mut app = app(RunLimits::default());
    app.world_mut()
        .resource_mut::<Switches>()
        .set("echo", false)
        .unwrap();
    schedule_ticks(&mut app, &[5]);
    run(&mut app).unwrap();
    assert_eq!(app.world().resource::<Log>().0, vec![(5, "tick")]);
    assert!(app.world().resource::<Inbox<Echo>>().is_empty());
    let err = app
        .world_mut()
        .resource_mut::<Switches>()
        .set("nope", false)
        .unwrap_err();
    assert!(err.contains("echo"), "{err}");
}

#[test]
fn stuck_work_is_reported_when_the_calendar_runs_dry() {
    let mut app = app(RunLimits::default());
    app.world_mut().resource_mut::<Pending>().0 = 2;
    app.add_stall_check(|w: &mut World| {
        (0..w.resource::<Pending>().0)
            .map(|i| format!("receive #{i} never matched"))
            .collect()
    });
    schedule_ticks(&mut app, &[1]);
    match run(&mut app) {
        Err(RunError::Stalled { at, stuck }) => {
            assert_eq!(at, SimTime(1));
            assert_eq!(
                stuck,
                vec!["receive #0 never matched", "receive #1 never matched"]
            );
        }
        other => panic!("expected a stall, got {other:?}"),
    }
}

#[test]
fn limits_stop_the_run_with_an_error() {
    let mut app = app(RunLimits {
        max_time: Some(SimTime(15)),
        max_events: None,
    });
    schedule_ticks(&mut app, &[10, 20]);
    assert!(matches!(run(&mut app), Err(RunError::Limit { .. })));
    // The limit is exact: 3 events delivered, even when a step holds more.
    let mut app = app_with_events(3);
    assert!(matches!(
        run(&mut app),
        Err(RunError::Limit { events: 3, .. })
    ));
}

fn app_with_events(max: u64) -> App {
    let mut app = app(RunLimits {
        max_time: None,
        max_events: Some(max),
    });
    schedule_ticks(&mut app, &[1, 2, 3, 4]);
    app
}

#[test]
fn model_errors_stop_the_run() {
    let mut app = app(RunLimits::default());
    app.add_systems(SimStep, |mut e: ResMut<SimErrors>| {
        e.0.push("bad endpoint".into())
    });
    schedule_ticks(&mut app, &[1]);
    assert_eq!(run(&mut app), Err(RunError::Model("bad endpoint".into())));
}
