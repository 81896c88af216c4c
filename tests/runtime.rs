//! The task runtime: hand-computable schedules, dependencies, memory limits, every scheduler
//! on StarPU's calibrated attila machine, bad input.

mod common;

use hetsim::schema::load::{load_scenario, parse_scenario};
use hetsim::schema::scenario::OutputSpec;
use hetsim::systems::runtime::RuntimeReport;
use hetsim::systems::runtime::tiled;
use hetsim::{Error, RunOptions, simulate};

/// One node: `gpus` GPUs (PCIe 10 GB/s each way, no latency, 100 GB/s host link) and
/// `cpus` CPU workers (one core drives each GPU).
fn node(gpus: u32, cpus: u32) -> String {
    format!(
        r#"Cluster(nodes: 1, node: NodeSpec(cpu_cores: {}, gpus: {gpus},
            gpu: GpuSpec(name: "G", memory: "2GiB", speed: "1TFlop/s"),
            pcie: PcieSpec(up: "10GB/s", down: "10GB/s", bus: "100GB/s", latency: "0us")),
            network: None)"#,
        cpus + gpus
    )
}

fn run(
    platform: &str,
    workload: &str,
    runtime: &str,
    disable: &[&str],
) -> Result<RuntimeReport, Error> {
    run_logged(platform, workload, runtime, disable, false)
}

/// As [`run`], keeping the runtime log (`output.runtime_log`) if `log`.
fn run_logged(
    platform: &str,
    workload: &str,
    runtime: &str,
    disable: &[&str],
    log: bool,
) -> Result<RuntimeReport, Error> {
    let text = format!(
        r#"Scenario(name: "t", platform: {platform}, workload: {workload}, runtime: RuntimeSpec({runtime}))"#
    );
    let mut s = parse_scenario(&text, "test", &common::repo().join("scenarios"), &[])
        .map_err(|e| Error::Input(e.to_string()))?;
    s.output = OutputSpec {
        runtime_log: log,
        ..OutputSpec::tables_only()
    };
    let opts = RunOptions {
        disable: disable.iter().map(|s| s.to_string()).collect(),
        progress: false,
        ..Default::default()
    };
    let (app, _) = simulate(&s, &opts)?;
    Ok(app.world().resource::<RuntimeReport>().clone())
}

const QUIET: &[&str] = &["runtime_overheads"];

/// Runs `dag` under dmda with these codelet `models`.
fn dmda(platform: &str, dag: &str, models: &str, disable: &[&str]) -> RuntimeReport {
    run(
        platform,
        dag,
        &format!("scheduler: dmda, {models}"),
        disable,
    )
    .unwrap()
}

/// The run ends at `expected` seconds (to the nanosecond).
fn assert_makespan(r: &RuntimeReport, expected: f64) {
    assert!(
        (r.makespan_s - expected).abs() < 1e-9,
        "makespan {} s, expected {expected} s",
        r.makespan_s
    );
}

/// Task i starts at `expect[i].0` seconds (to the nanosecond) on worker `expect[i].1`.
fn assert_starts(r: &RuntimeReport, expect: &[(f64, u32)], label: &str) {
    let starts: Vec<(f64, u32)> = r.task_times.iter().map(|t| (t.0, t.2)).collect();
    assert_eq!(starts.len(), expect.len(), "{label}: {starts:?}");
    for (got, want) in starts.iter().zip(expect) {
        assert!(
            (got.0 - want.0).abs() < 1e-9 && got.1 == want.1,
            "{label}: {starts:?}"
        );
    }
}

#[test]
fn independent_tasks_share_two_workers() {
    // Four 10 ms tasks without data on one GPU and one CPU, 10 ms on either: two each,
    // 20 ms, under every policy (a GPU pipeline of one task, so that a GPU does not hold
    // two tasks while the CPU idles).
    let tasks = (0..4)
        .map(|i| format!(r#"(name: "t{i}", codelet: "k")"#))
        .collect::<Vec<_>>()
        .join(", ");
    let dag = format!("Dag(handles: [], tasks: [{tasks}])");
    let models =
        r#"models: {"k": CodeletModel(cpu: Some(Constant("10ms")), cuda: Some(Constant("10ms")))}"#;
    for sched in [
        "eager",
        "prio",
        "ws",
        "lws",
        "dm",
        "dmda",
        "dmdar",
        "dmdap",
        "dmdas",
        "dmdasd",
        "heteroprio",
    ] {
        let r = run(
            &node(1, 1),
            &dag,
            &format!("scheduler: {sched}, cuda_pipeline: 1, {models}"),
            QUIET,
        )
        .unwrap();
        assert!(
            (r.makespan_s - 0.020).abs() < 1e-12,
            "{sched}: {}",
            r.makespan_s
        );
        assert_eq!(r.workers[0].2 + r.workers[1].2, 4);
    }
}

#[test]
fn eager_wakes_the_first_sleeping_worker_not_every_worker() {
    // One task, 10 ms on the GPU, 100 ms on a CPU core, two CPU workers idle beside the GPU.
    // StarPU's eager push signals the workers in order up to the first asleep and not yet
    // told (GPUs are numbered first; drivers.rs): the GPU takes it, 10 ms. (Waking all three and letting
    // a CPU ask first would give 100 ms.) ws wakes everyone, and the task submitted by the
    // application goes round-robin to worker 1, a CPU: 100 ms.
    let dag = r#"Dag(handles: [], tasks: [(name: "t", codelet: "k")])"#;
    let models = r#"models: {"k": CodeletModel(cpu: Some(Constant("100ms")), cuda: Some(Constant("10ms")))}"#;
    for (sched, expect) in [("eager", 0.010), ("prio", 0.010), ("ws", 0.100)] {
        let r = run(
            &node(1, 2),
            dag,
            &format!("scheduler: {sched}, {models}"),
            QUIET,
        )
        .unwrap();
        assert!(
            (r.makespan_s - expect).abs() < 1e-12,
            "{sched}: {}",
            r.makespan_s
        );
    }
}

#[test]
fn under_eager_pushes_and_pops_take_starpu_simgrids_microseconds() {
    // 2 GPUs, 2 CPUs; every task 10 ms on a GPU (+10 us launch), 100 ms on a CPU. StarPU-
    // SimGrid 1.4 (drivers.rs, threads.rs): each push costs its pusher a 1 us sleep and
    // signals the workers in order up to the first asleep and not yet told (every driver
    // starts untold); a signalled driver pops after its progress, 1 us for a CPU, 2 us for
    // a GPU; sleeps ending together wake pushers first, then by when they began, the last
    // begun first; a GPU pops nothing while its task's data come, and after a launch sleeps
    // 10 us before its loop. r: pushed at 1 us, GPU0 pops it at 3 us, ends at 10.013 ms.
    // GPU0 pushes s1, s2, s3 at 10.014, 10.015, 10.016 ms: s1 tells GPU0 itself, s2 GPU1,
    // s3 CPU2 (CPU3 is never told). At 10.017 ms GPU1 and CPU2 pop s1 and s2; GPU0, back
    // from its pushes, pops s3 at 10.018 ms. At 20.028 ms s3 ends (GPU0 begins its loop)
    // and GPU1, whose s1 ended at 20.027, pushes c, telling GPU0, then begins its loop.
    // At 20.029 ms the last begun wakes first: GPU1, then GPU0, each sleeping its second
    // microsecond; at 20.030 ms GPU0's, begun last, wakes first: GPU0 takes c.
    let dag = r#"Dag(handles: [], tasks: [
        (name: "r", codelet: "k"),
        (name: "s1", codelet: "k", deps: ["r"]),
        (name: "s2", codelet: "k", deps: ["r"]),
        (name: "s3", codelet: "k", deps: ["r"]),
        (name: "c", codelet: "k", deps: ["s1"])])"#;
    let models = r#"models: {"k": CodeletModel(cpu: Some(Constant("100ms")), cuda: Some(Constant("10ms")))}"#;
    for sched in ["eager", "prio"] {
        let r = run(
            &node(2, 2),
            dag,
            &format!("scheduler: {sched}, {models}"),
            &[],
        )
        .unwrap();
        let expect = [
            (3e-6, 0),
            (0.010017, 1),
            (0.010017, 2),
            (0.010018, 0),
            (0.020030, 0),
        ];
        assert_starts(&r, &expect, sched);
        assert_makespan(&r, 0.110017);
    }
}

