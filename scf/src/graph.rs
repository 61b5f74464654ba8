//! The task graph: its TOML form, its validation, and what the rest of SCF reads from
//! it (tasks, their candidate placements, point-to-point channels, a topological order).
//!
//! Owns the file format and every check that needs only the graph file. It must not
//! know the job (PEs, boards: `mapping` checks those) nor move data (`channel`).
//!
//! ```toml
//! name = "pipeline"
//! iterations = 8                 # how many times the graph runs (frames of a stream)
//!
//! [[task]]
//! name = "source"
//! kind = "relay"                 # the implementation, by name in the registry
//! cpu_s = 0.0001                 # modeled compute per iteration on a CPU (else measured)
//! cpu = { pe = 0 }               # where it runs when mapped to a CPU
//!
//! [[task]]
//! name = "filter"
//! kind = "relay"
//! cpu = { pe = 1 }
//! fpga = { pe = 1, board = 0 }   # where it runs when mapped to a board
//!
//! [[edge]]
//! from = "source"
//! to = "filter"                  # or a list, for broadcast and scatter
//! pattern = "send"               # send | broadcast | scatter | gather
//! bytes = 4096                   # per message: each destination's (each source's) part
//! ```
//!
//! Every pattern is a set of point-to-point [`Channel`]s of `bytes` each: `send` one,
//! `broadcast` and `scatter` one per destination (the same data, or each its part),
//! `gather` one per source. The graph must be acyclic: each iteration a task receives on
//! all its in-channels, computes, then sends on all its out-channels, so a cycle could
//! never start.

use serde::Deserialize;
use std::collections::HashMap;

/// Largest message of one channel (1 GiB): far above any use, low enough that slot
/// arithmetic cannot overflow.
pub const MAX_MESSAGE_BYTES: u64 = 1 << 30;

/// Most iterations a graph may ask for.
pub const MAX_ITERATIONS: u64 = 1 << 32;

/// Why a graph or mapping file is unusable. Displays as `{file}: {field}: {problem}`,
/// with `field` the path of the offending value (`task[2].name`, `edge[0].to`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {field}: {problem}")]
pub struct SpecError {
    /// The file (or `<string>` for text given in code).
    pub file: String,
    /// Which value.
    pub field: String,
    /// What is wrong and what to do.
    pub problem: String,
}

impl SpecError {
    pub(crate) fn new(file: &str, field: impl Into<String>, problem: impl Into<String>) -> Self {
        SpecError {
            file: file.to_string(),
            field: field.into(),
            problem: problem.into(),
        }
    }
}

/// Which kind of device runs a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Device {
    /// A PE's CPU.
    Cpu,
    /// A board of the PE's node, driven by that PE.
    Fpga,
}

impl Device {
    /// `cpu` or `fpga`.
    pub fn name(self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Fpga => "fpga",
        }
    }
}

/// Where one task runs: a PE, and a board of its node for an FPGA task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Placement {
    /// The PE that runs the task (or drives its board).
    pub pe: u32,
    /// The board, for an FPGA task.
    pub board: Option<u32>,
}

impl Placement {
    /// The device kind of this placement.
    pub fn device(&self) -> Device {
        if self.board.is_some() {
            Device::Fpga
        } else {
            Device::Cpu
        }
    }
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.board {
            Some(b) => write!(f, "PE {} board {b}", self.pe),
            None => write!(f, "PE {} CPU", self.pe),
        }
    }
}

/// One task of the graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// Its name, unique in the graph; tasks address each other by it.
    pub name: String,
    /// The implementation's name in the registry.
    pub kind: String,
    /// Modeled compute per iteration on a CPU, in seconds; `None`: measured.
    pub cpu_s: Option<f64>,
    /// Where it runs when mapped to a CPU (`None`: it cannot run on a CPU).
    pub cpu: Option<Placement>,
    /// Where it runs when mapped to a board (`None`: it cannot run on a board).
    pub fpga: Option<Placement>,
}

impl Task {
    /// Its placement on `device`, if the graph gives one.
    pub fn placement(&self, device: Device) -> Option<Placement> {
        match device {
            Device::Cpu => self.cpu,
            Device::Fpga => self.fpga,
        }
    }
}

