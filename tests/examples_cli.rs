//! Tier 4: every example of `tracer --help`, of each `tracer SUBCOMMAND --help`, of README.md
//! and of docs/*.md runs as written and does what it says.
//!
//! The examples are read from the built binary's help, from README.md and from docs/*.md, so one
//! cannot be added without a check: [`EXAMPLES`] maps each example, word for word, to the
//! function that runs it, and [`every_example_has_a_check`] fails on an example without an entry
//! (and on an entry whose example is gone). Examples run in a directory holding `./prog` and
//! `./srv` (tests/workloads/prog.c and srv.c, built with the names and call counts the examples
//! assume), `./tracer-testprog` (the testprog workload), `./chain` and `./tracer-chain`
//! (tests/workloads/chain.c) and `./tl` (tests/workloads/timeline.c), so `./prog` is literally
//! `./prog`. What is substituted is said in each check: `1234` or `4422` becomes the pid of a
//! started workload, `make` runs a one-rule Makefile, and examples that trace the whole system
//! (no `-p`, no `-- COMMAND`) get a workload started after tracer's banner and, when they would
//! run until Ctrl-C, a SIGINT. Where a page shows output under an example, the check also
//! asserts that tracer prints those lines ([`assert_shown`]).
//!
//! This file is the index ([`EXAMPLES`]) and the finding of examples; the checks are in
//! tests/examples_cli/, one file per subcommand (`probe.rs`, `stat.rs`, ...), beside
//! `harness.rs` (the examples' directory, a started tracer, shared readers).
//!
//! Kernel-function examples need kprobes (or fentry): where the kernel has neither, each must
//! fail with the documented error and hints; they run for real in the VM tier
//! (tests/vm_kprobe.rs, `cargo xtask test`).

mod common;
#[path = "examples_cli/features.rs"]
mod features;
#[path = "examples_cli/harness.rs"]
mod harness;
#[path = "examples_cli/latency.rs"]
mod latency;
#[path = "examples_cli/list.rs"]
mod list;
#[path = "examples_cli/probe.rs"]
mod probe;
#[path = "examples_cli/profile.rs"]
mod profile;
#[path = "examples_cli/project.rs"]
mod project;
#[path = "examples_cli/record.rs"]
mod record;
#[path = "examples_cli/serve.rs"]
mod serve;
#[path = "examples_cli/stat.rs"]
mod stat;
#[path = "examples_cli/tools.rs"]
mod tools;
#[path = "examples_cli/trace.rs"]
mod trace;
#[path = "examples_cli/watch.rs"]
mod watch;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{has, json_lines, testprog, text, tracer_bin, Workload};
use features::*;
use harness::*;
use latency::*;
use list::*;
use probe::*;
use profile::*;
use project::*;
use record::*;
use serve::*;
use stat::*;
use tools::*;
use trace::*;
use tracer::kernel::features::{Feature, Status};
use watch::*;

type Check = fn(&Ctx, &str);

