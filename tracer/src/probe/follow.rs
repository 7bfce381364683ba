//! Uprobes that follow their file. A program or library replaced at its path (a deploy, a
//! package upgrade: dpkg writes a new file and renames it over the old) is a new inode, and a
//! uprobe stays in the inode it was opened on, which no process started since runs: the
//! probe would stop counting without a word. A long run checks its probes' files
//! ([`Probe::follow`]) and attaches the same program to the new file too; the old file's
//! event stays, so processes still running the old code are still counted.

use tracer_common::UsdtArgs;

use super::resolve::Binary;
use super::{Attached, Probe};
use crate::bpf::Bpf;
use crate::kernel::tracefs::Tracefs;
use crate::plan::ProbeSpec;
use crate::Error;

/// What following a user probe's file needs: its spec (resolved again in the new file), the
/// process it is armed in, the file as opened, and a USDT probe's argument places (the slot
/// reads them, so the new file must keep them).
pub struct Follow {
    pub spec: ProbeSpec,
    pub pid: Option<u32>,
    pub binary: Binary,
    pub places: Option<UsdtArgs>,
}

/// A probe's file followed: where, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Followed {
    pub path: std::path::PathBuf,
    /// The inode probed before, and the one now (the same when rewritten in place).
    pub inodes: (u64, u64),
}

impl Followed {
    /// What was done, in words, for `probes` probes in the file (one: its name).
    pub fn line(&self, probes: &str) -> String {
        let path = self.path.display();
        match self.inodes {
            (old, new) if old == new => {
                format!("{probes}: {path} was rewritten in place: probed again")
            }
            (old, new) => format!(
                "{probes}: {path} was replaced (inode {old} is now {new}): the new file is probed \
                 too, and processes still running the old one are still counted"
            ),
        }
    }
}

impl Probe {
    /// The file of a user probe, as last opened.
    pub fn binary(&self) -> Option<Binary> {
        (self.follow.borrow().as_ref()).map(|follow| follow.binary.clone())
    }

    /// When the probe's file was replaced at its path since it was opened (or last followed),
    /// its program is attached to the file there now, and what was done is returned. A new
    /// inode is probed beside the old; a file rewritten in place (its code may have moved)
    /// has its event opened again instead. Cheap when nothing changed: one `stat`.
    pub fn follow(&self, bpf: &Bpf, fs: &Tracefs) -> Result<Option<Followed>, Error> {
        let mut follow = self.follow.borrow_mut();
        let Some(follow) = follow.as_mut() else {
            return Ok(None);
        };
        let Some(now) = follow.binary.replaced() else {
            return Ok(None);
        };
        let old = std::mem::replace(&mut follow.binary, now);
        // Once asked, not again until the file changes again, whatever the outcome.
        let opened = super::open_event(fs, &follow.spec, &mut None, None, follow.pid, 0)?;
        let Some(binary) = opened.binary.clone() else {
            return Ok(None);
        };
        follow.binary = binary.clone();
        let places = opened.usdt.as_ref().map(|site| site.places);
        if places != follow.places {
            return Err(Error::Runtime {
                message: format!(
                    "{}: {} was replaced, and its USDT probe reads its arguments from other \
                     places: the new file is not probed",
                    self.name,
                    binary.path.display()
                ),
                hints: vec!["reload or restart tracer to probe the new file".into()],
            });
        }
        let attached = Attached::disabled(bpf, self.slot.clone(), opened.event)?;
        attached.enable()?;
        let mut events = self.attached.borrow_mut();
        let followed = Followed {
            path: binary.path.clone(),
            inodes: (old.ino, binary.ino),
        };
        if old.dev == binary.dev && old.ino == binary.ino {
            // The old offset may be inside an instruction of the new code: its event goes
            // (after the new one started: no hit is missed in between).
            if let Some(latest) = events.last_mut() {
                *latest = attached;
            }
        } else {
            events.push(attached);
        }
        Ok(Some(followed))
    }
}

/// A long run's check of its user probes' files, at most once a second: one `stat` per file
/// (a glob may put thousands of probes in one library).
pub struct Follower {
    fs: Tracefs,
    checked: std::time::Instant,
}

impl Follower {
    pub fn new(fs: &Tracefs) -> Follower {
        Follower {
            fs: fs.clone(),
            checked: std::time::Instant::now(),
        }
    }

    /// [`Probe::follow`] for the probes of each file replaced, when a second has passed since
    /// the last check: a line for each file followed (naming its probe, or how many), or why a
    /// probe could not follow it.
    pub fn check<'a>(
        &mut self,
        bpf: &Bpf,
        probes: impl IntoIterator<Item = &'a Probe>,
    ) -> Vec<String> {
        if self.checked.elapsed() < std::time::Duration::from_secs(1) {
            return Vec::new();
        }
        self.checked = std::time::Instant::now();
        let mut replaced: hashbrown::HashMap<Binary, bool> = hashbrown::HashMap::new();
        // Files followed, in order: what was done, and the probes that did it.
        let mut done: Vec<(Followed, Vec<&str>)> = Vec::new();
        let mut lines = Vec::new();
        for probe in probes {
            let Some(binary) = probe.binary() else {
                continue;
            };
            if !*replaced
                .entry(binary)
                .or_insert_with_key(|b| b.replaced().is_some())
            {
                continue;
            }
            match probe.follow(bpf, &self.fs) {
                Ok(Some(followed)) => match done.iter_mut().find(|(f, _)| *f == followed) {
                    Some((_, names)) => names.push(&probe.name),
                    None => done.push((followed, vec![&probe.name])),
                },
                Ok(None) => {}
                Err(e) => lines.push(crate::describe(&e)),
            }
        }
        for (followed, names) in done {
            lines.push(match names.as_slice() {
                [one] => followed.line(one),
                many => followed.line(&format!("{} probes", many.len())),
            });
        }
        lines
    }
}