#[test]
fn under_dmda_a_releaser_pushes_one_task_per_microsecond_then_pops() {
    // One GPU, every task 10 ms (+10 us launch). StarPU-SimGrid charges every push 1 us,
    // whatever the policy (`_starpu_push_task`), and the driver that released tasks pops
    // after its pushes and its progress (2 us for a GPU's). r is pushed by the application
    // at 1 us and starts then (its kernel queued 10 us later), ends at 10.011 ms; it
    // releases s1 and s2, pushed at 10.012 and 10.013 ms; GPU0 pops both at 10.015 ms: s1
    // runs 10.015-20.025 ms, s2 (in the pipeline) from there to 30.025 ms. Pushing and
    // popping at once would start s1 at 10.011 ms.
    let dag = r#"Dag(handles: [], tasks: [
        (name: "r", codelet: "k"),
        (name: "s1", codelet: "k", deps: ["r"]),
        (name: "s2", codelet: "k", deps: ["r"])])"#;
    let models = r#"models: {"k": CodeletModel(cpu: Some(Constant("100ms")), cuda: Some(Constant("10ms")))}"#;
    let r = dmda(&node(1, 0), dag, models, &[]);
    assert_starts(&r, &[(1e-6, 0), (0.010015, 0), (0.020025, 0)], "dmda");
    assert_makespan(&r, 0.030025);
}

#[test]
fn a_wont_use_hint_coming_due_costs_its_thread_two_pushes() {
    // Cholesky nt = 2 on one CPU; potrf 2 ms, trsm and syrk 1 ms. A wont_use hint is a read
    // acquire, so it comes due when the tile's last writer ends: A(0,0)'s as potrf(0) ends,
    // A(1,0)'s as trsm(0,1) ends, A(1,1)'s as potrf(1) ends. The ending thread pushes the
    // acquire, then its release callback, 1 us each after the tasks it released
    // (`_starpu_data_acquire_cb_pre` and `_release` in StarPU-SimGrid's log).
    // eager: potrf(0) pushed at 1 us, popped after 1 us of progress (2 us), ends at
    // 2.002 ms; trsm pushed at 2.003, the hint's two at 2.004 and 2.005, popped at 2.006,
    // ends at 3.006; syrk pushed at 3.007, the next hint's at 3.008 and 3.009, popped at
    // 3.010, ends at 4.010; potrf(1) pushed at 4.011, popped at 4.012, ends at 6.012 ms.
    // dmda: the application's push at 1 us is popped at once; each releaser pops after its
    // pushes and 1 us of progress: 2.001 + 3 + 1 us, 3.005 + 3 + 1 us, 4.009 + 1 + 1 us.
    let models = r#"models: {
        "chol_model_potrf": CodeletModel(cpu: Some(Constant("2ms"))),
        "chol_model_trsm": CodeletModel(cpu: Some(Constant("1ms"))),
        "chol_model_syrk": CodeletModel(cpu: Some(Constant("1ms"))),
        "chol_model_gemm": CodeletModel(cpu: Some(Constant("1ms")))}"#;
    for (sched, expect, end) in [
        ("eager", [2e-6, 0.002006, 0.003010, 0.004012], 0.006012),
        ("dmda", [1e-6, 0.002005, 0.003009, 0.004011], 0.006011),
    ] {
        let r = run(
            &node(0, 1),
            "Cholesky(n: 1920, tile: 960)",
            &format!("scheduler: {sched}, {models}"),
            &[],
        )
        .unwrap();
        let expect: Vec<(f64, u32)> = expect.iter().map(|&t| (t, 0)).collect();
        assert_starts(&r, &expect, sched);
        assert_makespan(&r, end);
    }
}

#[test]
fn a_wont_use_hints_callback_acts_after_the_pushes_it_follows() {
    // Cholesky nt = 2: POTRF and SYRK on the GPU only, TRSM on the CPU only. The hint on
    // A(0,0) comes due as potrf(0) ends (3 ms); its thread pushes trsm(0,1) first (to the
    // CPU, whose prefetch asks for A(0,0) from the GPU at task-prefetch level), then the
    // hint's acquire and callback: the callback's idle write-back finds A(0,0) requested
    // already and asks nothing. StarPU-SimGrid's log of attila Cholesky dmdas shows the same
    // order: no idle request for A(0,0), and each tile's idle request 3 us after the last
    // push of the thread whose task end made the hint due.
    let models = r#"models: {
        "chol_model_potrf": CodeletModel(cuda: Some(Constant("3ms"))),
        "chol_model_trsm": CodeletModel(cpu: Some(Constant("1ms"))),
        "chol_model_syrk": CodeletModel(cuda: Some(Constant("1ms"))),
        "chol_model_gemm": CodeletModel(cuda: Some(Constant("1ms")))}"#;
    let runtime = format!("scheduler: dmda, {models}");
    let workload = "Cholesky(n: 1920, tile: 960)";
    let log = run_logged(&node(1, 1), workload, &runtime, &[], true)
        .unwrap()
        .log;
    let a00_to_ram: Vec<&str> = log
        .iter()
        .filter(|l| l.starts_with("Q ") && l.contains(" 0x0 1 0 "))
        .map(|l| l.as_str())
        .collect();
    assert_eq!(a00_to_ram.len(), 1, "{a00_to_ram:?}");
    assert!(
        a00_to_ram[0].ends_with(" 1"),
        "the TRSM's prefetch asks for A(0,0), not the hint: {a00_to_ram:?}"
    );
}

