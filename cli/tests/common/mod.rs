//! Helpers shared by the integration tests: process liveness read from `/proc`,
//! independently of the launcher's own bookkeeping.

#![allow(dead_code)]

/// Whether a process exists and is not a zombie (read independently of the launcher).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rfind(')')
                .and_then(|i| stat[i + 1..].split_whitespace().next());
            !matches!(state, Some("Z") | Some("X") | None)
        }
        Err(_) => false,
    }
}

/// Live (non-zombie) processes whose process group is `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(i) = stat.rfind(')') else { continue };
        let f: Vec<&str> = stat[i + 1..].split_whitespace().collect();
        if f.len() > 2 && f[2] == pgid.to_string() && f[0] != "Z" && f[0] != "X" {
            out.push(pid);
        }
    }
    out
}
