#!/usr/bin/env python3
"""Benchmark linkpatrol against its peers on a generated loopback site.

    python bench/run.py [--pages 2000] [--reps 3] [--tools linkpatrol,linklint,linkinator]
                        [--no-install] [--out bench/RESULTS.md]

``install_peers.py`` installs the peers named in ``--tools`` that are missing (apt, pip,
npm), ``gen_site.py`` writes a site with planted broken links, ``serve.py`` serves it with
nginx on 127.0.0.1, ``run_peers.py`` runs each tool under ``/usr/bin/time -v`` and scores
it. This script adds linkpatrol's ratios to each
peer and the cost of a second run over the same memory (``--recheck-good 1d``, and a
plain run that sends only conditional requests), has the floor (``floor.py``) run after
each round of the tools, judges the
targets set for linkpatrol's speed and memory (``targets.py``), and writes its Markdown
tables as the head of ``bench/RESULTS.md`` (``--out``): the head it replaces becomes the
newest section, and the sections below it are kept.
Not part of the test suite: it takes minutes and needs nginx and the peers.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from bench import gen_site, install_peers, results, run_peers, serve  # noqa: E402
from bench import targets as goals  # noqa: E402

ACCESS_LOG = serve.ACCESS_LOG
PEERS = ["linklint", "linkinator", "linkchecker", "checklink", "blc", "wget2"]


def sh(*cmd: str | Path, **kw: object) -> subprocess.CompletedProcess[str]:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], text=True, check=True, **kw)  # type: ignore[call-overload]


@functools.cache
def linkpatrol_command() -> str:
    found = shutil.which("linkpatrol")
    if not found:
        sys.exit("bench: 'linkpatrol' is not on PATH (pip install . first)")
    # compiled as an installed package is: an editable install under
    # PYTHONDONTWRITEBYTECODE would compile every module at every start
    package = Path(__file__).resolve().parent.parent / "linkpatrol"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
    return found


def load_runs(where: Path, label: str) -> list[dict]:
    """Every run's record, as run_peers.py wrote it."""
    return [json.loads(file.read_text()) for file in sorted((where / label).glob("*.json"))]


def median_runs(records: list[dict]) -> dict[str, dict]:
    """Per tool, the run with the median wall time."""
    by_tool: dict[str, list[dict]] = {}
    for record in records:
        by_tool.setdefault(record["tool"], []).append(record)
    chosen = {}
    for tool, runs in by_tool.items():
        runs.sort(key=lambda r: r["wall_s"])
        chosen[tool] = runs[len(runs) // 2]
    return chosen


def round_ratios(records: list[dict]) -> dict[str, list[float]]:
    """Per peer, linkpatrol's speed over the peer's in each round (a round runs every tool
    once, in turn): a machine that drifts during the benchmark moves both sides of a round
    alike, and the medians of each tool's own runs apart."""
    speed = {(r["tool"], r["rep"]): r["urls_per_s"] for r in records if r.get("urls_per_s")}
    ratios: dict[str, list[float]] = {}
    for (tool, rep), peer in sorted(speed.items()):
        ours = speed.get(("linkpatrol", rep))
        if tool != "linkpatrol" and ours:
            ratios.setdefault(tool, []).append(ours / peer)
    return ratios


def access_log_size() -> int:
    try:
        return ACCESS_LOG.stat().st_size
    except OSError:
        return 0


def server_requests_since(offset: int) -> dict[str, int]:
    time.sleep(1.3)  # nginx flushes its buffered log every second
    counts: dict[str, int] = {}
    with ACCESS_LOG.open("rb") as log:
        log.seek(offset)
        for line in log.read().decode(errors="replace").splitlines():
            parts = line.split()
            if len(parts) >= 3:
                key = f"{parts[1]} {parts[2]}"
                counts[key] = counts.get(key, 0) + 1
    return counts


def timed(cmd: list[str], cwd: Path) -> dict:
    started = time.perf_counter()
    before = os.times()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    after = os.times()
    wall = time.perf_counter() - started
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 2), "exit": proc.returncode}


def second_runs(site_dir: Path, start: str, reps: int) -> list[dict]:
    """First run, then --recheck-good 1d, then a plain conditional run, on one memory."""
    command = linkpatrol_command()
    rows = []
    running = serve.running_pid() is not None
    if not running:
        try:
            serve.start(site_dir)
        except serve.ServeError as error:
            sys.exit(str(error))
    try:
        for _ in range(reps):
            work = Path(tempfile.mkdtemp(prefix="lp-second-"))
            # the peer comparison's own command line, run by this linkpatrol
            base = [command, *run_peers.tool_specs(16, start)["linkpatrol"]["cmd"][1:]]
            for name, extra in (
                ("first run", []),
                ("--recheck-good 1d", ["--recheck-good", "1d"]),
                ("plain second run", []),
            ):
                offset = access_log_size()
                figures = timed(base + extra, work)
                figures["server"] = server_requests_since(offset)
                figures["name"] = name
                rows.append(figures)
            shutil.rmtree(work, ignore_errors=True)
    finally:
        if not running:
            serve.stop()
    return rows


