//! Every StarPU calibration file of the reference machines (attila, mirage, hannibal, idgraf,
//! sirocco; copied from ../shared/reference/starpu into tests/data/starpu) parses: codelet
//! models of format 45 (symbolic links stored as one-line files followed), the bus
//! bandwidth, latency, affinity and config files, the SimGrid platform files (versions 3 and
//! 4) and the multiple-regression sample dumps: every file of the reference set is read.

use std::path::Path;

use hetsim::schema::starpu::{bus, perfmodel, platform, resolve_link};

fn files(dir: &str) -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/starpu");
    let mut out = Vec::new();
    for top in ["machines", "sampling"] {
        let d = root.join(top).join(dir);
        let mut v: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        v.sort();
        out.extend(v);
    }
    out
}

#[test]
fn every_codelet_model_parses() {
    let all = files("codelets/45");
    assert!(all.len() > 200, "{} files", all.len());
    let mut with_history = 0;
    for f in &all {
        let real = resolve_link(f).unwrap();
        let text = std::fs::read_to_string(&real).unwrap();
        let m = perfmodel::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", real.display()));
        if m.combs
            .iter()
            .flat_map(|c| &c.impls)
            .any(|i| !i.history.is_empty())
        {
            with_history += 1;
        }
    }
    assert!(
        with_history > 100,
        "{with_history} models with measurements"
    );
}

#[test]
fn the_attila_gemm_model_has_cuda_measurements() {
    // chol_model_gemm.attila: tiles of 960 x 960 doubles (7,372,800 B) measured on the GPUs.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/starpu/machines/codelets/45");
    let text = std::fs::read_to_string(resolve_link(&root.join("chol_model_gemm.attila")).unwrap())
        .unwrap();
    let m = perfmodel::parse(&text).unwrap();
    let e = m
        .nearest(perfmodel::DeviceKind::Cuda, 7_372_800.0)
        .expect("a CUDA entry");
    assert!(e.mean_us > 0.0 && e.n > 0, "{e:?}");
}

#[test]
fn every_bus_file_parses() {
    let mut seen = 0;
    for f in files("bus") {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(resolve_link(&f).unwrap()).unwrap();
        let result = if name.ends_with(".bandwidth") || name.ends_with(".latency") {
            bus::parse_matrix(&text).map(|m| assert!(m.nodes() >= 1, "{name}"))
        } else if name.ends_with(".affinity") {
            bus::parse_affinity(&text).map(|_| ())
        } else if name.ends_with(".config") {
            bus::parse_config(&text).map(|_| ())
        } else if name.ends_with(".xml") {
            platform::parse(&text).map(|p| {
                // The CPU-only `vm` sample has hosts but no routes.
                assert!(!p.hosts.is_empty(), "{name}");
            })
        } else {
            panic!("an unexpected bus file {name}");
        };
        result.unwrap_or_else(|e| panic!("{name}: {e}"));
        seen += 1;
    }
    assert!(seen >= 40, "{seen} bus files");
}

#[test]
fn the_sample_dumps_parse() {
    let all = files("codelets/tmp");
    assert!(!all.is_empty());
    for f in all {
        let text = std::fs::read_to_string(&f).unwrap();
        let s = perfmodel::parse_samples(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert_eq!(s.columns[0], "Duration");
    }
}

#[test]
fn the_attila_platform_has_three_gpus_with_calibrated_links() {
    // attila: 12 CPU cores and 3 CUDA devices (attila.config); RAM -> CUDA0 at about 6 GB/s
    // (attila.bandwidth: 6008.9 MB/s), the same figure in both files.
    let bus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/starpu/machines/bus");
    let cfg =
        bus::parse_config(&std::fs::read_to_string(bus.join("attila.config")).unwrap()).unwrap();
    assert_eq!((cfg.cpus, cfg.cuda), (12, 3));
    let p = platform::parse(&std::fs::read_to_string(bus.join("attila.platform.v4.xml")).unwrap())
        .unwrap();
    assert_eq!(
        p.hosts.iter().filter(|h| h.id.starts_with("CUDA")).count(),
        3
    );
    let link = p.links.iter().find(|l| l.id == "RAM-CUDA0").unwrap();
    assert!(
        (link.bandwidth / 1e6 - 6008.66).abs() < 0.01,
        "{}",
        link.bandwidth
    );
}

#[test]
fn a_history_model_returns_the_files_mean_for_a_matching_footprint() {
    // chol_model_gemm.attila, GEMM on three 960 x 960 single-precision tiles: footprint
    // 24c84a50 (StarPU's CRC of the three matrix handles), 11,059,200 bytes. The file says
    // cpu0: mean 84,075.59 us over 1,665 samples; cuda0: 2,795.670 us over 6,503 samples.
    use hetsim::schema::starpu::footprint;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/starpu/machines/codelets/45");
    let text = std::fs::read_to_string(resolve_link(&root.join("chol_model_gemm.attila")).unwrap())
        .unwrap();
    let m = perfmodel::parse(&text).unwrap();
    let tile = footprint::matrix(960, 960);
    let fp = footprint::task([tile, tile, tile]);
    assert_eq!(fp, 0x24c8_4a50);
    let cpu = m.history(perfmodel::DeviceKind::Cpu, 0, fp).unwrap();
    assert_eq!(
        (cpu.mean_us, cpu.n, cpu.size),
        (8.407559e4, 1665, 11_059_200.0)
    );
    let gpu = m.history(perfmodel::DeviceKind::Cuda, 0, fp).unwrap();
    assert_eq!((gpu.mean_us, gpu.n), (2.795670e3, 6503));
    // A footprint never measured: no entry (the runtime treats it as uncalibrated).
    assert!(
        m.history(perfmodel::DeviceKind::Cuda, 0, 0xdead_beef)
            .is_none()
    );
}