/// The communication pattern of an edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// One source, one destination.
    Send,
    /// One source, the same data to every destination.
    Broadcast,
    /// One source, its own part to each destination.
    Scatter,
    /// Many sources, each its part to one destination.
    Gather,
}

/// A point-to-point channel: one message of `bytes` from `from` to `to` per iteration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Channel {
    /// Index in [`TaskGraph::channels`].
    pub id: usize,
    /// Source task (index in [`TaskGraph::tasks`]).
    pub from: usize,
    /// Destination task.
    pub to: usize,
    /// Bytes of each message.
    pub bytes: u64,
    /// The edge it comes from (index in the file's `[[edge]]` list).
    pub edge: usize,
    /// The edge's pattern.
    pub pattern: Pattern,
}

/// A validated task graph.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskGraph {
    /// The graph's name.
    pub name: String,
    /// Where it came from (a path, or `<string>`).
    pub source: String,
    /// Iterations of the whole graph per run (at least 1).
    pub iterations: u64,
    /// The tasks, in file order.
    pub tasks: Vec<Task>,
    /// The channels, edge by edge in file order, destinations (sources) in list order.
    pub channels: Vec<Channel>,
    /// Task indices in a topological order (sources first; ties in file order).
    pub order: Vec<usize>,
    /// Published results to compare with (see [`Reference`]).
    pub references: Vec<Reference>,
    /// Groups of alike tasks (task indices): mappings that differ only in which
    /// tasks of a group run on boards are the same mapping, so explore tries how many
    /// of each group, not which (`interchangeable = [["a", "b"]]` in the file).
    pub interchangeable: Vec<Vec<usize>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGraph {
    name: String,
    #[serde(default = "one")]
    iterations: u64,
    #[serde(default, rename = "task")]
    tasks: Vec<RawTask>,
    #[serde(default, rename = "edge")]
    edges: Vec<RawEdge>,
    #[serde(default, rename = "reference")]
    references: Vec<Reference>,
    #[serde(default)]
    interchangeable: Vec<Vec<String>>,
}

/// A published result to print beside explore's: on the system named `profile`, the
/// best mapping put `fpga_tasks` tasks on boards and ran `speedup` times faster than
/// all on CPUs (`[[reference]]` tables of the graph file).
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    /// The profile's name (as in its file's `name`).
    pub profile: String,
    /// Tasks on boards in the best mapping.
    pub fpga_tasks: usize,
    /// The best mapping's speedup over all tasks on CPUs.
    pub speedup: f64,
    /// Where the figure comes from.
    pub source: String,
}

