//! A progress display on stderr over simulated time and events, advanced per batch.
//! indicatif draws nothing when stderr is not a terminal, and `--quiet` hides it.

use bevy_ecs::prelude::*;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use hetsim_schema::SimTime;

#[derive(Resource)]
pub struct Progress {
    bar: ProgressBar,
    batches: u64,
}

impl Progress {
    pub fn new(visible: bool) -> Self {
        let target = if visible {
            ProgressDrawTarget::stderr_with_hz(4)
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(None, target);
        bar.set_style(
            ProgressStyle::with_template("{spinner} {elapsed} simulated {msg}")
                .expect("a valid template"),
        );
        Progress { bar, batches: 0 }
    }

    /// Called once per timestamp; refreshes the text every 4096 batches to stay off the hot path.
    pub fn tick(&mut self, now: SimTime, events: u64) {
        self.batches += 1;
        if self.batches.is_multiple_of(4096) && !self.bar.is_hidden() {
            self.bar
                .set_message(format!("{:.6} s, {events} events", now.as_secs_f64()));
            self.bar.tick();
        }
    }

    pub fn finish(&mut self) {
        self.bar.finish_and_clear();
    }
}
