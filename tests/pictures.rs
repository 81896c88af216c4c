//! Every kind of picture hetsim draws, checked on its SVG text: each text element lies inside
//! the canvas (nothing clipped, rotated axis titles included), numbers are written plainly
//! (no `200.0`, no `500m` on a seconds axis), and each axis says its unit.

mod common;

use common::{hetsim, ok, repo};
use std::path::Path;

/// One `<text>` element: where it is anchored, its size, anchor, rotation and content.
#[derive(Debug)]
struct Text {
    x: f64,
    y: f64,
    size: f64,
    anchor: String,
    /// Vertical placement: `0.76em` hangs below y, `0.5ex` centres on it, none sits on it.
    dy: String,
    rotated: bool,
    content: String,
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    let end = tag[at..].find('"')?;
    Some(tag[at..at + end].to_string())
}

/// The canvas size and the text elements of an SVG written by hetsim.
fn texts(svg: &str) -> ((f64, f64), Vec<Text>) {
    let head = &svg[..svg.find('>').unwrap()];
    let num = |t: &str, n: &str| {
        attr(t, n)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("`{n}` of {t}"))
    };
    let size = (num(head, "width"), num(head, "height"));
    let mut out = Vec::new();
    let mut rest = svg;
    while let Some(i) = rest.find("<text") {
        let tag_end = i + rest[i..].find('>').unwrap();
        let tag = &rest[i..tag_end];
        let close = tag_end + rest[tag_end..].find("</text>").unwrap();
        let content = rest[tag_end + 1..close]
            .trim()
            .replace("&apos;", "'")
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">");
        out.push(Text {
            x: num(tag, "x"),
            y: num(tag, "y"),
            size: num(tag, "font-size"),
            anchor: attr(tag, "text-anchor").unwrap_or_else(|| "start".into()),
            dy: attr(tag, "dy").unwrap_or_default(),
            rotated: tag.contains("rotate("),
            content,
        });
        rest = &rest[close..];
    }
    (size, out)
}

/// The box a text covers, with about 0.6 em per character (a generous width for the
/// sans-serif font) and one em of height; rotated titles run up the page.
fn inside(t: &Text, (w, h): (f64, f64)) -> bool {
    let len = 0.6 * t.size * t.content.chars().count() as f64;
    let (before, after) = match t.anchor.as_str() {
        "middle" => (len / 2.0, len / 2.0),
        "end" => (len, 0.0),
        _ => (0.0, len),
    };
    // Descenders reach about 0.2 em under the baseline.
    let (up, down) = match t.dy.as_str() {
        d if d.ends_with("em") => (0.0, t.size),
        "0.5ex" => (t.size / 2.0, t.size / 2.0),
        "-0.5ex" => (t.size * 1.25, 0.0),
        _ => (t.size, 0.2 * t.size),
    };
    let (x0, x1, y0, y1) = if t.rotated {
        (
            t.x - up.max(down),
            t.x + up.max(down),
            t.y - after,
            t.y + before,
        )
    } else {
        (t.x - before, t.x + after, t.y - up, t.y + down)
    };
    x0 >= -1.0 && y0 >= -1.0 && x1 <= w + 1.0 && y1 <= h + 1.0
}

/// Checks one picture: every text inside, no `N.0` tick labels, no milli prefix on a
/// number; returns its texts for the caller's own checks.
fn check(path: &Path) -> Vec<String> {
    let svg = std::fs::read_to_string(path).unwrap();
    let (size, texts) = texts(&svg);
    assert!(!texts.is_empty(), "{}: no text", path.display());
    for t in &texts {
        assert!(
            inside(t, size),
            "{}: `{}` at ({}, {}) runs outside the {}x{} canvas",
            path.display(),
            t.content,
            t.x,
            t.y,
            size.0,
            size.1
        );
        let c = t.content.trim_end_matches(" %");
        let number = c.parse::<f64>().is_ok();
        assert!(
            !(number && c.contains('.') && c.ends_with('0')),
            "{}: tick `{}` has trailing zeros",
            path.display(),
            t.content
        );
        let milli = c
            .strip_suffix('m')
            .is_some_and(|n| n.parse::<f64>().is_ok());
        assert!(
            !milli,
            "{}: `{}` reads as minutes or metres",
            path.display(),
            t.content
        );
    }
    texts.into_iter().map(|t| t.content).collect()
}

fn has(texts: &[String], part: &str) -> bool {
    texts.iter().any(|t| t.contains(part))
}