#[test]
fn under_ws_idle_thieves_race_the_releaser_for_its_pushes() {
    // 1 GPU (worker 0), 1 CPU (worker 1); every task 10 ms on the GPU (+10 us of kernel
    // queueing), 100 ms on the CPU. StarPU-SimGrid 1.4's ws: a push costs its pusher 1 us
    // and wakes every worker; a woken driver pops after its progress (CPU 1 us, GPU 2 us),
    // the releaser after its pushes. r, submitted, goes round-robin to the CPU's deque at
    // 1 us; the CPU pops it at 2 us (the GPU, at 3 us, finds nothing: the CPU's deque is
    // empty). r ends at 100.002 ms and the CPU pushes s1, s2, s3 into its deque at 100.003,
    // 100.004 and 100.005 ms. The GPU, woken by the first, steals at 100.005 ms (after s3's
    // push, set earlier): the newest task, s3. At 100.006 ms the CPU, back from its pushes,
    // pops the oldest, s1 (its resume was set before the GPU's second signal), and the GPU
    // steals s2, which runs after s3 (100.005-110.015 ms) from 110.015 to 120.015 ms.
    // s1 runs 100.006-200.006 ms.
    let dag = r#"Dag(handles: [], tasks: [
        (name: "r", codelet: "k"),
        (name: "s1", codelet: "k", deps: ["r"]),
        (name: "s2", codelet: "k", deps: ["r"]),
        (name: "s3", codelet: "k", deps: ["r"])])"#;
    let models = r#"models: {"k": CodeletModel(cpu: Some(Constant("100ms")), cuda: Some(Constant("10ms")))}"#;
    let r = run(&node(1, 1), dag, &format!("scheduler: ws, {models}"), &[]).unwrap();
    let expect = [(2e-6, 1), (0.100006, 1), (0.110015, 0), (0.100005, 0)];
    assert_starts(&r, &expect, "ws");
    assert_makespan(&r, 0.200006);
}

/// GPU-only task A writes 1 GB x; CPU-only task B then reads it.
const CHAIN: &str = r#"Dag(handles: [(name: "x", size: 1e9)], tasks: [
    (name: "a", codelet: "gpu", accesses: [("x", W)]),
    (name: "b", codelet: "cpu", accesses: [("x", R)])])"#;
/// [`CHAIN`]'s codelets: 10 ms each.
const CHAIN_MODELS: &str = r#"models: {
    "gpu": CodeletModel(cuda: Some(Constant("10ms"))),
    "cpu": CodeletModel(cpu: Some(Constant("10ms")))}"#;

#[test]
fn a_chain_pays_its_transfer() {
    // GPU-only task A writes 1 GB; CPU-only task B reads it: A (10 ms) + 1 GB over the GPU's
    // 10 GB/s down link (0.1 s) + B (10 ms) = 0.12 s.
    let (dag, models) = (CHAIN, CHAIN_MODELS);
    let r = dmda(&node(1, 1), dag, models, QUIET);
    assert_makespan(&r, 0.12);
    assert_eq!((r.bytes_d2h, r.bytes_h2d), (1e9, 0.0));
    // With the runtime's overheads (StarPU-SimGrid's, notes 5.2): cudaMalloc of x on the GPU
    // before A (175 us), 10 us per GPU kernel, 10 us before the transfer, 1 us per push
    // (A's by the application, B's by A's worker), and B's prefetch out of the GPU, handled
    // by the GPU's driver, starts after that driver's progress (2 us) following its push:
    // 0.120199 s.
    let r = dmda(&node(1, 1), dag, models, &[]);
    assert_makespan(&r, 0.120199);
    // x without home data: RAM is allocated when the data go there, pinned at 650 us per MiB
    // (1e9 B = 953.67 MiB: 0.619888 s) before the copy.
    let homeless = dag.replace(r#"size: 1e9)"#, r#"size: 1e9, home: false)"#);
    let r = dmda(&node(1, 1), &homeless, models, &[]);
    let pinned = 650e-6 * 1e9 / 1048576.0;
    assert_makespan(&r, 0.120199 + pinned);
}

#[test]
fn under_eager_a_copy_waits_for_its_gpu_drivers_progress() {
    // CHAIN under eager, one GPU and one CPU, with the runtime's overheads. a is pushed by
    // the application at 1 us; GPU0, signalled, pops and starts it after its 2 us of
    // progress (3 us), paying x's cudaMalloc (175 us) and the kernel's queueing (10 us) in
    // its time: a ends at 10.188 ms.
    // GPU0 then pushes b (10.189 ms), which signals CPU1; CPU1 pops b after its 1 us of
    // progress (10.190 ms) and asks for x from the GPU. That copy is handled by GPU0's
    // driver, in its progress: GPU0, back from its push, is in its 2 us of progress and
    // handles it at their end (10.191 ms), as StarPU's driver goes through its node's
    // request lists; after 10 us of queueing the copy runs 10.201-110.201 ms, then b:
    // 120.201 ms. Handled when asked, the copy would start 1 us earlier.
    let r = run(
        &node(1, 1),
        CHAIN,
        &format!("scheduler: eager, {CHAIN_MODELS}"),
        &[],
    )
    .unwrap();
    assert_starts(&r, &[(3e-6, 0), (0.110201, 1)], "eager");
    assert_makespan(&r, 0.120201);
}

#[test]
fn the_runtime_log_has_the_oracles_lines() {
    // `output.runtime_log` keeps one line per data event, as the StarPU-SimGrid oracle's log
    // writes them (tools/starpu-simgrid/xlog.patch): the time in microseconds, handles by
    // index, modes as StarPU's R 1, W 2, RW 3, levels as its is_prefetch (0 fetch, 1 task
    // prefetch), pushes with the queue's length before them (B), a GPU's buffers at a task
    // start (M: all, pinned by prefetches, referenced, neither; C: marked clean, all, whether
    // a dirty head is set; Y: by clean mark x state (invalid, shared, owner) x pinned, as
    // occupancy-log.patch counts them). The chain above without overheads: A pushed to the
    // GPU's empty queue, popped and started at 0 (x allocated and referenced, not yet valid,
    // dirtied by A's write, which sets no dirty head); at its end (10 ms) B is pushed to the CPU, whose prefetch asks for x from
    // the GPU (node 1) to RAM (node 0) and starts at once; B is popped then, its fetch raises
    // that copy in flight to fetch level (U, as StarPU's log shows it), and B starts when x is
    // there (1 GB at 10 GB/s: 110 ms).
    let (dag, models) = (CHAIN, CHAIN_MODELS);
    let runtime = format!("scheduler: dmda, {models}");
    let log = run_logged(&node(1, 1), dag, &runtime, QUIET, true)
        .unwrap()
        .log;
    assert_eq!(
        *log,
        [
            "B 0.000 0 a n=0",
            "P 0.000 0 a 0x0:2",
            "S 0.000 0 a j=0 0x0:2 p=0 M 1 0 1 0 C 0 1 0 Y 1 0 0 0 0 0 0 0 0 0 0 0",
            "B 10000.000 1 b n=0",
            "Q 10000.000 0x0 1 0 1",
            "X 10000.000 1 0 0x0 prefetch",
            "P 10000.000 1 b 0x0:1",
            "U 10000.000 0x0 0 1",
            "S 110000.000 1 b j=1 0x0:1 p=0",
        ]
    );
    // Off by default: nothing kept.
    let r = dmda(&node(1, 1), dag, models, QUIET);
    assert!(r.log.is_empty());
}

#[test]
fn short_of_memory_cached_buffers_of_other_sizes_are_freed() {
    // One GPU of 2 GiB (1,843 MiB usable): a writes x (1.2 GB), then b writes y (1 GB).
    // x is written back and its buffer cached; y needs another size, so the cached buffer
    // is cudaFree'd (750 us) and y cudaMalloc'ed (175 us), paid before b runs:
    // a pushed at 1 us, 10 ms + 185 us; b pushed 1 us after a's end, popped by a's GPU 2 us
    // later (its progress); write-back 10 us + 0.12 s; b 10 ms + 10 us + 750 us + 175 us.
    let dag = r#"Dag(handles: [(name: "x", size: 1.2e9), (name: "y", size: 1e9)], tasks: [
        (name: "a", codelet: "k", accesses: [("x", W)]),
        (name: "b", codelet: "k", accesses: [("y", W)], deps: ["a"])])"#;
    let models = r#"models: {"k": CodeletModel(cuda: Some(Constant("10ms")))}"#;
    let r = dmda(&node(1, 0), dag, models, &[]);
    let expected = 0.000004 + 0.010185 + 0.00001 + 0.12 + 0.010 + 0.00001 + 0.00075 + 0.000175;
    assert_makespan(&r, expected);
    assert_eq!((r.evictions, r.writebacks), (1, 1));
}