/// Every example, as printed, and its check. README examples are keyed as README shows them
/// (a fenced `sh` line, a `$ ` line or an inline `tracer ...` span).
const EXAMPLES: &[(&str, Check)] = &[
    // tracer --help
    ("tracer features", features_text),
    ("tracer features --json", features_json),
    // tracer features --help
    ("tracer features --json | jq .features.kprobes", features_jq),
    // tracer generate --help
    ("tracer generate complete-bash", generate_bash),
    ("tracer generate man ./man", generate_man),
    // tracer list --help
    ("tracer list 'syscalls:sys_enter_open*'", list_glob),
    ("tracer list -v sched_switch", list_verbose),
    ("tracer list --binary /usr/bin/bash 'read*'", list_binary),
    ("tracer list usdt:/usr/bin/python3", list_usdt_python),
    // tracer trace --help
    ("tracer trace -- cat /etc/hostname", trace_cat),
    ("tracer trace -e openat,read --failed -- cat /nope", trace_failed),
    (
        "tracer trace -y -P /etc/hostname -- cat /etc/hostname",
        trace_one_path,
    ),
    ("tracer trace -k -e write -- echo hi", trace_stacks),
    ("tracer trace -e '!%memory,%signal' -- ls /etc", trace_all_but_classes),
    ("tracer trace -c -- ls /", trace_summary),
    (
        "tracer trace -c -U name,calls,errors -S name -- ls /",
        trace_columns,
    ),
    (
        "tracer trace -e openat --filter 'filename ~ \"/etc/*\"' -- cat /etc/hostname",
        trace_filter,
    ),
    ("tracer trace -p 1234 -d 2s -o calls.txt", trace_pid),
    ("tracer trace -a -e execve,openat -d 2", trace_all),
    // docs/tools.md
    ("tracer trace -a -e kill,tkill,tgkill -d 2", trace_all_kill),
    ("tracer trace -a -e %%stat -d 2", trace_all_stat),
    ("tracer trace -a -e sync,syncfs,fsync,fdatasync -d 2", trace_all_sync),
    ("tracer trace -a -e %creds -d 2", trace_all_creds),
    ("tracer trace -a -e mount,umount2 -d 2", trace_all_mounts),
    ("tracer trace -a -e nanosleep,clock_nanosleep -d 2", trace_all_sleep),
    ("tracer trace -a -e exit_group -d 2", trace_all_exit),
    ("tracer trace -a -c -d 2", trace_all_summary),
    (
        "tracer probe --count-by name irq:irq_handler_entry -d 2",
        probe_hardirqs,
    ),
    (
        "tracer latency --from block:block_rq_issue --to block:block_rq_complete --key dev,sector --slower-than 0 -d 2",
        latency_biosnoop,
    ),
    (
        "tracer latency 'uprobe:libc.so.6:getaddrinfo(str(arg0))' --slower-than 0 -d 2",
        latency_gethostlatency,
    ),
    (
        "tracer latency --from block:block_io_start --to block:block_rq_issue --key dev,sector --slower-than 0 -s kernel --stack-at start -d 2",
        latency_biostacks,
    ),
    (
        "tracer latency --from sched:sched_switch --to sched:sched_waking --key prev_pid/pid --slower-than 3ms -s kernel -- ./tracer-testprog sleeps 1",
        latency_wakeuptime,
    ),
    (
        "tracer latency --from sched:sched_switch --to sched:sched_switch --key next_pid/prev_pid --by comm -d 2",
        latency_cpudist,
    ),
    (
        "tracer latency --from irq:irq_handler_entry --to irq:irq_handler_exit --key irq --by irq -d 2",
        latency_hardirqs,
    ),
    (
        "tracer probe --count-by cpu,comm --sum runtime sched:sched_stat_runtime -d 2",
        probe_cpuwalk,
    ),
    (
        "tracer latency uprobe:libssl.so.3:SSL_read uprobe:libssl.so.3:SSL_write uprobe:libssl.so.3:SSL_read_ex uprobe:libssl.so.3:SSL_write_ex uprobe:libssl.so.3:SSL_do_handshake -- python3 tls.py",
        latency_ssllatency,
    ),
    (
        "tracer latency uprobe:libssl.so.3:SSL_read uprobe:libssl.so.3:SSL_write uprobe:libssl.so.3:SSL_read_ex uprobe:libssl.so.3:SSL_write_ex uprobe:libssl.so.3:SSL_do_handshake --slower-than 0 -- python3 tls.py",
        latency_sslsnoop,
    ),
    (
        "tracer stat -a -e sched:sched_process_fork -I 1000",
        stat_forks_per_second,
    ),
    (
        "tracer probe --hist nr_sector --count-by comm block:block_rq_issue -d 2",
        probe_block_sizes,
    ),
    (
        "tracer probe --count-by comm -s user uprobe:libc.so.6:getenv -- ./prog",
        probe_stackcount,
    ),
    (
        "tracer probe 'sock:inet_sock_set_state(saddr, daddr, dport)' --filter 'newstate == TCP_SYN_SENT'",
        tcp_connect,
    ),
    (
        "tracer probe sock:inet_sock_set_state --filter 'protocol == IPPROTO_TCP'",
        tcp_states,
    ),
    (
        "tracer probe 'tcp:tcp_retransmit_skb(saddr, sport, daddr, dport, state)'",
        tcp_retransmits,
    ),
    ("tracer probe oom:mark_victim", oom_kill),
    (
        "tracer probe 'uprobe:libc.so.6:pthread_create(usym(arg2))' -- ./tracer-testprog counter 300",
        probe_threadsnoop,
    ),
    ("tracer probe 'vfs_*' --count-by probe", needs_kprobes),
    (
        "tracer probe --count-by comm,pid swap_read_folio",
        needs_kprobes,
    ),
    (
        "tracer probe 'lookup_fast(str(nd->last.name))' 'd_lookup%return(str(name->name))'",
        needs_kprobes,
    ),
    (
        "tracer latency xfs_file_read_iter xfs_file_write_iter xfs_file_open xfs_file_fsync",
        needs_kprobes,
    ),
    (
        "tracer latency 'xfs_file_read_iter(str(iocb->ki_filp->f_path.dentry->d_name.name), iocb->ki_pos)' 'xfs_file_write_iter(str(iocb->ki_filp->f_path.dentry->d_name.name), iocb->ki_pos)' 'xfs_file_open(str(file->f_path.dentry->d_name.name))' 'xfs_file_fsync(str(file->f_path.dentry->d_name.name))' --slower-than 0",
        needs_kprobes,
    ),
    (
        "tracer latency 'ext4_file_read_iter(str(iocb->ki_filp->f_path.dentry->d_name.name), iocb->ki_pos)' 'ext4_file_write_iter(str(iocb->ki_filp->f_path.dentry->d_name.name), iocb->ki_pos)' 'ext4_file_open(str(filp->f_path.dentry->d_name.name))' 'ext4_sync_file(str(file->f_path.dentry->d_name.name))' --slower-than 0",
        needs_kprobes,
    ),
    (
        "tracer probe 'md_flush_request(str(bio->bi_bdev->bd_disk->disk_name))'",
        needs_kprobes,
    ),
    (
        "tracer latency --from 'security_inode_create(str(dentry->d_name.name))' --to security_inode_unlink --key arg1 --slower-than 0",
        needs_kprobes,
    ),
    (
        "tracer probe 'unix_stream_read_actor(skb->len, str(skb->data))'",
        needs_kprobes,
    ),
    (
        "tracer probe --count-by 'sk->sk_max_ack_backlog' --hist 'sk->sk_ack_backlog' tcp_v4_syn_recv_sock tcp_v6_syn_recv_sock",
        needs_kprobes,
    ),
    (
        "tracer probe vfs_read vfs_write vfs_fsync vfs_open vfs_create --count-by probe -I 1s",
        needs_kprobes,
    ),
    (
        "tracer probe 'cap_capable(cap)' --count-by comm,cap",
        needs_kprobes,
    ),
    (
        "tracer probe 'inet_csk_accept%return(ret->__sk_common.skc_rcv_saddr, ret->__sk_common.skc_num, ret->__sk_common.skc_daddr, ret->__sk_common.skc_dport)'",
        needs_kprobes,
    ),
    ("tracer trace --format json -o calls.json -- true", trace_json),
    // tracer probe --help
    (
        "tracer probe syscalls:sys_enter_openat -- cat /etc/hostname",
        probe_openat_cat,
    ),
    (
        "tracer probe 'syscalls:sys_enter_open*' -p 1234 -f json",
        probe_pid_json,
    ),
    (
        "tracer probe 'uprobe:bash:readline(str(arg0))' 'uretprobe:bash:readline(str(ret))'",
        probe_bash_readline,
    ),
    (
        "tracer probe -s user uprobe:./prog:handle -c 5",
        probe_user_stacks,
    ),
    (
        "tracer probe --count-by comm raw_syscalls:sys_enter -d 2",
        probe_count_by_comm,
    ),
    (
        "tracer probe --hist ret --count-by comm syscalls:sys_exit_read -I 1s",
        probe_hist_interval,
    ),
    (
        "tracer probe syscalls:sys_exit_openat --filter 'ret < 0' -- cat /nonexistent",
        probe_filter_failed_opens,
    ),
    (
        "tracer probe do_sys_openat2 do_sys_openat2%return -c 10",
        needs_kprobes,
    ),
    (
        "tracer probe 'do_sys_openat2(filename, how->flags)'",
        needs_kprobes,
    ),
    // tracer watch --help
    ("tracer watch counter -- ./prog", watch_counter),
    (
        "tracer watch -p 1234 -t rw libc.so.6:environ",
        watch_pid_environ,
    ),
    ("tracer watch -t x my_function -- ./prog", watch_execute),
    ("tracer watch -s counter -- ./prog", watch_stack),
    ("tracer watch --kernel jiffies -c 5", watch_kernel_jiffies),
    // tracer serve --help, docs/serve.md
    ("tracer serve serve.toml", serve_docs_config),
    ("tracer serve serve.toml --listen 0.0.0.0:9435", serve_docs_config),
    // tracer latency --help
    ("tracer latency vfs_read", needs_kprobes),
    (
        "tracer latency vfs_read vfs_write vfs_open vfs_fsync",
        needs_kprobes,
    ),
    (
        "tracer latency uprobe:./prog:handle --slower-than 10ms",
        latency_slow_calls,
    ),
    (
        "tracer latency --from syscalls:sys_enter_read --to syscalls:sys_exit_read -I 1s",
        latency_read_interval,
    ),
    (
        "tracer latency --from sched:sched_wakeup --to sched:sched_switch --key pid/next_pid",
        latency_wakeup,
    ),
    (
        "tracer latency --from block:block_rq_issue --to block:block_rq_complete --key dev,sector",
        latency_block,
    ),
    (
        "tracer latency --from uprobe:./srv:submit --to uprobe:./srv:complete --key arg0",
        latency_srv,
    ),
    (
        "tracer latency --from irq:softirq_entry --to irq:softirq_exit --by vec",
        latency_softirqs,
    ),
    (
        "tracer latency --from writeback:writeback_start --to writeback:writeback_written --key sb_dev --by reason",
        latency_writeback,
    ),
    (
        "tracer latency uprobe:./prog:handle --slower-than 10ms -s",
        latency_slow_stacks,
    ),
    // tracer stat --help
    ("tracer stat -- make", stat_make),
    (
        "tracer stat -e syscalls:sys_enter_openat,page-faults -- ls",
        stat_ls,
    ),
    (
        "tracer stat -e '{task-clock,page-faults}' -x, -- ./prog",
        stat_group_csv,
    ),
    ("tracer stat -a -A -e cs -I 1000", stat_per_cpu_interval),
    (
        "tracer stat -p 1234 --per-thread --timeout 5000",
        stat_pid_per_thread,
    ),
    ("tracer stat -r 5 -e page-faults:u -- ./prog", stat_repeat),
    (
        "tracer stat -a --per-core -e task-clock -I 1000",
        stat_per_core_interval,
    ),
    ("tracer stat -p 1234 -- sleep 1", stat_pid_with_command),
    (STAT_RECORD, stat_record),
    ("tracer stat report -i counts.json -A", stat_report_per_cpu),
    // tracer record --help
    (
        "tracer record -P syscalls:sys_enter_openat -- cat /etc/hostname",
        record_default_file,
    ),
    (
        "tracer record -o t.tracer -P syscalls:sys_enter_openat -- cat /etc/hostname",
        record_openat_cat,
    ),
    (
        "tracer record -o t.tracer -W counter -P uprobe:./prog:work -e task-clock -F 999 -- ./prog",
        record_prog,
    ),
    (
        "tracer record -o t.tracer -e page-faults --period 1 --switches -d 2",
        record_page_faults,
    ),
    (
        "tracer record -o t.tracer --live -P 'syscalls:sys_enter_open*' -d 2",
        record_live,
    ),
    (
        "tracer record -o - -P 'syscalls:sys_enter_open*' | tracer report -",
        record_pipe_report,
    ),
    // tracer report --help
    ("tracer report", report_default_file),
    ("tracer report t.tracer", report_text),
    (
        "tracer report t.tracer --pid 1234 --source 'watch:*' --since 0.5 --until 2",
        report_filtered,
    ),
    ("tracer report t.tracer -f json | jq .", report_json_jq),
    ("tracer report t.tracer --perfetto t.json", report_perfetto),
    // README.md
    (
        "cargo xtask run -- probe syscalls:sys_enter_openat -- cat /etc/hostname",
        xtask_run_probe,
    ),
    ("cargo xtask test", xtask_test),
    ("cargo xtask dist", xtask_dist),
    ("dpkg -i target/dist/tracer_0.1.0_amd64.deb", readme_dpkg),
    ("tracer probe do_sys_open", readme_no_kprobes),
    ("tracer probe --transport perf", readme_transport),
    ("tracer probe uprobe:./prog:handle", readme_uprobe_args),
    // docs/probe.md, USDT probes
    ("tracer list usdt:./usdt", shown_as_documented),
    (
        "tracer probe usdt:./usdt:tracer:tick 'usdt:./usdt:mixed(arg0, str(arg2))' usdt:./usdt:tracer:global -- ./usdt",
        usdt_mixed,
    ),
    (
        "tracer probe usdt:./usdt:tracer:guarded -- ./usdt 3",
        usdt_guarded,
    ),
    (
        "tracer probe usdt:/usr/bin/python3:python:function__entry -- /usr/bin/python3 ticks.py",
        usdt_python,
    ),
    (
        "tracer probe --count-by arg1 usdt:./usdt:tracer:tick -- ./usdt",
        usdt_count_by,
    ),
    (
        "tracer stat -e syscalls:sys_enter_getppid,page-faults -- ./prog",
        stat_getppid,
    ),
    ("tracer list [PATTERN]", readme_list),
    ("tracer watch --summary counter -- ./prog", readme_watch_summary),
    // docs/probe.md (its `tracer probe syscalls:sys_enter_openat -- cat /etc/hostname` and
    // `tracer probe do_sys_open` are README's too, checked above)
    (
        "tracer probe uprobe:./tracer-testprog:tracer_testprog_target uretprobe:./tracer-testprog:tracer_testprog_target -f json -- ./tracer-testprog call 3",
        docs_probe_call_json,
    ),
    (
        "tracer probe uprobe:./chain:chain_target uretprobe:./chain:chain_target -- ./chain 2",
        docs_probe_chain_typed,
    ),
    (
        "tracer probe syscalls:sys_enter_execve -- sh -c '/bin/true one two; exit 0'",
        docs_probe_execve_argv,
    ),
    (
        "tracer probe --count-by filename syscalls:sys_enter_openat -- ./tracer-testprog open 3 /etc/hostname",
        docs_probe_count_by_filename,
    ),
    (
        "tracer probe --strlen 8 -f json 'syscalls:sys_enter_openat(filename)' --filter 'filename ~ \"/etc/h*\"' -- cat /etc/hostname",
        docs_probe_strlen_json,
    ),
    (
        "tracer probe 'do_sys_openat2(filename, how->flags, how->mode)' -- cat /etc/hostname",
        needs_kprobes,
    ),
    (
        "tracer probe 'tcp_connect(sk->__sk_common.skc_dport, sk->__sk_common.skc_daddr)'",
        needs_kprobes,
    ),
    (
        "tracer probe 'vfs_read(file->f_path.dentry->d_name.name, count)' --filter 'file->f_path.dentry->d_name.name == hostname' -- cat /etc/hostname",
        needs_kprobes,
    ),
    (
        "tracer probe fentry:do_sys_openat2 fexit:do_sys_openat2 -- cat /etc/hostname",
        needs_fentry,
    ),
    (
        "tracer probe 'uprobe:./chain:chain_target(where->y, where->label, count)' -- ./chain 2",
        docs_probe_chain_members,
    ),
    (
        "tracer probe 'syscalls:sys_enter_openat(filename)' --count-by 'flags' -d 2",
        docs_probe_count_by_flags,
    ),
    (
        "tracer probe -s user uprobe:./tracer-chain:chain_b -c 1 -p 4422",
        docs_probe_stack_pid,
    ),
    (
        "tracer probe --count-by comm,probe syscalls:sys_enter_getppid syscalls:sys_enter_getpgid -- ./tracer-testprog getppid 1000",
        docs_probe_count_by_comm_probe,
    ),
    (
        "tracer probe --hist ret uretprobe:./tracer-testprog:tracer_testprog_target -- ./tracer-testprog call 20",
        docs_probe_hist_ret,
    ),
    (
        "tracer probe syscalls:sys_exit_openat --filter 'ret < 0' -- ./tracer-testprog open 3 /nonexistent",
        docs_probe_filter_ret,
    ),
    (
        "tracer probe uprobe:./tracer-testprog:tracer_testprog_target --filter 'a >= 98 || b == 10' -- ./tracer-testprog call 100",
        docs_probe_filter_uprobe,
    ),
    (
        "tracer probe syscalls:sys_enter_openat --filter 'filenme ~ \"/etc/*\"' -- true",
        docs_probe_filter_typo,
    ),
    (
        "tracer probe --count-by probe 'syscalls:sys_enter_*' -- ./tracer-testprog getppid 1000",
        docs_probe_every_syscall,
    ),
    ("tracer probe 'watchpoint:0x1000:8:w'", docs_probe_bpftrace_pointer),
    (
        "tracer probe 'tracepoint:syscalls:sys_exit_read { @bytes = lhist(args.ret, 0, 4096, 512); }'",
        docs_probe_bpftrace_pointer,
    ),
    ("tracer probe -C 63 syscalls:sys_enter_getppid", docs_probe_offline_cpu),
    (
        "tracer probe syscalls:sys_enter_getppid -f json -o hits.json -- ./tracer-testprog getppid 3",
        docs_probe_output_file,
    ),
    (
        "tracer probe --comm cat --count-by comm syscalls:sys_enter_openat -- sh -c 'cat /etc/hostname'",
        docs_probe_comm_note,
    ),
    (
        "tracer probe --hist arg0 --linear 10,0,50 uprobe:./tracer-testprog:tracer_testprog_target -- ./tracer-testprog call 100",
        docs_probe_hist_linear,
    ),
    (
        "tracer probe --hist count --comm dd syscalls:sys_enter_read -- dd if=/dev/zero of=/dev/null bs=64K count=5 status=none",
        docs_probe_hist_bytes,
    ),
    // docs/latency.md
    (
        "tracer latency uprobe:./tracer-testprog:tracer_testprog_sleep --slower-than 60ms -- ./tracer-testprog sleeps 1",
        docs_latency_sleeps,
    ),
    (
        "tracer latency uprobe:./tracer-testprog:tracer_testprog_sleep --linear 1ms -- ./tracer-testprog sleeps 1",
        docs_latency_linear,
    ),
    (
        "tracer latency uprobe:./tracer-testprog:tracer_testprog_sleep --filter 'us >= 17500' -- ./tracer-testprog sleeps 1",
        docs_latency_filter,
    ),
    // docs/record.md (its `tracer report t.tracer` is `tracer report --help`'s too)
    (DOCS_RECORD_TL, docs_record_timeline),
    (DOCS_RECORD_STACKS, docs_record_stacks),
    ("tracer report s.tracer", docs_report_stacks),
    // docs/stat.md
    (
        "tracer stat -e syscalls:sys_enter_getppid,task-clock,page-faults,cycles -- ./tracer-testprog getppid 1000",
        docs_stat_getppid,
    ),
    (
        "tracer stat -x, -e syscalls:sys_enter_getppid,cycles -- ./tracer-testprog getppid 1000",
        docs_stat_csv,
    ),
    (
        "tracer stat -a --per-socket -e task-clock -- ./tracer-testprog getppid 1000",
        docs_stat_per_socket,
    ),
    (
        "tracer stat -x, -I 100 --summary -e syscalls:sys_enter_getppid -- ./tracer-testprog getppid 1000",
        docs_stat_summary,
    ),
    (
        "tracer stat -a -A -I 100 --interval-count 2 --metric-only -x, -- sleep 1",
        docs_stat_metric_only,
    ),
    // docs/watch.md
    (
        "tracer watch tracer_testprog_counter -- ./tracer-testprog counter 6",
        docs_watch_counter,
    ),
    (
        "tracer watch tracer_testprog_counter --summary -- ./tracer-testprog counter 3000",
        docs_watch_summary,
    ),
    // tracer profile --help, README.md and docs/profile.md
    ("tracer profile -- ./busy", profile_command),
    ("tracer profile -a -d 2 -f svg -o cpu.svg", profile_all_svg),
    ("tracer profile -f svg -o cpu.svg -- ./busy", profile_command_svg),
    (
        "tracer profile -p 1234 -F 999 -d 10 -f folded",
        profile_pid_folded,
    ),
    (
        "tracer profile --off-cpu --min-block 1ms -p 1234 -d 10",
        profile_off_cpu_pid,
    ),
    (
        "tracer profile --off-cpu --call-graph dwarf -p 1234 -d 10",
        profile_off_cpu_pid,
    ),
    ("tracer profile -a -d 2 -f pprof -o cpu.pb.gz", profile_all_pprof),
    (
        "tracer profile --call-graph dwarf -- gzip -9 -f -k big.txt",
        profile_dwarf,
    ),
    // docs/profile.md
    (
        "tracer profile -f pprof -o cpu.pb.gz -- ./busy",
        profile_command_pprof,
    ),
    ("go tool pprof -top cpu.pb.gz", profile_go_pprof_top),
    // docs/json.md
    (
        "tracer trace --format json -e openat -- head -c0 /etc/hostname | jq -c 'select(.args.filename == \"/etc/hostname\")'",
        docs_json_jq,
    ),
    // tracer serve --help, docs/serve.md
    ("tracer serve serve.toml --pprof", serve_docs_pprof),
    (
        "go tool pprof -top 'http://127.0.0.1:9435/debug/pprof/profile?seconds=2'",
        serve_docs_go_pprof,
    ),
];