#[test]
fn run_pictures_keep_their_text_inside_and_say_their_units() {
    let tmp = tempfile::tempdir().unwrap();
    let scenarios = repo().join("scenarios");
    let halo = scenarios.join("whatif/halo.ron");
    ok(&hetsim(
        &["run", halo.to_str().unwrap(), "--out", "halo", "-q"],
        tmp.path(),
    ));
    let timeline = check(&tmp.path().join("halo/timeline.svg"));
    assert!(has(&timeline, "simulated time (ms)"));
    assert!(has(&timeline, "(by mean utilisation)"), "{timeline:?}");
    let links = check(&tmp.path().join("halo/link_utilisation.svg"));
    assert!(has(&links, "100 %") && has(&links, "% of each link's bandwidth in use"));
    assert!(has(&links, "(by mean utilisation)"));

    let chol = scenarios.join("whatif/cholesky.ron");
    ok(&hetsim(
        &["run", chol.to_str().unwrap(), "--out", "chol", "-q"],
        tmp.path(),
    ));
    check(&tmp.path().join("chol/timeline.svg"));

    ok(&hetsim(
        &["run", "--out", "whatif", "-q", "--disable", "contention"],
        tmp.path(),
    ));
    let cmp = check(&tmp.path().join("whatif/comparison.svg"));
    assert!(has(&cmp, "HostCopy: --disable gpudirect"), "{cmp:?}");
    assert!(has(&cmp, "switched off in every run: contention"));
}

#[test]
fn benchmark_and_study_pictures_keep_their_text_inside_and_say_their_units() {
    let tmp = tempfile::tempdir().unwrap();
    let lassen = repo().join("scenarios/platforms/lassen.ron");
    ok(&hetsim(
        &[
            "p2p",
            "--platform",
            lassen.to_str().unwrap(),
            "--from",
            "node[0].gpu[0]",
            "--to",
            "node[1].gpu[0]",
            "--out",
            "p2p",
        ],
        tmp.path(),
    ));
    let lat = check(&tmp.path().join("p2p/p2p_latency.svg"));
    // The lowest latencies (about 5 us) lie under the first decade: 5 is labelled.
    assert!(lat.iter().any(|t| t == "5"), "{lat:?}");
    let dgx = repo().join("scenarios/platforms/dgx-a100.ron");
    ok(&hetsim(
        &[
            "nccl-tests",
            "--platform",
            dgx.to_str().unwrap(),
            "-e",
            "1M",
            "--out",
            "nccl",
        ],
        tmp.path(),
    ));
    check(&tmp.path().join("nccl/nccl_busbw.svg"));

    let studies = repo().join("scenarios/studies");
    for (study, picture, unit) in [
        ("nccl-scaling.ron", "cuda_nccl_time_s_max.svg", "(ms)"),
        (
            "cholesky-ablations.ron",
            "runtime_makespan_s.svg",
            "makespan_s (s",
        ),
        ("cholesky-ablations.ron", "ablation.svg", "(%)"),
    ] {
        let out = study.trim_end_matches(".ron");
        ok(&hetsim(
            &[
                "study",
                studies.join(study).to_str().unwrap(),
                "--out",
                out,
                "-q",
            ],
            tmp.path(),
        ));
        let texts = check(&tmp.path().join(out).join(picture));
        assert!(has(&texts, unit), "{study} {picture}: {texts:?}");
    }
    let scaling = check(&tmp.path().join("nccl-scaling/cuda_nccl_time_s_max.svg"));
    // NCCL's choice is ring or tree at every size: those lines say they run on it.
    assert!(has(&scaling, "(on nccl-choice at "), "{scaling:?}");
}

/// A study with a failed run and a single point: the failure is marked (the note says how)
/// and the values keep the unit they were given in (Gb/s, not B/s).
#[test]
fn a_failed_run_is_marked_and_given_units_are_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = repo().join("scenarios/demo.ron");
    let study = format!(
        r#"Study(
    name: "nic",
    base: "{}",
    params: [Param(path: "platform.node.nic.bandwidth", name: "nic",
                   values: List(["50Gb/s", "0Gb/s", "100Gb/s", "200Gb/s"]))],
    variants: [Variant(name: "base")],
    metrics: ["sim_time_s"],
)"#,
        demo.display()
    );
    std::fs::write(tmp.path().join("nic.ron"), study).unwrap();
    let o = hetsim(&["study", "nic.ron", "--out", "nic", "-q"], tmp.path());
    assert_eq!(o.status.code(), Some(1), "one run fails: the study says so");
    let texts = check(&tmp.path().join("nic/sim_time_s.svg"));
    assert!(has(&texts, "nic (Gb/s)"), "{texts:?}");
    assert!(has(&texts, "sim_time_s (ms)"));
    assert!(has(&texts, "a cross on the x axis marks a run that failed"));
    for tick in ["50", "100", "200"] {
        assert!(texts.iter().any(|t| t == tick), "tick {tick}: {texts:?}");
    }
}
