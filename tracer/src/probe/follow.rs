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

impl Probe {
    /// When the probe's file was replaced at its path since it was opened (or last followed),
    /// its program is attached to the file there now, and the returned line says so. A new
    /// inode is probed beside the old; a file rewritten in place (its code may have moved)
    /// has its event opened again instead. Cheap when nothing changed: one `stat`.
    pub fn follow(&self, bpf: &Bpf, fs: &Tracefs) -> Result<Option<String>, Error> {
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
        let path = binary.path.display();
        let mut events = self.attached.borrow_mut();
        if old.dev == binary.dev && old.ino == binary.ino {
            // The old offset may be inside an instruction of the new code: its event goes
            // (after the new one started: no hit is missed in between).
            if let Some(latest) = events.last_mut() {
                *latest = attached;
            }
            return Ok(Some(format!(
                "{}: {path} was rewritten in place: probed again",
                self.name
            )));
        }
        events.push(attached);
        Ok(Some(format!(
            "{}: {path} was replaced (inode {} is now {}): the new file is probed too, and \
             processes still running the old one are still counted",
            self.name, old.ino, binary.ino
        )))
    }
}

/// A long run's check of its user probes' files, at most once a second (a `stat` per probe).
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

    /// [`Probe::follow`] for each of `probes`, when a second has passed since the last check:
    /// a line for each file followed, or why it could not be.
    pub fn check<'a>(
        &mut self,
        bpf: &Bpf,
        probes: impl IntoIterator<Item = &'a Probe>,
    ) -> Vec<String> {
        if self.checked.elapsed() < std::time::Duration::from_secs(1) {
            return Vec::new();
        }
        self.checked = std::time::Instant::now();
        (probes.into_iter())
            .filter_map(|probe| match probe.follow(bpf, &self.fs) {
                Ok(line) => line,
                Err(e) => Some(crate::describe(&e)),
            })
            .collect()
    }
}
