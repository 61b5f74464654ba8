//! The mapping: which device of which PE runs each task. Its TOML form, the mappings a
//! graph allows ([`Mapping::enumerate`]), and their resolution against a job's shape
//! into one [`Placement`] per task ([`Mapping::resolve`]).
//!
//! Owns every check that needs the graph and the job together (unknown task, a task
//! mapped twice or not at all, a PE or board that does not exist). It must not know
//! what a task does (the registry checks that a task's kind has the chosen device).
//!
//! ```toml
//! name = "filter-on-board"
//!
//! [[place]]
//! task = "filter"
//! device = "fpga"        # cpu | fpga: the graph's placement for that device
//! # pe = 2               # optional: another PE than the graph's
//! # board = 1            # optional (fpga only): another board of that PE's node
//! ```
//!
//! A task the file does not list takes its only placement; a task with both a CPU and
//! an FPGA placement in the graph must be listed.

use crate::graph::{Device, Placement, SpecError, TaskGraph};
use serde::Deserialize;

/// What a mapping is checked against: the job's PEs, nodes and boards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobShape {
    /// PEs in the job.
    pub n_pes: u32,
    /// PEs on each node (PE `p` is on node `p / pes_per_node`).
    pub pes_per_node: u32,
    /// Boards on each node.
    pub boards_per_node: u32,
}

impl JobShape {
    /// The node of PE `pe`.
    pub fn node_of(&self, pe: u32) -> u32 {
        pe / self.pes_per_node.max(1)
    }
}

/// A mapping: a device choice for some tasks, with optional placement overrides.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapping {
    /// Its name (the file's `name`, or one made by [`Mapping::enumerate`]).
    pub name: String,
    /// Where it came from.
    pub source: String,
    /// The file's entries, in order.
    pub places: Vec<MappedTask>,
}