#[test]
fn cuda_mallocs_of_different_gpus_take_turns() {
    // a and b write x and y (1 GB each, beyond the sub-allocator) on two GPUs, pushed at 1
    // and 2 us. StarPU-SimGrid sleeps 175 us per cudaMalloc under one mutex for every GPU
    // (cuda_alloc_mutex in driver_cuda.c), so the second GPU's waits for the first's: a
    // ends at 1 us + 175 us + 10 us + 10 ms, b at 1 us + 350 us + 10 us + 10 ms.
    let dag = r#"Dag(handles: [(name: "x", size: 1e9), (name: "y", size: 1e9)], tasks: [
        (name: "a", codelet: "k", accesses: [("x", W)]),
        (name: "b", codelet: "k", accesses: [("y", W)])])"#;
    let models = r#"models: {"k": CodeletModel(cuda: Some(Constant("10ms")))}"#;
    let r = dmda(&node(2, 0), dag, models, &[]);
    let mut ends = [r.task_times[0].1, r.task_times[1].1];
    ends.sort_by(f64::total_cmp);
    assert!((ends[0] - 0.010186).abs() < 1e-9, "{ends:?}");
    assert!((ends[1] - 0.010361).abs() < 1e-9, "{ends:?}");
    assert_ne!(r.task_times[0].2, r.task_times[1].2, "one task per GPU");
}

#[test]
fn heteroprio_gives_each_kind_what_it_accelerates() {
    // g: 1 ms on the GPU, 10 ms on a CPU; c: the reverse. Two of each on 1 GPU + 1 CPU:
    // heteroprio's GPU walks g's bucket first, the CPU c's: 2 ms. eager takes them in
    // submission order and puts a g on the CPU: 10 ms.
    let tasks = ["g", "g", "c", "c"]
        .iter()
        .enumerate()
        .map(|(i, c)| format!(r#"(name: "t{i}", codelet: "{c}")"#))
        .collect::<Vec<_>>()
        .join(", ");
    let dag = format!("Dag(handles: [], tasks: [{tasks}])");
    let models = r#"models: {
        "g": CodeletModel(cpu: Some(Constant("10ms")), cuda: Some(Constant("1ms"))),
        "c": CodeletModel(cpu: Some(Constant("1ms")), cuda: Some(Constant("10ms")))}"#;
    let run_with = |sched: &str| {
        run(
            &node(1, 1),
            &dag,
            &format!("scheduler: {sched}, cuda_pipeline: 1, {models}"),
            QUIET,
        )
        .unwrap()
    };
    let r = run_with("heteroprio");
    assert!((r.makespan_s - 0.002).abs() < 1e-12, "{}", r.makespan_s);
    assert!(run_with("eager").makespan_s > 0.009);
}

#[test]
fn copies_on_one_link_go_one_at_a_time() {
    // dmda prefetches x then y (0.5 GB each) to the only GPU at t = 0. StarPU-SimGrid runs
    // one copy at a time per node pair: x lands at 0.05 s (10 GB/s up link), a runs to
    // 0.06 s; y lands at 0.1 s, b ends at 0.11 s. (Sharing the link, both would land at 0.1 s.)
    let dag = r#"Dag(handles: [(name: "x", size: 5e8), (name: "y", size: 5e8)], tasks: [
        (name: "a", codelet: "k", accesses: [("x", R)]),
        (name: "b", codelet: "k", accesses: [("y", R)])])"#;
    let models = r#"models: {"k": CodeletModel(cuda: Some(Constant("10ms")))}"#;
    let r = dmda(&node(1, 0), dag, models, QUIET);
    assert!(
        (r.task_times[0].1 - 0.06).abs() < 1e-9,
        "{:?}",
        r.task_times
    );
    assert!(
        (r.task_times[1].1 - 0.11).abs() < 1e-9,
        "{:?}",
        r.task_times
    );
}

#[test]
fn gpus_without_peer_access_copy_through_ram() {
    // a and b write x and y (0.5 GB each) on the two GPUs at once (10 ms); c reads both, so
    // one tile crosses. Peer access: GPU -> GPU over the 10 GB/s links, 0.05 s: 0.07 s.
    // Without: GPU -> RAM then RAM -> GPU, 0.05 s each: 0.12 s.
    let dag = r#"Dag(handles: [(name: "x", size: 5e8), (name: "y", size: 5e8)], tasks: [
        (name: "a", codelet: "k", accesses: [("x", W)]),
        (name: "b", codelet: "k", accesses: [("y", W)]),
        (name: "c", codelet: "k", accesses: [("x", R), ("y", R)])])"#;
    let models = r#"models: {"k": CodeletModel(cuda: Some(Constant("10ms")))}"#;
    let rt = format!("scheduler: eager, cuda_pipeline: 1, {models}");
    let peer = run(&node(2, 0), dag, &rt, QUIET).unwrap();
    assert!((peer.makespan_s - 0.07).abs() < 1e-9, "{}", peer.makespan_s);
    assert_eq!(
        (peer.bytes_d2d, peer.bytes_d2h, peer.bytes_h2d),
        (5e8, 0.0, 0.0)
    );
    let no_peer = node(2, 0).replace(
        r#"latency: "0us")"#,
        r#"latency: "0us", peer_access: false)"#,
    );
    let r = run(&no_peer, dag, &rt, QUIET).unwrap();
    assert_makespan(&r, 0.12);
    assert_eq!((r.bytes_d2d, r.bytes_d2h, r.bytes_h2d), (0.0, 5e8, 5e8));
}

#[test]
fn machines_without_peer_access_factorise_through_ram() {
    // hannibal's GPUs have memcpy_peer = 0 and no GPU-GPU routes in StarPU's platform file:
    // every GPU-GPU copy takes two hops; attila's copy directly.
    let hannibal = attila(
        9600,
        "dmdas",
        &[
            "platform.hostname=hannibal".into(),
            "platform.ncpu=5".into(),
        ],
    )
    .unwrap();
    assert_eq!(hannibal.bytes_d2d, 0.0);
    assert!(hannibal.bytes_d2h > 0.0 && hannibal.gflops > 0.0);
    assert!(attila(9600, "dmdas", &[]).unwrap().bytes_d2d > 0.0);
}