fn one() -> u64 {
    1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    name: String,
    kind: String,
    cpu_s: Option<f64>,
    cpu: Option<RawPlace>,
    fpga: Option<RawPlace>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlace {
    pe: u32,
    board: Option<u32>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn names(&self) -> Vec<&str> {
        match self {
            OneOrMany::One(s) => vec![s.as_str()],
            OneOrMany::Many(v) => v.iter().map(String::as_str).collect(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEdge {
    from: OneOrMany,
    to: OneOrMany,
    pattern: Pattern,
    bytes: u64,
}

/// Turns a TOML parse error into a [`SpecError`] naming the line.
pub(crate) fn toml_error(file: &str, text: &str, e: &toml::de::Error) -> SpecError {
    let field = match e.span() {
        Some(span) => format!("line {}", text[..span.start].matches('\n').count() + 1),
        None => "file".to_string(),
    };
    SpecError::new(file, field, e.message().to_string())
}

/// Reads a graph or mapping file: its text, and its name for errors.
pub(crate) fn read_spec(path: &std::path::Path) -> Result<(String, String), SpecError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| SpecError::new(&file, "file", format!("cannot read it: {e}")))?;
    Ok((text, file))
}

impl TaskGraph {
    /// Reads and validates a graph file.
    pub fn load(path: &std::path::Path) -> Result<TaskGraph, SpecError> {
        let (text, file) = read_spec(path)?;
        TaskGraph::from_toml_str(&text, &file)
    }

    /// Parses and validates a graph from TOML text; `source` names it in errors.
    ///
    /// ```
    /// use shmemplus_scf::TaskGraph;
    /// let g = TaskGraph::from_toml_str(r#"
    ///     name = "two"
    ///     [[task]]
    ///     name = "a"
    ///     kind = "relay"
    ///     cpu = { pe = 0 }
    ///     [[task]]
    ///     name = "b"
    ///     kind = "relay"
    ///     cpu = { pe = 1 }
    ///     [[edge]]
    ///     from = "a"
    ///     to = "b"
    ///     pattern = "send"
    ///     bytes = 64
    /// "#, "<string>")?;
    /// assert_eq!(g.channels.len(), 1);
    /// assert_eq!(g.order, [0, 1]);
    ///
    /// let cycle = TaskGraph::from_toml_str(r#"
    ///     name = "loop"
    ///     [[task]]
    ///     name = "a"
    ///     kind = "relay"
    ///     cpu = { pe = 0 }
    ///     [[edge]]
    ///     from = "a"
    ///     to = "a"
    ///     pattern = "send"
    ///     bytes = 64
    /// "#, "loop.toml").unwrap_err();
    /// assert!(cycle.to_string().contains("to itself"), "{cycle}");
    /// # Ok::<(), shmemplus_scf::SpecError>(())
    /// ```
    pub fn from_toml_str(text: &str, source: &str) -> Result<TaskGraph, SpecError> {
        let raw: RawGraph = toml::from_str(text).map_err(|e| toml_error(source, text, &e))?;
        let err = |field: String, problem: String| SpecError::new(source, field, problem);
        if raw.name.trim().is_empty() {
            return Err(err("name".into(), "the graph needs a name".into()));
        }
        if raw.iterations == 0 || raw.iterations > MAX_ITERATIONS {
            return Err(err(
                "iterations".into(),
                format!("must be 1..={MAX_ITERATIONS}, got {}", raw.iterations),
            ));
        }
        if raw.tasks.is_empty() {
            return Err(err("task".into(), "the graph has no [[task]]".into()));
        }
        let mut index: HashMap<&str, usize> = HashMap::new();
        let mut tasks = Vec::with_capacity(raw.tasks.len());
        for (i, t) in raw.tasks.iter().enumerate() {
            let at = |f: &str| format!("task[{i}].{f}");
            if !valid_name(&t.name) {
                return Err(err(
                    at("name"),
                    format!(
                        "{:?} is not a task name (letters, digits, '-', '_'; 1 to 64 characters)",
                        t.name
                    ),
                ));
            }
            if let Some(first) = index.insert(t.name.as_str(), i) {
                return Err(err(
                    at("name"),
                    format!("task {:?} is defined twice (also task[{first}])", t.name),
                ));
            }
            if t.kind.trim().is_empty() {
                return Err(err(at("kind"), "empty kind".into()));
            }
            if let Some(s) = t.cpu_s {
                if !s.is_finite() || s < 0.0 {
                    return Err(err(
                        at("cpu_s"),
                        format!("must be finite and >= 0, got {s}"),
                    ));
                }
            }
            let cpu = match &t.cpu {
                Some(p) if p.board.is_some() => {
                    return Err(err(
                        at("cpu.board"),
                        "a CPU placement has no board (use fpga = { pe, board })".into(),
                    ))
                }
                Some(p) => Some(Placement {
                    pe: p.pe,
                    board: None,
                }),
                None => None,
            };
            let fpga = match &t.fpga {
                Some(RawPlace { pe, board: Some(b) }) => Some(Placement {
                    pe: *pe,
                    board: Some(*b),
                }),
                Some(_) => {
                    return Err(err(
                        at("fpga"),
                        "an FPGA placement names its board: fpga = { pe = P, board = B }".into(),
                    ))
                }
                None => None,
            };
            if cpu.is_none() && fpga.is_none() {
                return Err(err(
                    at("cpu"),
                    format!(
                        "task {:?} has neither a cpu nor an fpga placement: it could run nowhere",
                        t.name
                    ),
                ));
            }
            tasks.push(Task {
                name: t.name.clone(),
                kind: t.kind.clone(),
                cpu_s: t.cpu_s,
                cpu,
                fpga,
            });
        }
        let mut channels: Vec<Channel> = Vec::new();
        for (e, edge) in raw.edges.iter().enumerate() {
            let at = |f: &str| format!("edge[{e}].{f}");
            let lookup = |field: &str, names: Vec<&str>| -> Result<Vec<usize>, SpecError> {
                if names.is_empty() {
                    return Err(err(at(field), "names no task".into()));
                }
                names
                    .iter()
                    .map(|n| {
                        index.get(n).copied().ok_or_else(|| {
                            err(
                                at(field),
                                format!("unknown task {n:?} (the graph's tasks: {})", {
                                    let mut all: Vec<&str> =
                                        tasks.iter().map(|t| t.name.as_str()).collect();
                                    all.sort_unstable();
                                    all.join(", ")
                                }),
                            )
                        })
                    })
                    .collect()
            };
            let from = lookup("from", edge.from.names())?;
            let to = lookup("to", edge.to.names())?;
            if edge.bytes == 0 || edge.bytes > MAX_MESSAGE_BYTES {
                return Err(err(
                    at("bytes"),
                    format!("must be 1..={MAX_MESSAGE_BYTES}, got {}", edge.bytes),
                ));
            }
            let pairs: Vec<(usize, usize)> = match edge.pattern {
                Pattern::Send => {
                    if from.len() != 1 || to.len() != 1 {
                        return Err(err(
                            at("pattern"),
                            "send has one source and one destination (use broadcast, scatter or gather for more)".into(),
                        ));
                    }
                    vec![(from[0], to[0])]
                }
                Pattern::Broadcast | Pattern::Scatter => {
                    if from.len() != 1 {
                        return Err(err(
                            at("from"),
                            format!("{} has one source", pattern_name(edge.pattern)),
                        ));
                    }
                    to.iter().map(|&t| (from[0], t)).collect()
                }
                Pattern::Gather => {
                    if to.len() != 1 {
                        return Err(err(at("to"), "gather has one destination".into()));
                    }
                    from.iter().map(|&f| (f, to[0])).collect()
                }
            };
            for (f, t) in pairs {
                if f == t {
                    return Err(err(
                        at("to"),
                        format!("task {:?} sends to itself", tasks[f].name),
                    ));
                }
                if let Some(c) = channels.iter().find(|c| c.from == f && c.to == t) {
                    return Err(err(
                        at("to"),
                        format!(
                            "{} -> {} is already a channel of edge[{}]: one channel per pair of tasks",
                            tasks[f].name, tasks[t].name, c.edge
                        ),
                    ));
                }
                channels.push(Channel {
                    id: channels.len(),
                    from: f,
                    to: t,
                    bytes: edge.bytes,
                    edge: e,
                    pattern: edge.pattern,
                });
            }
        }
        let order = topological_order(&tasks, &channels).map_err(|cycle| {
            err(
                "edge".into(),
                format!(
                    "the graph has a cycle ({}): every task receives before it sends in an iteration, so a cycle cannot start; split a task into a source and a sink",
                    cycle
                        .iter()
                        .map(|&t| tasks[t].name.as_str())
                        .collect::<Vec<_>>()
                        .join(" -> ")
                ),
            )
        })?;
        for (i, r) in raw.references.iter().enumerate() {
            if !r.speedup.is_finite() || r.speedup <= 0.0 {
                return Err(err(
                    format!("reference[{i}].speedup"),
                    format!("must be finite and > 0, got {}", r.speedup),
                ));
            }
        }
        let mut interchangeable: Vec<Vec<usize>> = Vec::new();
        for (g, group) in raw.interchangeable.iter().enumerate() {
            let at = format!("interchangeable[{g}]");
            let mut members = Vec::new();
            for name in group {
                let Some(&t) = index.get(name.as_str()) else {
                    return Err(err(at, format!("unknown task {name:?}")));
                };
                let task = &tasks[t];
                if task.cpu.is_none() || task.fpga.is_none() {
                    return Err(err(
                        at,
                        format!("task {name:?} has one placement only: nothing to interchange"),
                    ));
                }
                if members.contains(&t) || interchangeable.iter().flatten().any(|&o| o == t) {
                    return Err(err(at, format!("task {name:?} is listed twice")));
                }
                if let Some(&first) = members.first() {
                    let f: &Task = &tasks[first];
                    if f.kind != task.kind || f.cpu_s != task.cpu_s {
                        return Err(err(
                            at,
                            format!(
                                "tasks {:?} and {name:?} differ in kind or cpu_s: they are not alike",
                                f.name
                            ),
                        ));
                    }
                }
                members.push(t);
            }
            if members.len() >= 2 {
                interchangeable.push(members);
            }
        }
        Ok(TaskGraph {
            interchangeable,
            references: raw.references,
            name: raw.name,
            source: source.to_string(),
            iterations: raw.iterations,
            tasks,
            channels,
            order,
        })
    }

    /// The index of the task named `name`.
    pub fn task_index(&self, name: &str) -> Option<usize> {
        self.tasks.iter().position(|t| t.name == name)
    }

    /// The channel from task `from` to task `to`, if the graph has one.
    pub fn channel(&self, from: usize, to: usize) -> Option<&Channel> {
        self.channels.iter().find(|c| c.from == from && c.to == to)
    }

    /// The channels into task `t`, in channel order.
    pub fn inputs(&self, t: usize) -> impl Iterator<Item = &Channel> {
        self.channels.iter().filter(move |c| c.to == t)
    }

    /// The channels out of task `t`, in channel order.
    pub fn outputs(&self, t: usize) -> impl Iterator<Item = &Channel> {
        self.channels.iter().filter(move |c| c.from == t)
    }

    /// The tasks that may run on either device (the choices a mapping makes).
    pub fn mappable(&self) -> Vec<usize> {
        (0..self.tasks.len())
            .filter(|&t| self.tasks[t].cpu.is_some() && self.tasks[t].fpga.is_some())
            .collect()
    }
}

fn pattern_name(p: Pattern) -> &'static str {
    match p {
        Pattern::Send => "send",
        Pattern::Broadcast => "broadcast",
        Pattern::Scatter => "scatter",
        Pattern::Gather => "gather",
    }
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Kahn's algorithm, lowest index first among the ready tasks; on a cycle, returns one
/// cycle's tasks (first repeated at the end).
fn topological_order(tasks: &[Task], channels: &[Channel]) -> Result<Vec<usize>, Vec<usize>> {
    let n = tasks.len();
    let mut indegree = vec![0usize; n];
    for c in channels {
        indegree[c.to] += 1;
    }
    let mut order = Vec::with_capacity(n);
    let mut done = vec![false; n];
    while order.len() < n {
        let Some(next) = (0..n).find(|&t| !done[t] && indegree[t] == 0) else {
            // Every remaining task has an unfinished input: walk inputs backwards
            // until a task repeats; that loop is a cycle.
            let start = (0..n).find(|&t| !done[t]).unwrap_or(0);
            let mut path = vec![start];
            loop {
                let cur = *path.last().unwrap_or(&start);
                let Some(prev) = channels
                    .iter()
                    .find(|c| c.to == cur && !done[c.from])
                    .map(|c| c.from)
                else {
                    return Err(path);
                };
                if let Some(pos) = path.iter().position(|&t| t == prev) {
                    let mut cycle: Vec<usize> = path[pos..].to_vec();
                    cycle.reverse();
                    // Start at the first task in file order, so the message is stable.
                    let first = (0..cycle.len()).min_by_key(|&i| cycle[i]).unwrap_or(0);
                    cycle.rotate_left(first);
                    cycle.push(cycle[0]);
                    return Err(cycle);
                }
                path.push(prev);
            }
        };
        done[next] = true;
        order.push(next);
        for c in channels.iter().filter(|c| c.from == next) {
            indegree[c.to] -= 1;
        }
    }
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(body: &str) -> Result<TaskGraph, SpecError> {
        TaskGraph::from_toml_str(&format!("name = \"g\"\n{body}"), "g.toml")
    }

    const THREE: &str = r#"
        [[task]]
        name = "a"
        kind = "relay"
        cpu = { pe = 0 }
        [[task]]
        name = "b"
        kind = "relay"
        cpu = { pe = 1 }
        fpga = { pe = 1, board = 0 }
        [[task]]
        name = "c"
        kind = "relay"
        cpu = { pe = 2 }
    "#;

    #[test]
    fn patterns_become_channels_in_order() {
        let g = graph(&format!(
            "{THREE}
            [[edge]]
            from = \"a\"
            to = [\"b\", \"c\"]
            pattern = \"scatter\"
            bytes = 8
            [[edge]]
            from = [\"b\"]
            to = \"c\"
            pattern = \"gather\"
            bytes = 16"
        ))
        .unwrap();
        let pairs: Vec<(usize, usize, u64)> =
            g.channels.iter().map(|c| (c.from, c.to, c.bytes)).collect();
        assert_eq!(pairs, [(0, 1, 8), (0, 2, 8), (1, 2, 16)]);
        assert_eq!(g.order, [0, 1, 2]);
        assert_eq!(g.mappable(), [1]);
        assert_eq!(g.inputs(2).count(), 2);
    }

    #[test]
    fn order_follows_edges_not_file_order() {
        let g = graph(&format!(
            "{THREE}
            [[edge]]
            from = \"c\"
            to = \"a\"
            pattern = \"send\"
            bytes = 8"
        ))
        .unwrap();
        assert_eq!(g.order, [1, 2, 0]);
    }

    #[test]
    fn a_cycle_is_named() {
        let e = graph(&format!(
            "{THREE}
            [[edge]]
            from = \"a\"
            to = \"b\"
            pattern = \"send\"
            bytes = 8
            [[edge]]
            from = \"b\"
            to = \"c\"
            pattern = \"send\"
            bytes = 8
            [[edge]]
            from = \"c\"
            to = \"a\"
            pattern = \"send\"
            bytes = 8"
        ))
        .unwrap_err();
        assert!(e.problem.contains("cycle (a -> b -> c -> a)"), "{e}");
    }

    #[test]
    fn bad_input_is_named() {
        let cases = [
            (
                format!("{THREE}[[edge]]\nfrom = \"a\"\nto = \"zz\"\npattern = \"send\"\nbytes = 8"),
                "edge[0].to",
                "unknown task \"zz\"",
            ),
            (
                format!("{THREE}[[edge]]\nfrom = \"a\"\nto = [\"b\",\"c\"]\npattern = \"send\"\nbytes = 8"),
                "edge[0].pattern",
                "one source and one destination",
            ),
            (
                format!("{THREE}[[edge]]\nfrom = \"a\"\nto = \"b\"\npattern = \"send\"\nbytes = 0"),
                "edge[0].bytes",
                "must be",
            ),
            (
                format!(
                    "{THREE}[[edge]]\nfrom = \"a\"\nto = \"b\"\npattern = \"send\"\nbytes = 8\n[[edge]]\nfrom = \"a\"\nto = [\"c\", \"b\"]\npattern = \"broadcast\"\nbytes = 8"
                ),
                "edge[1].to",
                "already a channel",
            ),
            (
                "[[task]]\nname = \"a\"\nkind = \"k\"\n".to_string(),
                "task[0].cpu",
                "could run nowhere",
            ),
            (
                "[[task]]\nname = \"a\"\nkind = \"k\"\nfpga = { pe = 0 }".to_string(),
                "task[0].fpga",
                "names its board",
            ),
            (
                "[[task]]\nname = \"a\"\nkind = \"k\"\ncpu = { pe = 0 }\n[[task]]\nname = \"a\"\nkind = \"k\"\ncpu = { pe = 1 }".to_string(),
                "task[1].name",
                "defined twice",
            ),
            (
                "[[task]]\nname = \"a b\"\nkind = \"k\"\ncpu = { pe = 0 }".to_string(),
                "task[0].name",
                "not a task name",
            ),
            (
                "[[task]]\nname = \"a\"\nkind = \"k\"\ncpu_s = -1.0\ncpu = { pe = 0 }".to_string(),
                "task[0].cpu_s",
                ">= 0",
            ),
            ("iterations = 0\n[[task]]\nname = \"a\"\nkind = \"k\"\ncpu = { pe = 0 }".to_string(), "iterations", "must be"),
            ("".to_string(), "task", "no [[task]]"),
            ("[[task]]\nname = \"a\"\nkind = \"k\"\ncpu = { pe = 0 }\ncolour = 1".to_string(), "line 1", "unknown field"),
        ];
        for (body, field, problem) in cases {
            let e = graph(&body).expect_err(&body);
            assert_eq!(e.file, "g.toml");
            assert!(
                e.field
                    .starts_with(field.split(' ').next().unwrap_or(field)),
                "{body}\n-> {e}"
            );
            assert!(e.problem.contains(problem), "{body}\n-> {e}");
        }
    }
}
