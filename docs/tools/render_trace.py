#!/usr/bin/env python3
"""Draw a Chrome trace-event JSON file (what `tracer report --perfetto` writes) as a PNG.

    python3 docs/tools/render_trace.py trace.json out.png [--from-us T] [--to-us T]

A local stand-in for ui.perfetto.dev, which this machine cannot reach: one lane per thread
(named by the `thread_name` metadata), complete events (`X`) as slices, scheduler `running`
slices as a grey band under them, instant events (`i`) as markers, and counter events (`C`)
as a step line per counter. Every event is checked for the fields its phase needs first; a
file that fails the check is refused with the event and the missing field named.

Needs matplotlib (`pip install matplotlib`).
"""

import argparse
import itertools
import os
import json
import sys

NEEDS = {
    "X": ("name", "ts", "dur", "pid", "tid"),
    "i": ("name", "ts", "pid", "tid"),
    "C": ("name", "ts", "pid", "args"),
    "M": ("name", "pid", "args"),
}


def load(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"error: cannot read {path} as JSON: {e}\n"
                 "hint: write one with `tracer report FILE --perfetto OUT.json`")
    events = data["traceEvents"] if isinstance(data, dict) else data
    if not isinstance(events, list):
        sys.exit(f"error: {path}: traceEvents is not a list")
    for n, event in enumerate(events):
        phase = event.get("ph")
        if phase not in NEEDS:
            sys.exit(f"error: {path}: event {n} has phase {phase!r}\n"
                     f"hint: this renderer draws phases {', '.join(NEEDS)}")
        for field in NEEDS[phase]:
            if field not in event:
                sys.exit(f"error: {path}: event {n} ({phase} {event.get('name')!r}) has no {field!r}")
        if phase == "C" and not all(isinstance(v, (int, float)) for v in event["args"].values()):
            sys.exit(f"error: {path}: counter event {n} has a non-numeric value")
        if phase == "M" and "name" not in event["args"]:
            sys.exit(f"error: {path}: metadata event {n} has no args.name")
    return events


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("png")
    parser.add_argument("--from-us", type=float, default=None, help="start of the window (µs)")
    parser.add_argument("--to-us", type=float, default=None, help="end of the window (µs)")
    args = parser.parse_args()

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    events = load(args.trace)
    names = {}
    for e in events:
        if e["ph"] == "M" and e["name"] == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    timed = [e for e in events if e["ph"] != "M"]
    if not timed:
        sys.exit(f"error: {args.trace}: no timed events to draw")
    lo = args.from_us if args.from_us is not None else min(e["ts"] for e in timed)
    hi = args.to_us if args.to_us is not None else max(e["ts"] + e.get("dur", 0) for e in timed)

    def shown(e):
        return e["ts"] + e.get("dur", 0) >= lo and e["ts"] <= hi

    threads = sorted({(e["pid"], e["tid"]) for e in timed if e["ph"] in "Xi"})
    counters = sorted({(e["pid"], e["name"]) for e in timed if e["ph"] == "C"})
    rows = len(threads) + len(counters)
    fig, axes = plt.subplots(rows, 1, figsize=(13, 1.7 * rows + 0.6), sharex=True, squeeze=False)
    axes = [a[0] for a in axes]
    colours = plt.get_cmap("tab10")
    kinds = {}

    def colour(name):
        return colours(kinds.setdefault(name, len(kinds)) % 10)

    levels = itertools.cycle([0.0, 0.5])
    instant_levels = itertools.cycle([0.0, 0.45, 0.9])
    for ax, key in zip(axes, threads):
        ax.set_ylim(0, 4.3)
        ax.set_yticks([])
        ax.set_ylabel(names.get(key, f"{key[0]}/{key[1]}"), rotation=0, ha="right", va="center")
        for e in timed:
            if (e["pid"], e.get("tid")) != key or not shown(e):
                continue
            if e["ph"] == "X" and e["name"] == "running":
                ax.broken_barh([(e["ts"], e["dur"])], (0.1, 0.5), color="0.8")
                ax.text(e["ts"], 0.35, f"cpu{e['args'].get('cpu', '?')}", fontsize=6,
                        va="center", clip_on=True)
            elif e["ph"] == "X":
                width = max(e["dur"], (hi - lo) / 400)
                ax.broken_barh([(e["ts"], width)], (0.8, 0.9), color=colour(e["name"]))
                extra = f" ret={e['args']['ret']}" if "ret" in e["args"] else ""
                ax.text(e["ts"], 1.75 + next(levels) * 0.5, e["name"].rsplit(":", 1)[-1].split()[-1] + extra, fontsize=7,
                        clip_on=True)
            else:
                mark = "v" if e["name"].startswith("watch:") else "|"
                stagger = next(instant_levels)
                ax.plot([e["ts"]], [2.4], marker=mark, color=colour(e["name"]), markersize=8)
                label = e["name"]
                if "old" in e["args"]:
                    label += f" {e['args']['old']}->{e['args']['new']}"
                ax.text(e["ts"], 2.75 + stagger, label, fontsize=6, clip_on=True)
    for ax, (pid, name) in zip(axes[len(threads):], counters):
        points = sorted((e["ts"], sum(e["args"].values())) for e in timed
                        if e["ph"] == "C" and e["pid"] == pid and e["name"] == name)
        ax.step([t for t, _ in points], [v for _, v in points], where="post", color="tab:red")
        ax.set_ylabel(f"{name}\n(pid {pid})", rotation=0, ha="right", va="center")
    axes[-1].set_xlim(lo, hi)
    axes[-1].set_xlabel("time since the start of the recording (µs)")
    fig.suptitle(f"{os.path.basename(args.trace)}: {len(timed)} events, {len(threads)} threads, "
                 f"{len(counters)} counter tracks")
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)
    print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