fn attila(n: u32, sched: &str, extra: &[String]) -> Result<RuntimeReport, Error> {
    attila_app("cholesky", n, sched, extra)
}

/// `scenarios/{app}-attila.ron` with `n`, the scheduler and `extra` settings.
fn attila_app(app: &str, n: u32, sched: &str, extra: &[String]) -> Result<RuntimeReport, Error> {
    let mut set = vec![
        format!("workload.n={n}"),
        format!("runtime.scheduler={sched}"),
    ];
    set.extend(extra.iter().cloned());
    let mut s = load_scenario(
        &common::repo().join(format!("scenarios/{app}-attila.ron")),
        &set,
    )
    .map_err(|e| Error::Input(e.to_string()))?;
    s.output = OutputSpec::tables_only();
    let (app, _) = simulate(&s, &RunOptions::default())?;
    Ok(app.world().resource::<RuntimeReport>().clone())
}

#[test]
fn every_scheduler_runs_each_task_once_after_its_dependencies() {
    let g = tiled::cholesky(9600, 960, 4).unwrap();
    for sched in [
        "eager",
        "prio",
        "random",
        "ws",
        "lws",
        "dm",
        "dmda",
        "dmdar",
        "dmdap",
        "dmdas",
        "dmdasd",
        "heteroprio",
    ] {
        let r = attila(9600, sched, &[]).unwrap();
        assert_eq!(r.task_times.len(), g.tasks.len());
        for (t, &(start, end, w)) in r.task_times.iter().enumerate() {
            assert!(start.is_finite() && end >= start && (w as usize) < r.workers.len());
            for &s in g.successors(t as u32) {
                assert!(r.task_times[s as usize].0 >= end, "{sched}: {t} -> {s}");
            }
        }
        let ran: u64 = r.workers.iter().map(|w| w.2).sum();
        assert_eq!(ran, g.tasks.len() as u64, "{sched}");
        assert!(
            r.gflops > 0.0
                && (r.makespan_s - r.task_times.iter().map(|t| t.1).fold(0.0, f64::max)).abs()
                    < 1e-12
        );
    }
}

#[test]
fn gpu_memory_never_exceeds_its_limit_and_eviction_writes_back() {
    // 64 MB per GPU for a 19200 x 19200 float matrix (~740 MB of tiles): evictions and
    // write-backs, every allocation within the limit, the factorisation completes.
    let r = attila(19200, "dmdas", &["platform.limit_cuda_mem_mb=64".into()]).unwrap();
    for (name, cap, peak) in &r.memory[1..] {
        assert_eq!(*cap, 64.0 * 1048576.0, "{name}");
        assert!(peak <= cap && *peak > 0.0, "{name}: {peak} of {cap}");
    }
    assert!(r.evictions > 0 && r.writebacks > 0);
    // StarPU's default limit: 90 % of attila's C2050 memory in whole MiB, 2,763 MiB (notes 9).
    let r = attila(9600, "dmdas", &[]).unwrap();
    assert_eq!(r.memory[1].1, 2763.0 * 1048576.0);
}

#[test]
fn dmdas_beats_eager_on_attila() {
    // The paper's point: data-aware, priority-sorted scheduling outperforms a central FIFO.
    let eager = attila(19200, "eager", &[]).unwrap();
    let dmdas = attila(19200, "dmdas", &[]).unwrap();
    assert!(
        dmdas.gflops > eager.gflops,
        "dmdas {} eager {}",
        dmdas.gflops,
        eager.gflops
    );
}

#[test]
fn priorities_are_capped_into_the_schedulers_range() {
    // One CPU worker, three 1 s tasks submitted a, b, c with priorities 0, 1, 2, all queued
    // before the worker wakes. StarPU caps each task's priority into its context's range at
    // submission: prio widens an unset end to the whole int range (c, b, a), and
    // STARPU_MAX_PRIO=0 caps every one to 0 (FIFO: a, b, c). eager keeps [0, 0].
    let dag = r#"Dag(handles: [], tasks: [(name: "a", codelet: "k", priority: 0),
        (name: "b", codelet: "k", priority: 1), (name: "c", codelet: "k", priority: 2)])"#;
    let models = r#"models: {"k": CodeletModel(cpu: Some(Constant("1s")))}"#;
    let order = |runtime: &str| {
        let r = run(&node(0, 1), dag, runtime, QUIET).unwrap();
        let mut by_start: Vec<usize> = (0..3).collect();
        by_start.sort_by(|&x, &y| r.task_times[x].0.total_cmp(&r.task_times[y].0));
        by_start
    };
    assert_eq!(order(&format!("scheduler: prio, {models}")), [2, 1, 0]);
    assert_eq!(
        order(&format!("scheduler: prio, max_priority: 0, {models}")),
        [0, 1, 2]
    );
    assert_eq!(order(&format!("scheduler: eager, {models}")), [0, 1, 2]);
    let e = run(
        &node(0, 1),
        dag,
        &format!("scheduler: prio, min_priority: 3, max_priority: 2, {models}"),
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("runtime.min_priority (3) is above runtime.max_priority (2)"),
        "{e}"
    );
}

#[test]
fn bad_task_input_gets_clear_errors() {
    let models = r#"models: {"k": CodeletModel(cpu: Some(Constant("1ms")))}"#;
    // A cycle of explicit dependencies.
    let dag = r#"Dag(handles: [], tasks: [(name: "a", codelet: "k", deps: ["b"]), (name: "b", codelet: "k", deps: ["a"])])"#;
    let e = run(&node(0, 1), dag, models, &[]).unwrap_err().to_string();
    assert!(e.contains("cycle") && e.contains("a -> b -> a"), "{e}");
    // A codelet nobody can run.
    let dag = r#"Dag(handles: [], tasks: [(name: "a", codelet: "nope")])"#;
    let e = run(&node(0, 1), dag, models, &[]).unwrap_err().to_string();
    assert!(e.contains("codelet `nope` has no performance model"), "{e}");
    // A task whose data exceed the memory of the only GPU, with no CPU worker.
    let e = attila(
        9600,
        "dmdas",
        &[
            "platform.ncpu=0".into(),
            "platform.limit_cuda_mem_mb=8".into(),
        ],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("cannot run") && e.contains("do not fit"), "{e}");
}

