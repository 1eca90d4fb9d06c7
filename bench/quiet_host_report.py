"""The report of bench/quiet-host.sh: reads every round's raw figures and writes the table, JSON and chart.

    python3 bench/quiet_host_report.py WORK DEST

WORK holds r<round>/<part>/vs-perftest-gpu.json (bench/vs-perftest-gpu.sh, one round each) and
r<round>/comm.json (bench/comm-vs-tag.sh's JSON_FILE). DEST gets quiet-host.md, quiet-host.json and
quiet-host.svg. The run's facts come from the environment (Q_* variables, set by quiet-host.sh).
"""

import json
import os
import statistics
import sys
from collections import defaultdict
from html import escape
from pathlib import Path

PROGRESS = {"lat_caller": "caller", "lat_polling": "thread-polling", "lat_blocking": "thread-blocking",
            "bandwidth": "default"}
PEH = {"off": "off", "on": "on", "false": "off", "true": "on"}


def load(work):
    """Each run as (round, part, peh, row, tool, metric, value); the comm runs as (round, name, value)."""
    core, comm, raw = [], [], {}
    for rdir in sorted(Path(work).glob("r*"), key=lambda p: int(p.name[1:])):
        rnd = int(rdir.name[1:])
        for part in PROGRESS:
            f = rdir / part / "vs-perftest-gpu.json"
            if not f.exists():
                continue
            d = json.loads(f.read_text())
            raw[f"round {rnd} {part}"] = d
            for r in d["runs"]:
                if r["metric"] != "failed" and r["value"] is not None:
                    core.append((rnd, part, r["peer_error_handling"], r["row"], r["tool"], r["metric"], r["value"]))
        f = rdir / "comm.json"
        if f.exists():
            d = json.loads(f.read_text())
            raw[f"round {rnd} comm"] = d
            for name, values in d["runs"].items():
                comm.extend((rnd, name, v) for v in values)
    return core, comm, raw


def median(values):
    return statistics.median(values) if values else None


def ratio(a, b):
    return a / b if a is not None and b else None


def verdict(r, target):
    """'met' / 'not met' for a ratio against a target ('<= 1.5' or '>= 0.5'), '-' without one."""
    if not target:
        return "-"
    if r is None:
        return "no figure"
    op, limit = target.split()
    ok = r <= float(limit) if op == "<=" else r >= float(limit)
    return "**met**" if ok else "**not met**"