/// One `[[place]]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappedTask {
    /// The task's name.
    pub task: String,
    /// The device kind.
    pub device: Device,
    /// Another PE than the graph's placement for that device.
    pub pe: Option<u32>,
    /// Another board than the graph's (FPGA only).
    pub board: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMapping {
    name: String,
    #[serde(default, rename = "place")]
    places: Vec<RawPlace>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlace {
    task: String,
    device: String,
    pe: Option<u32>,
    board: Option<u32>,
}

impl Mapping {
    /// Reads a mapping file (checked against a graph by [`Mapping::resolve`]).
    pub fn load(path: &std::path::Path) -> Result<Mapping, SpecError> {
        let (text, file) = crate::graph::read_spec(path)?;
        Mapping::from_toml_str(&text, &file)
    }

    /// Parses a mapping from TOML text; `source` names it in errors.
    pub fn from_toml_str(text: &str, source: &str) -> Result<Mapping, SpecError> {
        let raw: RawMapping =
            toml::from_str(text).map_err(|e| crate::graph::toml_error(source, text, &e))?;
        if raw.name.trim().is_empty() {
            return Err(SpecError::new(source, "name", "the mapping needs a name"));
        }
        let mut places = Vec::with_capacity(raw.places.len());
        for (i, p) in raw.places.into_iter().enumerate() {
            let device = match p.device.as_str() {
                "cpu" => Device::Cpu,
                "fpga" => Device::Fpga,
                other => {
                    return Err(SpecError::new(
                        source,
                        format!("place[{i}].device"),
                        format!("{other:?} is not a device: cpu or fpga"),
                    ))
                }
            };
            if device == Device::Cpu && p.board.is_some() {
                return Err(SpecError::new(
                    source,
                    format!("place[{i}].board"),
                    "a task on a CPU has no board",
                ));
            }
            places.push(MappedTask {
                task: p.task,
                device,
                pe: p.pe,
                board: p.board,
            });
        }
        Ok(Mapping {
            name: raw.name,
            source: source.to_string(),
            places,
        })
    }

    /// The mapping that puts the tasks of `on_fpga` on boards and every other task that
    /// may run on a CPU there (tasks with one placement keep it). Named `all-cpu`,
    /// `all-fpga` (every mappable task on a board), or `fpga:a+b`.
    pub fn with_fpga_tasks(graph: &TaskGraph, on_fpga: &[usize]) -> Mapping {
        let mappable = graph.mappable();
        let mut places = Vec::new();
        for &t in &mappable {
            let device = if on_fpga.contains(&t) {
                Device::Fpga
            } else {
                Device::Cpu
            };
            places.push(MappedTask {
                task: graph.tasks[t].name.clone(),
                device,
                pe: None,
                board: None,
            });
        }
        let chosen: Vec<&str> = mappable
            .iter()
            .filter(|t| on_fpga.contains(t))
            .map(|&t| graph.tasks[t].name.as_str())
            .collect();
        let name = if chosen.is_empty() {
            "all-cpu".to_string()
        } else if chosen.len() == mappable.len() {
            "all-fpga".to_string()
        } else {
            format!("fpga:{}", chosen.join("+"))
        };
        Mapping {
            name,
            source: format!("{} (enumerated)", graph.source),
            places,
        }
    }

    /// Every mapping of the graph: each task that may run on either device on a CPU or
    /// on its board, `2^k` mappings for `k` such tasks, fewer boards first. Tasks of an
    /// [`TaskGraph::interchangeable`] group count as one choice with `n + 1` options (the
    /// first `j` of the group on boards). Refuses more than 4096 mappings (explore would
    /// run for ever).
    ///
    /// ```
    /// use shmemplus_scf::{Mapping, TaskGraph};
    /// let g = TaskGraph::from_toml_str(r#"
    ///     name = "g"
    ///     [[task]]
    ///     name = "a"
    ///     kind = "relay"
    ///     cpu = { pe = 0 }
    ///     fpga = { pe = 0, board = 0 }
    ///     [[task]]
    ///     name = "b"
    ///     kind = "relay"
    ///     cpu = { pe = 1 }
    ///     fpga = { pe = 1, board = 0 }
    /// "#, "g.toml")?;
    /// let names: Vec<String> = Mapping::enumerate(&g)?.into_iter().map(|m| m.name).collect();
    /// assert_eq!(names, ["all-cpu", "fpga:a", "fpga:b", "all-fpga"]);
    /// # Ok::<(), shmemplus_scf::SpecError>(())
    /// ```
    pub fn enumerate(graph: &TaskGraph) -> Result<Vec<Mapping>, SpecError> {
        // Each choice: the tasks it may put on boards, in order; option j puts the
        // first j of a group there (a lone task: 0 or 1).
        let grouped: Vec<usize> = graph.interchangeable.iter().flatten().copied().collect();
        let mut choices: Vec<Vec<usize>> = graph.interchangeable.clone();
        for t in graph.mappable() {
            if !grouped.contains(&t) {
                choices.push(vec![t]);
            }
        }
        choices.sort_by_key(|c| c[0]);
        let total = choices
            .iter()
            .try_fold(1usize, |acc, c| acc.checked_mul(c.len() + 1))
            .filter(|&n| n <= 4096)
            .ok_or_else(|| {
                SpecError::new(
                    &graph.source,
                    "task",
                    format!(
                        "{} tasks may run on either device: too many mappings to explore (at most 4096; declare alike tasks interchangeable)",
                        graph.mappable().len()
                    ),
                )
            })?;
        let mut all: Vec<Vec<usize>> = Vec::with_capacity(total);
        for mut code in 0..total {
            let mut on = Vec::new();
            for c in &choices {
                let j = code % (c.len() + 1);
                code /= c.len() + 1;
                on.extend_from_slice(&c[..j]);
            }
            on.sort_unstable();
            all.push(on);
        }
        // Fewer boards first, then by the boards' tasks in file order.
        all.sort_by(|a, b| (a.len(), a).cmp(&(b.len(), b)));
        Ok(all
            .iter()
            .map(|on| Mapping::with_fpga_tasks(graph, on))
            .collect())
    }

    /// One placement per task (indexed like `graph.tasks`), checked against the job.
    ///
    /// ```
    /// use shmemplus_scf::{JobShape, Mapping, TaskGraph};
    /// let g = TaskGraph::from_toml_str(r#"
    ///     name = "g"
    ///     [[task]]
    ///     name = "a"
    ///     kind = "relay"
    ///     cpu = { pe = 0 }
    ///     fpga = { pe = 0, board = 0 }
    /// "#, "g.toml")?;
    /// let job = JobShape { n_pes: 2, pes_per_node: 1, boards_per_node: 1 };
    /// let m = Mapping::from_toml_str(
    ///     "name = \"m\"\n[[place]]\ntask = \"a\"\ndevice = \"fpga\"\nboard = 3", "m.toml")?;
    /// let e = m.resolve(&g, &job).unwrap_err();
    /// assert!(e.to_string().contains("board 3 does not exist"), "{e}");
    /// # Ok::<(), shmemplus_scf::SpecError>(())
    /// ```
    pub fn resolve(&self, graph: &TaskGraph, job: &JobShape) -> Result<Vec<Placement>, SpecError> {
        let err = |field: String, problem: String| SpecError::new(&self.source, field, problem);
        let mut chosen: Vec<Option<(Placement, String)>> = vec![None; graph.tasks.len()];
        for (i, p) in self.places.iter().enumerate() {
            let at = |f: &str| format!("place[{i}].{f}");
            let Some(t) = graph.task_index(&p.task) else {
                return Err(err(
                    at("task"),
                    format!(
                        "unknown task {:?}: {} has no such task",
                        p.task, graph.source
                    ),
                ));
            };
            if let Some((_, first)) = &chosen[t] {
                return Err(err(
                    at("task"),
                    format!("task {:?} is mapped twice (also {first})", p.task),
                ));
            }
            let task = &graph.tasks[t];
            let base = task.placement(p.device);
            let pe = p.pe.or(base.map(|b| b.pe));
            let place = match (p.device, pe) {
                (Device::Cpu, Some(pe)) => Placement { pe, board: None },
                (Device::Fpga, Some(pe)) => match p.board.or(base.and_then(|b| b.board)) {
                    Some(board) => Placement {
                        pe,
                        board: Some(board),
                    },
                    None => {
                        return Err(err(
                            at("board"),
                            format!(
                                "task {:?} has no fpga placement in the graph: give board",
                                p.task
                            ),
                        ))
                    }
                },
                (d, None) => {
                    return Err(err(
                        at("device"),
                        format!(
                            "task {:?} has no {} placement in the graph: give pe{}",
                            p.task,
                            d.name(),
                            if d == Device::Fpga { " and board" } else { "" }
                        ),
                    ))
                }
            };
            chosen[t] = Some((place, at("task")));
        }
        let mut out = Vec::with_capacity(graph.tasks.len());
        for (t, c) in chosen.into_iter().enumerate() {
            let task = &graph.tasks[t];
            let (place, field) = match c {
                Some(c) => c,
                None => match (task.cpu, task.fpga) {
                    (Some(p), None) | (None, Some(p)) => (p, format!("task {:?}", task.name)),
                    _ => {
                        return Err(err(
                            "place".into(),
                            format!(
                                "task {:?} is not mapped: it may run on a cpu or an fpga, so the mapping must say which",
                                task.name
                            ),
                        ))
                    }
                },
            };
            if place.pe >= job.n_pes {
                return Err(err(
                    field,
                    format!(
                        "task {:?} on PE {}: the job has {} PEs (0..{})",
                        task.name, place.pe, job.n_pes, job.n_pes
                    ),
                ));
            }
            if let Some(b) = place.board {
                if b >= job.boards_per_node {
                    return Err(err(
                        field,
                        format!(
                            "task {:?}: board {b} does not exist (node {} has {} boards)",
                            task.name,
                            job.node_of(place.pe),
                            job.boards_per_node
                        ),
                    ));
                }
            }
            out.push(place);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph() -> TaskGraph {
        TaskGraph::from_toml_str(
            r#"
            name = "g"
            [[task]]
            name = "src"
            kind = "relay"
            cpu = { pe = 0 }
            [[task]]
            name = "k1"
            kind = "relay"
            cpu = { pe = 1 }
            fpga = { pe = 2, board = 0 }
            [[task]]
            name = "k2"
            kind = "relay"
            cpu = { pe = 1 }
            fpga = { pe = 2, board = 0 }
            "#,
            "g.toml",
        )
        .unwrap()
    }

    const JOB: JobShape = JobShape {
        n_pes: 3,
        pes_per_node: 3,
        boards_per_node: 1,
    };

    fn mapping(body: &str) -> Mapping {
        Mapping::from_toml_str(&format!("name = \"m\"\n{body}"), "m.toml").unwrap()
    }

    #[test]
    fn enumerated_mappings_resolve() {
        let g = graph();
        let all = Mapping::enumerate(&g).unwrap();
        let names: Vec<&str> = all.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["all-cpu", "fpga:k1", "fpga:k2", "all-fpga"]);
        let p = all[1].resolve(&g, &JOB).unwrap();
        assert_eq!(
            p,
            [
                Placement { pe: 0, board: None },
                Placement {
                    pe: 2,
                    board: Some(0)
                },
                Placement { pe: 1, board: None },
            ]
        );
    }

    #[test]
    fn interchangeable_tasks_count_once() {
        let g = TaskGraph::from_toml_str(
            r#"
            name = "g"
            interchangeable = [["k1", "k2", "k3"]]
            [[task]]
            name = "k1"
            kind = "relay"
            cpu = { pe = 0 }
            fpga = { pe = 0, board = 0 }
            [[task]]
            name = "k2"
            kind = "relay"
            cpu = { pe = 0 }
            fpga = { pe = 0, board = 0 }
            [[task]]
            name = "k3"
            kind = "relay"
            cpu = { pe = 0 }
            fpga = { pe = 0, board = 0 }
            [[task]]
            name = "x"
            kind = "relay"
            cpu = { pe = 1 }
            fpga = { pe = 1, board = 0 }
            "#,
            "g.toml",
        )
        .unwrap();
        let names: Vec<String> = Mapping::enumerate(&g)
            .unwrap()
            .into_iter()
            .map(|m| m.name)
            .collect();
        assert_eq!(
            names,
            [
                "all-cpu",
                "fpga:k1",
                "fpga:x",
                "fpga:k1+k2",
                "fpga:k1+x",
                "fpga:k1+k2+k3",
                "fpga:k1+k2+x",
                "all-fpga"
            ]
        );
        let bad = TaskGraph::from_toml_str(
            "name = \"g\"\ninterchangeable = [[\"a\", \"b\"]]\n[[task]]\nname = \"a\"\nkind = \"k\"\ncpu = { pe = 0 }\nfpga = { pe = 0, board = 0 }\n[[task]]\nname = \"b\"\nkind = \"j\"\ncpu = { pe = 0 }\nfpga = { pe = 0, board = 0 }",
            "g.toml",
        )
        .unwrap_err();
        assert!(bad.problem.contains("not alike"), "{bad}");
    }

    #[test]
    fn overrides_apply() {
        let g = graph();
        let m = mapping(
            "[[place]]\ntask = \"k1\"\ndevice = \"cpu\"\npe = 2\n[[place]]\ntask = \"k2\"\ndevice = \"fpga\"",
        );
        let p = m.resolve(&g, &JOB).unwrap();
        assert_eq!(p[1], Placement { pe: 2, board: None });
        assert_eq!(p[2].board, Some(0));
    }

    #[test]
    fn bad_mappings_are_named() {
        let g = graph();
        let cases = [
            ("[[place]]\ntask = \"zz\"\ndevice = \"cpu\"", "unknown task \"zz\""),
            (
                "[[place]]\ntask = \"k1\"\ndevice = \"cpu\"\n[[place]]\ntask = \"k1\"\ndevice = \"fpga\"\n[[place]]\ntask = \"k2\"\ndevice = \"cpu\"",
                "mapped twice",
            ),
            ("[[place]]\ntask = \"k1\"\ndevice = \"cpu\"", "\"k2\" is not mapped"),
            (
                "[[place]]\ntask = \"k1\"\ndevice = \"cpu\"\npe = 9\n[[place]]\ntask = \"k2\"\ndevice = \"cpu\"",
                "the job has 3 PEs",
            ),
            (
                "[[place]]\ntask = \"k1\"\ndevice = \"fpga\"\nboard = 1\n[[place]]\ntask = \"k2\"\ndevice = \"cpu\"",
                "board 1 does not exist",
            ),
            (
                "[[place]]\ntask = \"src\"\ndevice = \"fpga\"\n[[place]]\ntask = \"k1\"\ndevice = \"cpu\"\n[[place]]\ntask = \"k2\"\ndevice = \"cpu\"",
                "no fpga placement",
            ),
        ];
        for (body, want) in cases {
            let e = mapping(body).resolve(&g, &JOB).expect_err(body);
            assert!(e.to_string().contains(want), "{body}\n-> {e}");
            assert_eq!(e.file, "m.toml");
        }
        let e = Mapping::from_toml_str(
            "name = \"m\"\n[[place]]\ntask = \"k1\"\ndevice = \"gpu\"",
            "m.toml",
        )
        .unwrap_err();
        assert!(e.problem.contains("not a device"), "{e}");
    }
}