#[test]
fn an_uncalibrated_worker_gets_the_task_to_calibrate() {
    // One POTRF (n = tile = 960) on attila with dmda. Calibrated models: the fastest GPU,
    // CUDA0 (44.3 ms against 45.6 and 48.3). With CUDA1's history entry cut to 3 samples
    // (under STARPU_CALIBRATE_MINIMUM = 10), StarPU's greedy rule hands the task to the first
    // uncalibrated worker: CUDA1 (notes 1.5, "forced" choice).
    let tmp = tempfile::tempdir().unwrap();
    let machines = common::repo().join("scenarios/machines");
    let copy = |rel: &str| {
        let to = tmp.path().join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(machines.join(rel), &to).unwrap();
    };
    for ext in ["platform.xml", "bandwidth", "latency"] {
        copy(&format!("bus/attila.{ext}"));
    }
    let model =
        std::fs::read_to_string(machines.join("codelets/45/chol_model_potrf.attila")).unwrap();
    let run_with = |model: &str| {
        let dir = tmp.path().join("codelets/45");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("chol_model_potrf.attila"), model).unwrap();
        let text = r#"Scenario(name: "t",
            platform: StarpuMachine(dir: ".", hostname: "attila", ncuda: 3, ncpu: 8),
            workload: Cholesky(n: 960, tile: 960),
            runtime: RuntimeSpec(scheduler: dmda))"#;
        let mut s = parse_scenario(text, "t", tmp.path(), &[]).unwrap();
        s.output = OutputSpec::tables_only();
        let (app, _) = simulate(&s, &RunOptions::default()).unwrap();
        app.world().resource::<RuntimeReport>().task_times[0].2
    };
    assert_eq!(run_with(&model), 0, "calibrated: CUDA0");
    // The third 617e5fe6 entry is cuda1's (combs in file order: cpu0, cuda0, cuda1, cuda2).
    let mut seen = 0;
    let cut: String = model
        .lines()
        .map(|l| {
            if l.starts_with("617e5fe6") {
                seen += 1;
                if seen == 3 {
                    let mut f: Vec<&str> = l.split_whitespace().collect();
                    *f.last_mut().unwrap() = "3";
                    return f.join("\t");
                }
            }
            l.to_string()
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(seen, 4);
    assert_eq!(run_with(&cut), 1, "uncalibrated CUDA1 takes it");
}

#[test]
fn tidying_writes_dirty_buffers_back_at_idle_level_so_evictions_need_fewer() {
    // LU (its wont_use hints cover the panel tiles only, so the trailing tiles the GEMMs
    // write stay dirty; Cholesky's hints keep buffers clean) on the GPUs alone with 256 MB
    // per GPU (73 tiles of 3.5 MiB) for 1.4 GB of tiles under eager (no prefetch): most
    // buffers hold tiles written on the GPU. With StarPU's tidying (a GPU of 73 buffers
    // tidies when fewer than 73 * 5 / 100 = 3 are clean, until 73 * 10 / 100 = 7 are),
    // dirty buffers go back to RAM at idle level and evictions find clean victims: fewer
    // synchronous write-backs for the same work (628 against 1,160 today).
    let base = [
        "platform.limit_cuda_mem_mb=256".to_string(),
        "platform.ncpu=0".into(),
        "switches.memory_tidying=false".into(),
    ];
    let tidy = [
        "platform.limit_cuda_mem_mb=256".to_string(),
        "platform.ncpu=0".into(),
    ];
    let off = attila_app("lu", 19200, "eager", &base).unwrap();
    let on = attila_app("lu", 19200, "eager", &tidy).unwrap();
    assert_eq!(off.tidy_writebacks, 0);
    assert!(on.tidy_writebacks > 0);
    assert!(
        on.writebacks < off.writebacks,
        "{} vs {}",
        on.writebacks,
        off.writebacks
    );
    assert_eq!(on.tasks, off.tasks);
    for (name, cap, peak) in &on.memory[1..] {
        assert!(peak <= cap, "{name}: {peak} of {cap}");
    }
}

#[test]
fn perfmodel_noise_is_seeded() {
    // Task times drawn from the models' normal distributions: the same seed gives the same
    // run, another seed another one; without the switch, the means.
    let run_seed = |seed: u64, noise: bool| {
        let mut set = vec![format!("seed={seed}"), "workload.n=9600".to_string()];
        if noise {
            set.push("switches.perfmodel_noise=true".into());
        }
        let mut s =
            load_scenario(&common::repo().join("scenarios/cholesky-attila.ron"), &set).unwrap();
        s.output = OutputSpec::tables_only();
        let (app, _) = simulate(&s, &RunOptions::default()).unwrap();
        app.world().resource::<RuntimeReport>().makespan_s
    };
    assert_eq!(run_seed(1, true), run_seed(1, true));
    assert_ne!(run_seed(1, true), run_seed(2, true));
    assert_ne!(run_seed(1, true), run_seed(1, false));
    assert_eq!(run_seed(1, false), run_seed(2, false));
}

#[test]
fn a_fetch_overtakes_queued_prefetches() {
    // dmdas pushes t0..t3 (priorities 1..4, each reading its own 0.1 GB tile: 10 ms on the
    // 10 GB/s up link) to the only GPU at t = 0 and prefetches h0..h3 in that order. StarPU
    // starts prefetches only while fewer than 2 requests are in flight on a link (notes 2.4),
    // so h2 and h3 wait in the request list. The GPU pops t3 first (highest priority); its
    // fetch raises h3 to FETCH level, which starts at once (fewer than 5 in flight) and runs
    // after h0 and h1 (one copy at a time per pair): h3 lands at 30 ms, t3 runs 30-31 ms.
    // Served in request order (no levels), h3 would land last, at 40 ms. Then h2 (40 ms),
    // t2 40-41, t1 41-42, t0 42-43 ms.
    let handles = (0..4)
        .map(|i| format!(r#"(name: "h{i}", size: 1e8)"#))
        .collect::<Vec<_>>()
        .join(", ");
    let tasks = (0..4)
        .map(|i| {
            format!(
                r#"(name: "t{i}", codelet: "k", priority: {}, accesses: [("h{i}", R)])"#,
                i + 1
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let dag = format!("Dag(handles: [{handles}], tasks: [{tasks}])");
    let models = r#"models: {"k": CodeletModel(cuda: Some(Constant("1ms")))}"#;
    let r = run(
        &node(1, 0),
        &dag,
        &format!("scheduler: dmdas, {models}"),
        QUIET,
    )
    .unwrap();
    let starts: Vec<f64> = r.task_times.iter().map(|t| t.0).collect();
    for (got, want) in starts.iter().zip([0.042, 0.041, 0.040, 0.030]) {
        assert!((got - want).abs() < 1e-9, "starts {starts:?}");
    }
    assert_makespan(&r, 0.043);
}

#[test]
fn a_prefetch_evicts_data_no_queued_task_needs() {
    // One GPU (2 GiB: StarPU's cap 1,843 MiB), one task at a time. dmda prefetches a (1 GB,
    // 0.1 s at 10 GB/s) for t0 and b (0.8 GB) for t1 at t = 0: b lands at 0.18 s. The idle
    // GPU pops t0 at once; a's request pins a when it lands at 0.1 s, and t0, its data all
    // there, takes that pin off (StarPU's fetch tail) and runs 0.1-0.101 s. It releases t2,
    // whose prefetch of c (0.8 GB) finds the GPU full. As in StarPU, a prefetch may evict an
    // idle replica no queued task pinned (a, done with), so c follows b on the link and lands
    // at 0.26 s, while t1 runs 0.18-0.28 s; t2 runs 0.28-0.281 s. Had t0's pop taken the pin
    // off before a landed, a would stay pinned and c wait for t2's fetch: 0.361 s.
    let dag = r#"Dag(handles: [(name: "a", size: 1e9), (name: "b", size: 8e8),
                                (name: "c", size: 8e8)], tasks: [
        (name: "t0", codelet: "k", accesses: [("a", R)]),
        (name: "t1", codelet: "long", accesses: [("b", R)]),
        (name: "t2", codelet: "k", accesses: [("c", R)], deps: ["t0"])])"#;
    let models = r#"models: {"k": CodeletModel(cuda: Some(Constant("1ms"))),
                             "long": CodeletModel(cuda: Some(Constant("100ms")))}"#;
    let r = run(
        &node(1, 0),
        dag,
        &format!("scheduler: dmda, cuda_pipeline: 1, {models}"),
        QUIET,
    )
    .unwrap();
    assert!(
        (r.task_times[2].0 - 0.28).abs() < 1e-9,
        "{:?}",
        r.task_times
    );
    assert_makespan(&r, 0.281);
    assert_eq!(r.evictions, 1);
}

#[test]
fn starpu_trace_files_describe_the_run() {
    // tasks.rec, data.rec and dag.dot as starpu_fxt_tool writes them (notes 4.1-4.3): one
    // record per task (Cholesky nt = 5: 5 POTRF + 10 TRSM + 10 SYRK + 10 GEMM = 35) with
    // times in ms; every DependsOn job ended before the task started; one data record per
    // tile (15); the DOT file has one edge per dependency.
    let r = run(
        &node(2, 2),
        "Cholesky(n: 4800, tile: 960)",
        r#"scheduler: dmdas, models: {
            "chol_model_potrf": CodeletModel(cpu: Some(Constant("5ms")), cuda: Some(Constant("2ms"))),
            "chol_model_trsm": CodeletModel(cpu: Some(Constant("5ms")), cuda: Some(Constant("1ms"))),
            "chol_model_syrk": CodeletModel(cpu: Some(Constant("5ms")), cuda: Some(Constant("1ms"))),
            "chol_model_gemm": CodeletModel(cpu: Some(Constant("9ms")), cuda: Some(Constant("1ms")))}"#,
        QUIET,
    )
    .unwrap();
    let text = String::from_utf8(hetsim::output::starpu::tasks_rec(&r)).unwrap();
    let records: Vec<std::collections::HashMap<&str, &str>> = text
        .split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|b| b.lines().filter_map(|l| l.split_once(": ")).collect())
        .collect();
    assert_eq!(records.len(), 35);
    let times: std::collections::HashMap<&str, (f64, f64)> = records
        .iter()
        .map(|rec| {
            let f = |k: &str| rec[k].parse::<f64>().unwrap();
            (rec["JobId"], (f("StartTime"), f("EndTime")))
        })
        .collect();
    let mut edges = 0;
    for rec in &records {
        assert!(["potrf", "trsm", "syrk", "gemm"].contains(&rec["Name"]));
        let start = times[rec["JobId"]].0;
        for dep in rec.get("DependsOn").map_or("", |d| d).split_whitespace() {
            assert!(
                times[dep].1 <= start + 1e-9,
                "{dep} ends after {}",
                rec["JobId"]
            );
            edges += 1;
        }
        let n = rec["Handles"].split(' ').count();
        assert_eq!(rec["Modes"].split(' ').count(), n);
        assert_eq!(
            rec["Sizes"].split(' ').collect::<Vec<_>>(),
            vec!["3686400"; n]
        );
    }
    // The last task ends at the makespan (ms).
    let last = times.values().map(|t| t.1).fold(0.0, f64::max);
    assert!((last - r.makespan_s * 1e3).abs() < 1e-6);
    let data = String::from_utf8(hetsim::output::starpu::data_rec(&r)).unwrap();
    assert_eq!(data.matches("Handle: ").count(), 15);
    let dot = String::from_utf8(hetsim::output::starpu::dag_dot(&r)).unwrap();
    assert_eq!(dot.matches("->").count(), edges);
    assert_eq!(dot.matches("style=filled").count(), 35);
}

#[test]
fn wont_use_hints_write_dirty_tiles_back_when_the_link_is_idle() {
    // Cholesky nt = 5 on one GPU and no CPU: every tile is written on the GPU, and the
    // example's starpu_data_wont_use hints cover every tile (the diagonal one after its
    // TRSMs: 5; a panel tile after its SYRK and GEMMs: 10). StarPU answers each with an
    // IDLEFETCH write-back of the dirty copy to RAM (notes 2.7), started when nothing else is
    // in flight on the GPU-to-RAM link: 15 tiles of 3,686,400 B go back, with no memory
    // pressure and no CPU reader.
    let r = run(
        &node(1, 0),
        "Cholesky(n: 4800, tile: 960)",
        r#"scheduler: dmdas, models: {
            "chol_model_potrf": CodeletModel(cuda: Some(Constant("2ms"))),
            "chol_model_trsm": CodeletModel(cuda: Some(Constant("1ms"))),
            "chol_model_syrk": CodeletModel(cuda: Some(Constant("1ms"))),
            "chol_model_gemm": CodeletModel(cuda: Some(Constant("1ms")))}"#,
        QUIET,
    )
    .unwrap();
    assert_eq!(r.bytes_d2h, 15.0 * 3686400.0);
    assert_eq!((r.evictions, r.writebacks), (0, 0));
}

