//! One job as a model plugin runs it (the MPI and CUDA plugins hold a list of them): its spec,
//! the platform nodes it holds, when it begins, and its name for rows, flow ids and errors.

use hetsim_schema::SimTime;

/// A job of a model whose scenario section is `S` (an `MpiSpec`, a `CudaSpec`).
#[derive(Debug, Clone)]
pub struct Instance<S> {
    /// The job's name (`None`: the scenario's own workload).
    pub name: Option<String>,
    /// Its field path, for errors (`workload.Mpi`, `jobs[1].workload.Mpi`).
    pub path: String,
    pub spec: S,
    /// The platform nodes it holds, its node `i` being `nodes[i]` (`None`: the whole machine).
    pub nodes: Option<Vec<u32>>,
    /// When it begins.
    pub start: SimTime,
}

impl<S> Instance<S> {
    /// The scenario's own workload at `path` (`workload.Mpi`): the whole machine from time 0.
    pub fn whole(spec: S, path: &str) -> Instance<S> {
        Instance {
            name: None,
            path: path.to_string(),
            spec,
            nodes: None,
            start: SimTime::ZERO,
        }
    }

    /// What its rows and flow ids begin with (`halo/`; empty without a name).
    pub fn prefix(&self) -> String {
        self.name
            .as_ref()
            .map_or(String::new(), |n| format!("{n}/"))
    }

    /// An error of its setup, which names the workload's own path (`workload.Mpi.ranks`),
    /// with the job's path and name (`job `a`: jobs[1].workload.Mpi.ranks`).
    pub fn blame(&self, e: String) -> String {
        let own = self
            .path
            .split_once("].")
            .map_or(self.path.as_str(), |(_, p)| p);
        let e = e.replacen(own, &self.path, 1);
        match &self.name {
            Some(n) => format!("job `{n}`: {e}"),
            None => e,
        }
    }
}

/// Sets up each job of a model (`kind`, for the message) with `setup`, which gets the job's
/// index for its events: the jobs that set up, in order; every error, blamed on its job, in
/// `SimErrors`.
pub fn set_up_each<S, R>(
    world: &mut bevy_ecs::world::World,
    jobs: &[Instance<S>],
    kind: &str,
    mut setup: impl FnMut(&mut bevy_ecs::world::World, &Instance<S>, u16) -> Result<R, String>,
) -> Vec<R> {
    let mut errors = Vec::new();
    let mut out = Vec::with_capacity(jobs.len());
    if jobs.len() > u16::MAX as usize {
        errors.push(format!(
            "jobs: {} {kind} jobs, at most {}",
            jobs.len(),
            u16::MAX
        ));
    } else {
        for (j, job) in jobs.iter().enumerate() {
            match setup(world, job, j as u16) {
                Ok(rt) => out.push(rt),
                Err(e) => errors.push(job.blame(e)),
            }
        }
    }
    world
        .resource_mut::<hetsim_engine::SimErrors>()
        .0
        .extend(errors);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jobs_errors_and_rows_carry_its_name_and_path() {
        let whole = Instance::whole((), "workload.Mpi");
        assert_eq!(whole.prefix(), "");
        let e = "workload.Mpi.ranks: expected at least one rank".to_string();
        assert_eq!(whole.blame(e.clone()), e);
        let job = Instance {
            name: Some("a".into()),
            path: "jobs[1].workload.Mpi".into(),
            ..whole
        };
        assert_eq!(job.prefix(), "a/");
        assert_eq!(
            job.blame(e),
            "job `a`: jobs[1].workload.Mpi.ranks: expected at least one rank"
        );
    }
}