/// docs/record.md's example, its `\` continuation lines joined.
const DOCS_RECORD_TL: &str = "tracer record -o t.tracer -W timeline_counter -P uprobe:./tl:timeline_step -P uretprobe:./tl:timeline_step -P syscalls:sys_enter_getppid -e page-faults --period 1 --switches -- ./tl 3";

/// The subcommands whose help is searched (besides the top-level help).
fn subcommands(help: &str) -> Vec<String> {
    let mut subs = Vec::new();
    let mut in_commands = false;
    for line in help.lines() {
        if line == "Commands:" {
            in_commands = true;
        } else if in_commands {
            let Some(name) = line
                .strip_prefix("  ")
                .and_then(|l| l.split_whitespace().next())
            else {
                break;
            };
            if name != "help" {
                subs.push(name.to_string());
            }
        }
    }
    assert!(subs.len() >= 8, "subcommands in --help: {subs:?}\n{help}");
    subs
}

/// The `Examples:` lines of one help text, without their descriptions (which follow after two
/// or more spaces).
fn help_examples(help: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_examples = false;
    for line in help.lines() {
        if line == "Examples:" {
            in_examples = true;
        } else if in_examples {
            // The section ends at the first line that is not an indented example.
            let Some(example) = line.strip_prefix("  ") else {
                in_examples = false;
                continue;
            };
            let command = example.split("  ").next().unwrap().trim_end();
            assert!(command.starts_with("tracer "), "an example line: {line:?}");
            out.push(command.to_string());
        }
    }
    out
}