#[test]
fn a_driver_writing_a_victim_back_handles_no_task_end_meanwhile() {
    // One GPU of 2 GiB (1,843 MiB usable), one CPU. a writes x (1.2 GB) on the GPU (0-10 ms);
    // c (100 ms) and b then share the GPU's pipeline of two. c's small z fits and c runs
    // from 10 ms; b's y (1 GB) does not: x, dirty, is written back (1.2 GB at 10 GB/s,
    // 10-130 ms), synchronously as StarPU's transfer_subtree_to_node does, so the GPU's
    // driver handles c's end (110 ms) only at 130 ms, and d (CPU, 100 ms) starts then:
    // 230 ms, where a driver free to handle c's end at once would finish at 210 ms.
    let dag = r#"Dag(handles: [(name: "x", size: 1.2e9), (name: "y", size: 1e9),
            (name: "z", size: 1e6)], tasks: [
        (name: "a", codelet: "k", accesses: [("x", W)]),
        (name: "c", codelet: "long", accesses: [("z", W)], deps: ["a"]),
        (name: "b", codelet: "k", accesses: [("y", W)], deps: ["a"]),
        (name: "d", codelet: "cpu", accesses: [], deps: ["c"])])"#;
    let models = r#"models: {"k": CodeletModel(cuda: Some(Constant("10ms"))),
        "long": CodeletModel(cuda: Some(Constant("100ms"))),
        "cpu": CodeletModel(cpu: Some(Constant("100ms")))}"#;
    let r = dmda(&node(1, 1), dag, models, QUIET);
    assert_makespan(&r, 0.230);
    assert_eq!((r.evictions, r.writebacks), (1, 1));
}

