//! Pictures with plotters, pure Rust: the DejaVu fonts are registered from bytes (no
//! fontconfig), and every figure is drawn once per backend (SVG text, PNG file).

pub mod axis;
pub mod bars;
pub mod compare;
pub mod gantt;
pub mod lines;

use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Once;

use hetsim_engine::record::{NameId, Recorder};

pub use bars::{Bar, BarChart};
pub use gantt::Gantt;
pub use lines::{LineChart, LineStyle, Panels, Series};

/// Text sizes in pixels, all even: plotters draws each glyph from half the size plus its top
/// edge, truncated to a whole pixel, so at an odd size a full stop sits a pixel above its
/// digits' baseline and reads as a middle dot ("4·908 ms").
pub(crate) mod size {
    pub const TINY: u32 = 10;
    pub const SMALL: u32 = 12;
    pub const TEXT: u32 = 14;
    pub const HEADING: u32 = 16;
    pub const TITLE: u32 = 22;
}

/// Registers DejaVu Sans as plotters' `sans-serif` (once per process).
pub fn ensure_fonts() {
    static FONTS: Once = Once::new();
    FONTS.call_once(|| {
        // The bytes are DejaVu's own TTF files; a failure here is a packaging bug.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
        let _ = plotters::style::register_font("sans-serif", FontStyle::Bold, dejavu::sans::bold());
    });
}

/// A figure that can draw itself on any plotters backend.
pub trait Figure {
    fn size(&self) -> (u32, u32);
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;
}

/// The figure as SVG text.
pub fn svg<F: Figure>(fig: &F) -> std::io::Result<Vec<u8>> {
    ensure_fonts();
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, fig.size()).into_drawing_area();
        fig.draw(&root).map_err(std::io::Error::other)?;
        root.present()
            .map_err(|e| std::io::Error::other(e.to_string()))?;
    }
    Ok(text.into_bytes())
}

/// Draws the figure into a PNG file at `path` (its name must end in `.png`).
pub fn png<F: Figure>(fig: &F, path: &Path) -> std::io::Result<()> {
    ensure_fonts();
    let root = BitMapBackend::new(path, fig.size()).into_drawing_area();
    fig.draw(&root).map_err(std::io::Error::other)?;
    root.present()
        .map_err(|e| std::io::Error::other(e.to_string()))
}

/// A decimal number's text without trailing zeros (`2.500` -> `2.5`, `3.000` -> `3`);
/// text without a decimal point is left as it is.
pub fn trim_zeros(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Draws a bold title and grey note lines at the top left of `area`.
fn draw_title<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    notes: &[&str],
) -> Result<(), String> {
    let bold = ("sans-serif", size::TITLE)
        .into_font()
        .style(FontStyle::Bold)
        .color(&BLACK);
    area.draw_text(title, &bold, (12, 8)).map_err(err)?;
    let grey = ("sans-serif", size::SMALL)
        .into_font()
        .color(&RGBColor(80, 80, 80));
    for (i, note) in notes.iter().enumerate() {
        area.draw_text(note, &grey, (12, 36 + 16 * i as i32))
            .map_err(err)?;
    }
    Ok(())
}

/// Reserves a line at the bottom of `root` for a grey note; returns the area above it.
fn with_footnote<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    note: Option<&str>,
) -> Result<DrawingArea<DB, Shift>, String> {
    let Some(note) = note else {
        return Ok(root.clone());
    };
    let (top, rest) = root.split_vertically(root.dim_in_pixel().1 - 26);
    let grey = ("sans-serif", size::SMALL)
        .into_font()
        .color(&RGBColor(80, 80, 80));
    rest.draw_text(note, &grey, (12, 4)).map_err(err)?;
    Ok(top)
}

/// Colours of well-known states (Tableau-like, distinguishable).
const KNOWN: &[(&str, [u8; 3])] = &[
    ("busy", [31, 119, 180]),
    ("compute", [44, 160, 44]),
    ("send", [255, 127, 14]),
    ("recv", [148, 103, 189]),
    ("wait", [214, 39, 40]),
    ("copy", [140, 86, 75]),
    ("overhead", [127, 127, 127]),
    ("POTRF", [214, 39, 40]),
    ("TRSM", [31, 119, 180]),
    ("SYRK", [255, 127, 14]),
    ("GEMM", [44, 160, 44]),
    ("GETRF", [148, 103, 189]),
    ("other", [190, 190, 190]),
];

/// Colours for the other states, in order of use.
const PALETTE: &[[u8; 3]] = &[
    [23, 190, 207],
    [227, 119, 194],
    [188, 189, 34],
    [140, 86, 75],
    [148, 103, 189],
    [255, 127, 14],
    [44, 160, 44],
    [214, 39, 40],
    [31, 119, 180],
    [174, 199, 232],
    [255, 187, 120],
    [152, 223, 138],
    [255, 152, 150],
    [197, 176, 213],
    [196, 156, 148],
    [247, 182, 210],
];

/// One colour per state of the recording, the same in every picture and trace of a run:
/// well-known states keep theirs, the others take the first palette colour no state of this
/// run uses yet, in order of first appearance.
pub fn state_colours(rec: &Recorder) -> HashMap<NameId, [u8; 3]> {
    let mut states: Vec<NameId> = rec.intervals().iter().map(|i| i.state).collect();
    states.sort();
    states.dedup();
    let mut colours = HashMap::new();
    let mut taken = Vec::new();
    for &s in &states {
        if let Some((_, c)) = KNOWN.iter().find(|(n, _)| *n == rec.name(s)) {
            colours.insert(s, *c);
            taken.push(*c);
        }
    }
    let mut free = PALETTE.iter().filter(|c| !taken.contains(c)).cycle();
    for &s in &states {
        colours
            .entry(s)
            .or_insert_with(|| *free.next().expect("the palette is not empty"));
    }
    colours
}

/// The colour of the aggregate `other` state.
pub fn other_rgb() -> [u8; 3] {
    KNOWN
        .iter()
        .find(|(n, _)| *n == "other")
        .map(|(_, c)| *c)
        .unwrap_or([190; 3])
}

/// Series colours for line charts, in order.
pub fn series_rgb(i: usize) -> RGBColor {
    const SERIES: &[[u8; 3]] = &[
        [31, 119, 180],
        [255, 127, 14],
        [44, 160, 44],
        [214, 39, 40],
        [148, 103, 189],
        [140, 86, 75],
        [227, 119, 194],
        [127, 127, 127],
        [188, 189, 34],
        [23, 190, 207],
        // The paler halves of the same hues (matplotlib's tab20), for charts of many lines.
        [174, 199, 232],
        [255, 187, 120],
        [152, 223, 138],
        [255, 152, 150],
        [197, 176, 213],
        [196, 156, 148],
        [247, 182, 210],
        [199, 199, 199],
        [219, 219, 141],
        [158, 218, 229],
    ];
    let [r, g, b] = SERIES[i % SERIES.len()];
    RGBColor(r, g, b)
}

/// A time unit that keeps axis numbers readable: (seconds per unit, name).
pub fn time_unit(span_s: f64) -> (f64, &'static str) {
    if span_s >= 10.0 {
        (1.0, "s")
    } else if span_s >= 10e-3 {
        (1e-3, "ms")
    } else if span_s >= 10e-6 {
        (1e-6, "µs")
    } else {
        (1e-9, "ns")
    }
}
