//! `tracer profile --off-cpu`'s program on `sched_switch`.

use tracer_common::{names, OffCpuConfig, SlotConfig};

use super::{Bpf, Error, Slot, SlotKind};

impl Bpf {
    /// Configures and loads the off-CPU program (`tracer profile --off-cpu`, for
    /// `sched:sched_switch`): `config` (task filters, stack bits) goes to the reserved slot
    /// [`tracer_common::OFFCPU_SLOT`], which [`Bpf::stop`] then stops and whose counters
    /// [`Bpf::slot_stats`] reads. Returns the program's name for [`Bpf::named_program_fd`] and
    /// the slot.
    /// The blocks the off-CPU program saw begin and never saw end (`OffCpuConfig::unended`).
    pub fn offcpu_unended(&self) -> Result<u64, Error> {
        let config = (self.maps.offcpu_config.get(&0, 0)).map_err(|source| Error::MapUpdate {
            map: names::OFFCPU_CONFIG,
            source,
        })?;
        Ok(config.unended)
    }

    pub fn load_offcpu(
        &mut self,
        config: SlotConfig,
        offcpu: OffCpuConfig,
    ) -> Result<(&'static str, Slot), Error> {
        self.check_uses(&config)?;
        let id = tracer_common::OFFCPU_SLOT;
        if self.used.contains(&id) {
            return Err(Error::NoSlot {
                kind: "off-cpu",
                max: 1,
            });
        }
        self.set_config(id, config)?;
        (self.maps.offcpu_config.set(0, offcpu, 0)).map_err(|source| Error::MapUpdate {
            map: names::OFFCPU_CONFIG,
            source,
        })?;
        let name = "offcpu_switch";
        self.load_program(name, SlotKind::Tracepoint)?;
        self.used.push(id);
        Ok((
            name,
            Slot {
                kind: SlotKind::Tracepoint,
                id,
                name: name.to_string(),
                cookie: false,
            },
        ))
    }
}
