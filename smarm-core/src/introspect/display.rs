//! Human views: a process table and a process tree.

use super::{ActorInfo, RuntimeSnapshot, RuntimeTree, TreeNode};
use std::fmt;

/// An actor's label and registered names, as they follow its pid:
/// ` "label" [name, ...]`, each part only if it has one.
pub(crate) fn known_as(a: &ActorInfo) -> String {
    let mut s = String::new();
    if let Some(label) = &a.label {
        s.push_str(&format!(" {label:?}"));
    }
    if !a.names.is_empty() {
        s.push_str(&format!(" [{}]", a.names.join(", ")));
    }
    s
}

fn line(f: &mut fmt::Formatter<'_>, a: &ActorInfo) -> fmt::Result {
    let names = known_as(a);
    let waiting_on = a.waiting_on.map_or(String::new(), |w| format!(" on {w:?}"));
    write!(
        f,
        "{}{} {:?}{} mailbox={} links={} monitors={}{}",
        a.pid,
        names,
        a.state,
        waiting_on,
        a.mailbox_depth,
        a.links,
        a.monitors,
        if a.trap_exit { " trap_exit" } else { "" }
    )?;
    if a.overruns > 0 {
        write!(f, " overruns={}", a.overruns)?;
    }
    if let Some(c) = a.budget_cycles {
        write!(f, " cycles={c}")?;
    }
    match a.heap_bytes {
        Some(h) => write!(f, " heap={h}"),
        None => Ok(()),
    }
}

impl fmt::Display for RuntimeSnapshot {
    /// One line per actor, like Erlang's `i()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} actors", self.actors.len())?;
        for s in &self.schedulers {
            if s.spare {
                let now = if s.active { "running" } else { "stopped" };
                write!(f, "spare {now}, started {} times; ", s.spare_starts)?;
            }
            write!(
                f,
                "scheduler {}: {} resumes, {} parks ({} woken), {} steals",
                s.id, s.actors_run, s.parks, s.wakes, s.steals
            )?;
            if let Some(pid) = s.blocked_in {
                let names = self
                    .actors
                    .iter()
                    .find(|a| a.pid == pid)
                    .map_or(String::new(), known_as);
                write!(f, ", BLOCKED for {:?} in {pid}{names}", s.blocked_for)?;
            }
            if s.moved_off > 0 {
                write!(f, ", {} moved off", s.moved_off)?;
            }
            writeln!(f)?;
        }
        for a in &self.actors {
            line(f, a)?;
            writeln!(f)?;
        }
        Ok(())
    }
}

impl fmt::Display for RuntimeTree {
    /// The spawn forest, indented like `pstree`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn node(f: &mut fmt::Formatter<'_>, n: &TreeNode, depth: usize) -> fmt::Result {
            write!(f, "{:indent$}", "", indent = depth * 2)?;
            if n.orphaned {
                write!(f, "(orphan) ")?;
            }
            line(f, &n.info)?;
            writeln!(f)?;
            n.children.iter().try_for_each(|c| node(f, c, depth + 1))
        }
        self.roots.iter().try_for_each(|r| node(f, r, 0))
    }
}