fn help_of(args: &[&str]) -> String {
    let out = common::Tracer::new(args)
        .command()
        .arg("--help")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}

/// Every example in the help texts, with where it was found.
fn examples_in_help() -> Vec<(String, String)> {
    let top = help_of(&[]);
    let mut out: Vec<(String, String)> = help_examples(&top)
        .into_iter()
        .map(|e| (e, "tracer --help".to_string()))
        .collect();
    for sub in subcommands(&top) {
        let examples = help_examples(&help_of(&[&sub]));
        assert!(
            !examples.is_empty(),
            "`tracer {sub} --help` has no examples"
        );
        out.extend(
            examples
                .into_iter()
                .map(|e| (e, format!("tracer {sub} --help"))),
        );
    }
    out
}

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap()
}

/// docs/*.md as (`docs/NAME.md`, text), by name.
fn docs() -> Vec<(String, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs");
    let mut pages: Vec<(String, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (format!("docs/{name}"), std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    pages.sort();
    assert!(pages.len() >= 5, "docs/*.md: {pages:?}");
    pages
}

/// A command shown in a Markdown page: where (`PAGE:LINE`), and for a `$ ` line the lines
/// shown under it (up to the next `$ ` line or the end of its block).
struct Shown {
    command: String,
    at: String,
    output: Vec<String>,
}

/// The shell commands of a Markdown page: each command line of a fenced `sh` block (comments
/// dropped), each `$ ` line of another fenced block, a line ending in `\` joined with the
/// next, and with `spans`, each inline code span outside the blocks that is a `tracer` command
/// with arguments (a bare `tracer SUBCOMMAND` names a command; it is no example). README's
/// spans are examples; docs/ pages mention flags in spans (`tracer probe -s`), so theirs are
/// not.
fn shown_in_markdown(page: &str, text: &str, spans: bool) -> Vec<Shown> {
    let mut out: Vec<Shown> = Vec::new();
    let mut fence: Option<String> = None;
    // The command being continued (its line ended in `\`), and whether the last `$ ` command
    // is still taking output lines.
    let mut continued = false;
    let mut taking_output = false;
    for (n, line) in text.lines().enumerate() {
        let at = format!("{page}:{}", n + 1);
        if let Some(lang) = line.strip_prefix("```") {
            fence = match fence {
                None => Some(lang.trim().to_string()),
                Some(_) => None,
            };
            continued = false;
            taking_output = false;
            continue;
        }
        if continued {
            let last = out.last_mut().unwrap();
            let rest = line.trim();
            continued = rest.ends_with('\\');
            last.command.push(' ');
            last.command
                .push_str(rest.trim_end_matches('\\').trim_end());
            continue;
        }
        let command = match fence.as_deref() {
            Some("sh") => {
                let command = line.split(" #").next().unwrap().trim();
                (!command.is_empty() && !command.starts_with('#')).then_some(command)
            }
            Some(_) => match line.strip_prefix("$ ") {
                Some(command) => Some(command.trim()),
                None => {
                    if taking_output {
                        out.last_mut().unwrap().output.push(line.to_string());
                    }
                    None
                }
            },
            None => {
                if spans {
                    for (i, span) in line.split('`').enumerate() {
                        if i % 2 == 1
                            && span.starts_with("tracer ")
                            && span.split_whitespace().count() > 2
                        {
                            out.push(Shown {
                                command: span.to_string(),
                                at: at.clone(),
                                output: Vec::new(),
                            });
                        }
                    }
                }
                None
            }
        };
        if let Some(command) = command {
            continued = command.ends_with('\\');
            taking_output = fence.as_deref() != Some("sh");
            out.push(Shown {
                command: command.trim_end_matches('\\').trim_end().to_string(),
                at,
                output: Vec::new(),
            });
        }
    }
    for shown in &mut out {
        while shown.output.last().is_some_and(|l| l.trim().is_empty()) {
            shown.output.pop();
        }
    }
    out
}

fn examples_of(shown: Vec<Shown>) -> Vec<(String, String)> {
    shown.into_iter().map(|s| (s.command, s.at)).collect()
}

/// The shell examples of README.md ([`shown_in_markdown`] with inline spans).
fn examples_in_readme(readme: &str) -> Vec<(String, String)> {
    examples_of(shown_in_markdown("README.md", readme, true))
}

/// The shell examples of docs/*.md ([`shown_in_markdown`] without inline spans).
fn examples_in_docs() -> Vec<(String, String)> {
    docs()
        .iter()
        .flat_map(|(page, text)| examples_of(shown_in_markdown(page, text, false)))
        .collect()
}

/// Every place README.md or a docs page shows `example` as a `$ ` line, with its output.
fn shown_places(example: &str) -> Vec<Shown> {
    let mut pages = vec![("README.md".to_string(), readme())];
    pages.extend(docs());
    pages
        .iter()
        .flat_map(|(page, text)| shown_in_markdown(page, text, page == "README.md"))
        .filter(|s| s.command == example && !s.output.is_empty())
        .collect()
}

/// `line` with what changes from run to run masked: hex numbers (`0x#`), decimal numbers
/// (`#`: times, pids, counts, sizes; not a digit inside a name such as `openat2` or `x86_64`,
/// nor the line of a `FILE.EXT:LINE` location, which must match), a rate's unit (`K/sec`,
/// `M/sec`) and runs of blanks.
fn masked(line: &str) -> String {
    // A rate's unit follows the machine's speed (perf stat's `603.735 K/sec`, `1.162 M/sec`).
    let line = (line.replace(" K/sec", " _/sec"))
        .replace(" M/sec", " _/sec")
        .replace(" G/sec", " _/sec");
    let chars: Vec<char> = line.trim().chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let in_name = i > 0 && (chars[i - 1].is_ascii_alphanumeric() || chars[i - 1] == '_');
        if c.is_whitespace() {
            out.push(' ');
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
        } else if c == '0' && chars.get(i + 1) == Some(&'x') && !in_name {
            out.push_str("0x#");
            i += 2;
            while i < chars.len() && chars[i].is_ascii_hexdigit() {
                i += 1;
            }
        } else if c.is_ascii_digit() && !in_name && !after_location(&out) {
            out.push('#');
            while i < chars.len()
                && (chars[i].is_ascii_digit()
                    || (matches!(chars[i], '.' | ',')
                        && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit())))
            {
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// True when `text` ends with `NAME.EXT:` (a source location's file, before its line).
fn after_location(text: &str) -> bool {
    let Some(file) = text.strip_suffix(':') else {
        return false;
    };
    let name = file
        .rsplit(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .next()
        .unwrap_or("");
    name.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (1..=3).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_lowercase())
    })
}

/// Asserts that every line a page shows under `example` is printed: in order, within stdout or
/// within stderr, equal once masked ([`masked`]). `...` lines (and `... (note)`) stand for lines
/// left out, a line starting with `... ` shows the end of one, blank lines are not compared,
/// and lines in `skip` (compared masked) are left to the check: a command's own output, whose
/// place among tracer's lines varies.
fn assert_shown(example: &str, stdout: &str, stderr: &str, skip: &[&str]) {
    let places = shown_places(example);
    assert!(!places.is_empty(), "no page shows output under {example:?}");
    let streams: [Vec<String>; 2] = [stdout, stderr].map(|s| s.lines().map(masked).collect());
    let skip: Vec<String> = skip.iter().map(|s| masked(s)).collect();
    for place in places {
        let mut next = [0usize; 2];
        for line in &place.output {
            let trimmed = line.trim();
            if trimmed.is_empty()
                || trimmed == "..."
                || trimmed.starts_with("... (")
                || skip.contains(&masked(line))
            {
                continue;
            }
            let found = match trimmed.strip_prefix("... ") {
                Some(end) => {
                    let end = masked(end);
                    find_line(&streams, &mut next, |l| l.ends_with(&format!(" {end}")))
                }
                None => {
                    let want = masked(line);
                    find_line(&streams, &mut next, |l| *l == want)
                }
            };
            assert!(
                found,
                "{} shows a line tracer did not print (or not in this order):\n  {line}\n\
                 stdout:\n{stdout}\nstderr:\n{stderr}",
                place.at
            );
        }
    }
}

/// Finds the next line matching `pred` in stdout, else in stderr, from where each was left.
fn find_line(
    streams: &[Vec<String>; 2],
    next: &mut [usize; 2],
    pred: impl Fn(&String) -> bool,
) -> bool {
    for (stream, at) in streams.iter().zip(next.iter_mut()) {
        if let Some(i) = stream[*at..].iter().position(&pred) {
            *at += i + 1;
            return true;
        }
    }
    false
}

#[test]
fn every_example_has_a_check() {
    let mut found = examples_in_help();
    found.extend(examples_in_readme(&readme()));
    found.extend(examples_in_docs());
    let missing: Vec<String> = found
        .iter()
        .filter(|(e, _)| !EXAMPLES.iter().any(|(k, _)| k == e))
        .map(|(e, at)| format!("  {e:?} ({at})"))
        .collect();
    assert!(
        missing.is_empty(),
        "examples without a check: add each to EXAMPLES in tests/examples_cli.rs\n{}",
        missing.join("\n")
    );
    let stale: Vec<&str> = EXAMPLES
        .iter()
        .map(|(k, _)| *k)
        .filter(|k| !found.iter().any(|(e, _)| e == k))
        .collect();
    assert!(
        stale.is_empty(),
        "checks of examples no longer shown: {stale:?}"
    );
    let keys: BTreeSet<&str> = EXAMPLES.iter().map(|(k, _)| *k).collect();
    assert_eq!(keys.len(), EXAMPLES.len(), "an example is listed twice");
}

#[test]
fn readme_examples_are_found() {
    let found = examples_in_readme(
        "a `tracer probe` and `tracer x -p 1`\n```sh\ncargo a   # b\n\n```\n```\n$ tracer y\nout\n```\n",
    );
    let found: Vec<&str> = found.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(found, ["tracer x -p 1", "cargo a", "tracer y"]);
}

#[test]
fn docs_examples_are_found() {
    let page = "a `tracer probe -s` and `tracer x -p 1`\n\
        ```\ntracer SYNOPSIS [OPTIONS]\n```\n\
        ```sh\ncargo a   # b\ncargo c \\\n  d\n```\n\
        ```\n$ tracer y \\\n    --z 1 \\\n    -- w\nout 1\n\n...\n\n$ tracer v\n```\n";
    let found = shown_in_markdown("docs/t.md", page, false);
    let got: Vec<(&str, &str, Vec<&str>)> = found
        .iter()
        .map(|s| {
            let output = s.output.iter().map(String::as_str).collect();
            (s.command.as_str(), s.at.as_str(), output)
        })
        .collect();
    assert_eq!(
        got,
        [
            ("cargo a", "docs/t.md:6", vec![]),
            ("cargo c d", "docs/t.md:7", vec![]),
            (
                "tracer y --z 1 -- w",
                "docs/t.md:11",
                vec!["out 1", "", "..."]
            ),
            ("tracer v", "docs/t.md:18", vec![]),
        ]
    );
    // The docs show every example their pages hold.
    let docs = examples_in_docs();
    assert!(
        docs.iter()
            .any(|(e, at)| e == DOCS_RECORD_TL && at.starts_with("docs/record.md:")),
        "{docs:?}"
    );
    assert!(docs.iter().all(|(e, _)| !e.contains("...")), "{docs:?}");
}

#[test]
fn masking_keeps_names_and_source_lines() {
    assert_eq!(
        masked("0.001134   0   29791/29793     tracer-testprog  x: 0 -> 1 at f+0x54 (main.rs:38)"),
        "# # #/# tracer-testprog x: # -> # at f+0x# (main.rs:38)"
    );
    assert_eq!(
        masked("  1,000      sys_enter_openat2 x86_64 #  603.735 K/sec"),
        "# sys_enter_openat2 x86_64 # # _/sec"
    );
    assert_eq!(
        masked("  1,000      sys_enter_openat2 x86_64 #    1.162 M/sec"),
        "# sys_enter_openat2 x86_64 # # _/sec"
    );
    assert_eq!(masked(r#"{"pid":8552,"a":-1}"#), r#"{"pid":#,"a":-#}"#);
}

/// Runs every example (`EXAMPLE=substring` runs only those containing it).
#[test]
fn examples_run_as_documented() {
    common::require_root();
    let only = std::env::var("EXAMPLE").ok();
    let ctx = Ctx::new();
    let mut failed = Vec::new();
    for (example, check) in EXAMPLES {
        if only.as_deref().is_some_and(|o| !example.contains(o)) {
            continue;
        }
        let _ = writeln!(std::io::stderr(), "example: {example}");
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&ctx, example)));
        if run.is_err() {
            failed.push(*example);
        }
    }
    assert!(
        failed.is_empty(),
        "examples that failed:\n  {}",
        failed.join("\n  ")
    );
}