def target_lines(records: list[dict], floors: list[float]) -> list[str]:
    """The targets of the tools' runs (``targets.py``), judged from the medians."""
    runs: dict[str, list[goals.Run]] = {}
    for record in records:
        run = goals.Run(record["wall_s"], record.get("tree_pss_mb"), run_peers.ends_of(record))
        runs.setdefault(record["tool"], []).append(run)
    return [
        "",
        f"The targets (medians; the floor: `floor.py`, two parse processes, {len(floors)} "
        f"round{'s' if len(floors) != 1 else ''}, each after the tools' round):",
        "",
        goals.table(goals.targets({"generated": runs}, {"generated": floors})),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--tools", default="linkpatrol,linklint,linkinator,linkchecker,wget2")
    parser.add_argument("--no-install", action="store_true", help="peers are installed already")
    parser.add_argument("--out", type=Path, default=results.FILE)
    args = parser.parse_args()

    tools = args.tools.split(",")
    if not args.no_install:
        install_peers.install(tools)
    site_dir = gen_site.default_out(args.pages, serve.SITE_PORT)
    if not (site_dir / "truth.json").is_file():
        generate: list[str | Path] = [
            HERE / "gen_site.py",
            "--pages",
            str(args.pages),
            "--out",
            site_dir,
        ]
        generate += ["--site-port", str(serve.SITE_PORT), "--ext-port", str(serve.EXT_PORT)]
        sh(sys.executable, *generate, "--dead-port", str(serve.DEAD_PORT))
    truth = json.loads((site_dir / "truth.json").read_text())
    records_dir = Path(tempfile.mkdtemp(prefix="lp-bench-results-"))
    env = dict(os.environ, LINKPATROL=linkpatrol_command(), BENCH_RESULTS=str(records_dir))
    sh(
        sys.executable,
        HERE / "run_peers.py",
        "run",
        "--site",
        site_dir,
        "--tools",
        args.tools,
        "--reps",
        str(args.reps),
        "--results",
        records_dir,
        "--floor",
        env=env,
    )
    label = str(truth["counts"]["html_pages"])
    records = load_runs(records_dir, label)
    floors = run_peers.floor_walls(records_dir / label)
    runs = median_runs(records)
    rounds = round_ratios(records)
    second = second_runs(site_dir, truth["start_url"], max(1, args.reps))

    build = subprocess.run(
        [linkpatrol_command(), "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    lines = [
        f"# Benchmark: {args.pages}-page generated site on 127.0.0.1 "
        f"({os.cpu_count()} cores, median of {args.reps})",
        "",
        f"linkpatrol: `{build}` (`LINKPATROL_COMPILE=1 pip install .` compiles; `pip install .`"
        " does not).",
        "",
        "| tool | wall s | CPU s | peak RSS MB | URLs | URLs/s | recall | false reports "
        "| server requests |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for tool, r in sorted(runs.items(), key=lambda kv: kv[1]["wall_s"]):
        lines.append(
            f"| {tool} | {r['wall_s']} | {r['cpu_s']} | {r['max_rss_mb']} | "
            f"{r['urls_checked']} | {r['urls_per_s']} | {r['found']}/{r['planted']} | "
            f"{len(r['false_reports'])} | {r['server_requests_total']} |"
        )
    ours = runs.get("linkpatrol")
    if ours and ours.get("urls_per_s"):
        lines += ["", "linkpatrol's speed (URLs/s) relative to each peer:", ""]
        for tool, r in sorted(runs.items()):
            if tool != "linkpatrol" and r.get("urls_per_s"):
                line = f"- {tool}: {ours['urls_per_s'] / r['urls_per_s']:.2f}x"
                if len(rounds.get(tool, ())) > 1:
                    each = sorted(rounds[tool])
                    line += (
                        f" (round by round {each[0]:.2f}x to {each[-1]:.2f}x, "
                        f"median {statistics.median(each):.2f}x)"
                    )
                lines.append(line)
    lines += target_lines(records, floors)
    lines += [
        "",
        "Second run over the same memory (nothing changed on the site):",
        "",
        "| run | wall s | CPU s | server requests | by method and status |",
        "|---|---:|---:|---:|---|",
    ]
    grouped: dict[str, list[dict]] = {}
    for row in second:
        grouped.setdefault(row["name"], []).append(row)
    first_wall = statistics.median(r["wall_s"] for r in grouped["first run"])
    for name, rows in grouped.items():
        row = sorted(rows, key=lambda r: r["wall_s"])[len(rows) // 2]
        detail = ", ".join(f"{k}: {v}" for k, v in sorted(row["server"].items()))
        ratio = f" ({row['wall_s'] / first_wall:.2f}x of first)" if name != "first run" else ""
        lines.append(
            f"| {name} | {row['wall_s']}{ratio} | {row['cpu_s']} | "
            f"{sum(row['server'].values())} | {detail} |"
        )
    text = "\n".join(lines) + "\n"
    results.record(args.out, text, head=True)  # the sections below it are kept
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
