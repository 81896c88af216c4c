//! The one seeded random number generator of a run.

use bevy_ecs::prelude::*;
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

/// Seeded from the scenario's `seed`: the same scenario and seed draw the same numbers.
#[derive(Resource)]
pub struct SimRng(pub ChaCha8Rng);

impl SimRng {
    pub fn new(seed: u64) -> Self {
        SimRng(ChaCha8Rng::seed_from_u64(seed))
    }
}