def main(work, dest):
    core, comm, raw = load(work)
    e = os.environ
    cells = defaultdict(list)
    for rnd, part, peh, row, tool, metric, value in core:
        # ucx_perftest has no progress mode: its runs of every part pool; ucx4j's stay per part.
        key = (peh, row, metric, tool, "-" if tool == "ucx_perftest" else part)
        cells[key].append(value)
    rows, figures = [], []

    def core_row(label, row, metric, part, target, unit_fmt):
        for peh in ("off", "on"):
            pt = median(cells.get((peh, row, metric, "ucx_perftest", "-"), []))
            uj = median(cells.get((peh, row, metric, "ucx4j", part), []))
            if pt is None and uj is None:
                continue
            r = ratio(uj, pt)
            n = len(cells.get((peh, row, metric, "ucx4j", part), []))
            figures.append({"figure": label, "peer_error_handling": peh, "ucx_perftest": pt, "ucx4j": uj,
                            "ratio": r, "target": target, "ucx4j_runs": n,
                            "ucx_perftest_runs": len(cells.get((peh, row, metric, "ucx_perftest", "-"), []))})
            rows.append(f"| {label} | {peh} | {unit_fmt(pt)} | {unit_fmt(uj)} | {fmt_ratio(r)} | "
                        f"{('ucx4j / perftest ' + target) if target else '-'} | {verdict(r, target)} |")

    lat = lambda x: "-" if x is None else f"{x:,.3f}"
    num = lambda x: "-" if x is None else f"{x:,.0f}"
    lines = ["| figure | peer error handling | ucx_perftest | ucx4j | ucx4j / perftest | target | |",
             "|---|---|---|---|---|---|---|"]
    core_row("tag 8 B latency p50, usec, caller", "tag_lat_8", "lat_p50", "lat_caller", "<= 1.5", lat)
    core_row("tag 8 B latency p50, usec, thread-polling", "tag_lat_8", "lat_p50", "lat_polling", "", lat)
    core_row("tag 8 B latency p50, usec, thread-blocking", "tag_lat_8", "lat_p50", "lat_blocking", "<= 2", lat)
    core_row("tag 8 B latency avg, usec, caller", "tag_lat_8", "lat_avg", "lat_caller", "", lat)
    core_row("tag 8 B message rate, msg/s, caller", "tag_rate_8", "rate", "lat_caller", ">= 0.5", num)
    core_row("tag 1 MiB bandwidth, MB/s", "tag_bw_1Mi", "bw", "bandwidth", "", num)
    core_row("tag 64 MiB bandwidth, MB/s", "tag_bw_64Mi", "bw", "bandwidth", "", num)
    lines += rows

    by_name = defaultdict(list)
    for _, name, value in comm:
        by_name[name].append(value)
    med = {name: median(v) for name, v in by_name.items()}
    comm_lines = ["| figure | peer error handling | core tag | ucx:// | tcp:// | ucx:// / tag | target | | "
                  "ucx:// / tcp:// | target | |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    comm_figures = []
    for key, label, tag_target in (("1Mi", "bandwidth 1 MiB, MB/s", ">= 0.9"), ("64Mi", "bandwidth 64 MiB, MB/s", ">= 0.9"),
                                   ("rt", "1 KiB round trips/s", ">= 0.7")):
        tcp = med.get(f"tcp-{key}")
        for peh in ("true", "false"):
            tag, ucx = med.get(f"tag-{peh}-{key}"), med.get(f"ucx-{peh}-{key}")
            if tag is None and ucx is None:
                continue
            # The ucx:// >= 3x tcp:// is for the default settings: peer error handling on.
            tcp_target = ">= 3" if key != "rt" and peh == "true" else ""
            r_tag, r_tcp = ratio(ucx, tag), ratio(ucx, tcp)
            comm_figures.append({"figure": f"comm {label}", "peer_error_handling": PEH[peh], "core_tag": tag,
                                 "ucx": ucx, "tcp": tcp, "ucx_to_tag": r_tag, "ucx_to_tag_target": tag_target,
                                 "ucx_to_tcp": r_tcp, "ucx_to_tcp_target": tcp_target,
                                 "runs": len(by_name.get(f"ucx-{peh}-{key}", []))})
            comm_lines.append(f"| {label} | {PEH[peh]} | {num(tag)} | {num(ucx)} | {num(tcp)} | {fmt_ratio(r_tag)} | "
                              f"{tag_target} | {verdict(r_tag, tag_target)} | {fmt_ratio(r_tcp)} | {tcp_target or '-'} | "
                              f"{verdict(r_tcp, tcp_target)} |")

    failures = [f for f in e.get("Q_FAILURES", "").split("\n") if f]
    head = [f"# ucx4j beside ucx_perftest, host memory: {e['Q_MACHINE']}", "",
            f"{e['Q_DATE']}; CPU {e['Q_CPU'] or 'unknown'}; UCX {e['Q_UCX'] or 'unknown'}; {e['Q_UCX4J']}; "
            f"UCX settings for both tools: {e['Q_UCX_ENV'] or 'none'}; load average {e['Q_LOAD_START']} at the start, "
            f"{e['Q_LOAD_END']} at the end; {e['Q_DONE']} of {e['Q_PLANNED']} rounds in {e['Q_SECONDS']} s.", "",
            "Core tag messages, ucx4j (`ucx4j bench`) beside `ucx_perftest` with the same transports "
            "(peer error handling off: ucx_perftest's default, shared memory; on: `-e`, ucx4j's default, tcp "
            "for host memory):", ""]
    tail = ["", "Comm (`ucx4j bench --comm`, one frame a message, window 16) beside the core's tag messages and "
            "`tcp://` in the same round (`bench/comm-vs-tag.sh`); tcp:// does not depend on peer error handling:", ""]
    notes = ["", "Each cell: the median of its rounds (ucx_perftest's 8 B latency: of the three latency calls of "
             "every round); ratios of medians. Latency one-way (half a round trip), usec; bandwidth MB/s, "
             f"MB = 2^20 bytes; rates per second. Iterations: {e['Q_ITERS']}. Reproduce: `bin/gpu-run host` on "
             "the GPU machine, `bench/quiet-host.sh` elsewhere. Chart: quiet-host.svg."]
    if e.get("Q_STOPPED"):
        notes.append(e["Q_STOPPED"] + ".")
    if failures:
        notes += ["", "Failed (left out): " + "; ".join(failures) + "."]
    table = "\n".join(head + lines + tail + comm_lines + notes) + "\n"
    dest = Path(dest)
    (dest / "quiet-host.md").write_text(table)
    print(table)
    meta = {k[2:].lower(): v for k, v in e.items() if k.startswith("Q_")}
    meta["failures"] = failures
    (dest / "quiet-host.json").write_text(json.dumps(
        {"meta": meta, "core": figures, "comm": comm_figures, "rounds": raw}, indent=1))
    (dest / "quiet-host.svg").write_text(chart(figures, comm_figures, e["Q_MACHINE"]))


def fmt_ratio(r):
    return "-" if r is None else f"{r:.2f}"


def chart(figures, comm_figures, machine):
    """Horizontal bars: each ratio with a target, the target as a tick (left of it is better for '<=')."""
    bars = [(f"{f['figure']} (PEH {f['peer_error_handling']})", f["ratio"], f["target"]) for f in figures if f["target"]]
    bars += [(f"{f['figure']}, ucx:// / tag (PEH {f['peer_error_handling']})", f["ucx_to_tag"], f["ucx_to_tag_target"])
             for f in comm_figures if f["ucx_to_tag_target"]]
    bars += [(f"{f['figure']}, ucx:// / tcp:// (PEH {f['peer_error_handling']})", f["ucx_to_tcp"], f["ucx_to_tcp_target"])
             for f in comm_figures if f["ucx_to_tcp_target"]]
    top = max([r for _, r, _ in bars if r] + [float(t.split()[1]) for _, _, t in bars] + [1.0]) * 1.1
    label_w, plot_w, bar_h, gap = 430, 420, 18, 8
    height = 50 + len(bars) * (bar_h + gap) + 30
    x = lambda v: label_w + plot_w * v / top
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + plot_w + 70}" height="{height}" '
           'font-family="sans-serif" font-size="12">',
           f'<text x="10" y="20" font-size="14">ucx4j, host memory: ratios and their targets ({escape(machine)})</text>']
    for i, (label, r, target) in enumerate(bars):
        y = 40 + i * (bar_h + gap)
        op, limit = target.split()
        met = r is not None and (r <= float(limit) if op == "<=" else r >= float(limit))
        out.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{escape(label)}</text>')
        if r is not None:
            out.append(f'<rect x="{label_w}" y="{y}" width="{x(r) - label_w:.1f}" height="{bar_h}" '
                       f'fill="{"#4caf50" if met else "#e57373"}"/>')
            out.append(f'<text x="{x(r) + 4:.1f}" y="{y + 13}">{r:.2f}</text>')
        tx = x(float(limit))
        out.append(f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{y - 3}" y2="{y + bar_h + 3}" stroke="black" stroke-width="2"/>')
        out.append(f'<title>{escape(label)}: {"-" if r is None else f"{r:.2f}"}, target {escape(target)}</title>')
    base = 40 + len(bars) * (bar_h + gap)
    out.append(f'<line x1="{x(1):.1f}" x2="{x(1):.1f}" y1="35" y2="{base}" stroke="#888" stroke-dasharray="3,3"/>')
    out.append(f'<text x="{x(1):.1f}" y="{base + 15}" text-anchor="middle">1.0</text>')
    out.append(f'<text x="10" y="{base + 15}">green: target met; black tick: the target '
               '(latency: at most; the rest: at least)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