#[test]
fn a_driver_makes_its_progress_before_it_pops_and_waits_for_the_write_back_it_starts() {
    // StarPU's driver loop handles a task's end, then makes its progress through its node's
    // request lists, and only then pops, whether or not the end released anything. One GPU
    // of 2 GiB (1,843 MiB usable, a pipeline of one) and one CPU. a writes x (1.2 GB) on the
    // GPU (0-10 ms); p, queued behind it, has no data; c (CPU, 0-5 ms) releases q, whose
    // prefetch of y (1 GB) finds no room while a holds x. At a's end the GPU's driver first
    // handles y's prefetch, which evicts x: x is written back (10-130 ms) by that driver,
    // which waits for it, so p is popped only then (130-140 ms), y comes 130-230 ms and q
    // runs 230-240 ms. Popping before the progress would start p at 10 ms.
    let dag = r#"Dag(handles: [(name: "x", size: 1.2e9), (name: "y", size: 1e9)], tasks: [
        (name: "a", codelet: "k", accesses: [("x", W)]),
        (name: "p", codelet: "k"),
        (name: "c", codelet: "cpu"),
        (name: "q", codelet: "k", accesses: [("y", R)], deps: ["c"])])"#;
    let models = r#"models: {"k": CodeletModel(cuda: Some(Constant("10ms"))),
        "cpu": CodeletModel(cpu: Some(Constant("5ms")))}"#;
    let runtime = format!("scheduler: dmda, cuda_pipeline: 1, {models}");
    let r = run(&node(1, 1), dag, &runtime, QUIET).unwrap();
    assert_starts(
        &r,
        &[(0.0, 0), (0.130, 0), (0.0, 1), (0.230, 0)],
        "progress first",
    );
    assert_makespan(&r, 0.240);
    assert_eq!((r.evictions, r.writebacks), (1, 1));
}

#[test]
fn a_kernel_launched_before_the_driver_waits_still_runs() {
    // As above, with a pipeline of three and no CPU: c (100 ms) runs from 10 ms and e
    // (10 ms), its data already there, is launched behind it; b's allocation makes the
    // driver wait for x's write-back (10-130 ms). The GPU goes on with e at 110 ms (ends at
    // 120 ms, handled at 130 ms), and b runs once y fits: 130-140 ms.
    let dag = r#"Dag(handles: [(name: "x", size: 1.2e9), (name: "y", size: 1e9),
            (name: "z", size: 1e6), (name: "w", size: 1e6)], tasks: [
        (name: "a", codelet: "k", accesses: [("x", W)]),
        (name: "c", codelet: "long", accesses: [("z", W)], deps: ["a"]),
        (name: "e", codelet: "k", accesses: [("w", W)], deps: ["a"]),
        (name: "b", codelet: "k", accesses: [("y", W)], deps: ["a"])])"#;
    let models = r#"models: {"k": CodeletModel(cuda: Some(Constant("10ms"))),
        "long": CodeletModel(cuda: Some(Constant("100ms")))}"#;
    let runtime = format!("scheduler: dmda, cuda_pipeline: 3, {models}");
    let r = run(&node(1, 0), dag, &runtime, QUIET).unwrap();
    assert_makespan(&r, 0.140);
    assert_eq!((r.evictions, r.writebacks), (1, 1));
}

#[test]
fn a_synchronous_cuda_codelet_blocks_its_driver() {
    // StarPU's CUDA driver runs a codelet without STARPU_CUDA_ASYNC itself (driver_cuda.c):
    // it pops nothing more and progresses no copy until the kernel ends, and the kernel
    // pays no 10 us of queueing (simgrid.c sleeps only for asynchronous ones).
    let sync = r#""s": CodeletModel(cuda: Some(Constant("10ms")), cuda_sync: true)"#;
    let not_sync = r#""s": CodeletModel(cuda: Some(Constant("10ms")))"#;
    // One GPU under eager: s (10 ms) then a, which reads x (100 MB, 10 ms over the GPU's
    // 10 GB/s link). Asynchronous, s leaves the pipeline's second slot free: a is popped at
    // 0 and fetched while s runs (ends at 20 ms). Synchronous, a is popped at 10 ms, fetched
    // until 20 ms and ends at 30 ms.
    let dag = r#"Dag(handles: [(name: "x", size: 1e8)], tasks: [
        (name: "s", codelet: "s"),
        (name: "a", codelet: "k", accesses: [("x", R)])])"#;
    let k = r#""k": CodeletModel(cuda: Some(Constant("10ms")))"#;
    for (model, makespan) in [(not_sync, 0.020), (sync, 0.030)] {
        let runtime = format!("scheduler: eager, models: {{{model}, {k}}}");
        let r = run(&node(1, 0), dag, &runtime, QUIET).unwrap();
        assert_makespan(&r, makespan);
    }
    // With the runtime's overheads, s lasts exactly its 10 ms and a its 10 ms + 10 us.
    let runtime = format!("scheduler: eager, models: {{{sync}, {k}}}");
    let r = run(&node(1, 0), dag, &runtime, &[]).unwrap();
    let length = |t: usize| r.task_times[t].1 - r.task_times[t].0;
    assert!((length(0) - 0.010).abs() < 1e-9, "{:?}", r.task_times);
    assert!((length(1) - 0.01001).abs() < 1e-9, "{:?}", r.task_times);
    // One GPU and one CPU under dmda: s runs on the GPU (0-10 ms) while c writes y (100 MB)
    // on the CPU (0-5 ms); b, on the GPU, reads y. Its copy into the GPU, handled by the
    // GPU's driver, starts at 5 ms (b runs 15-25 ms), or, while that driver runs s
    // itself, at 10 ms (b runs 20-30 ms).
    let dag = r#"Dag(handles: [(name: "y", size: 1e8)], tasks: [
        (name: "s", codelet: "s"),
        (name: "c", codelet: "c", accesses: [("y", W)]),
        (name: "b", codelet: "k", accesses: [("y", R)], deps: ["c"])])"#;
    let c = r#""c": CodeletModel(cpu: Some(Constant("5ms")))"#;
    for (model, makespan) in [(not_sync, 0.025), (sync, 0.030)] {
        let r = dmda(
            &node(1, 1),
            dag,
            &format!("models: {{{model}, {k}, {c}}}"),
            QUIET,
        );
        assert_makespan(&r, makespan);
    }
}

#[test]
fn a_kernel_queued_behind_a_running_one_starts_when_it_ends() {
    // StarPU-SimGrid's CUDA driver sleeps 10 us queueing an asynchronous kernel once its
    // data are there, then the GPU runs the queue back to back (simgrid.c: a task queued
    // behind a running one starts at its end). One GPU, pipeline of 2, a and b (10 ms, no
    // data) pushed at 1 and 2 us: a runs 11 us-10.011 ms, b from 10.011 ms to 20.011 ms (the
    // oracle's log: consecutive GEMMs on one GPU start exactly one model length apart).
    let dag = r#"Dag(handles: [], tasks: [
        (name: "a", codelet: "k"),
        (name: "b", codelet: "k")])"#;
    let models = r#"models: {"k": CodeletModel(cuda: Some(Constant("10ms")))}"#;
    let r = dmda(&node(1, 0), dag, models, &[]);
    assert_makespan(&r, 0.020011);
}
