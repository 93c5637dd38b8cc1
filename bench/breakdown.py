#!/usr/bin/env python3
"""Where a crawl's time goes: its phases, each process and thread, and a page's stages.

    python bench/breakdown.py [--pages 2000] [--reps 5]

Serves the generated site as ``bench/run.py`` does (``bench/gen_site.py`` and
``bench/serve.py``) and runs ``linkpatrol check`` on it the same way (JSON report, a fresh SQLite
memory, ``--concurrency 16``), ``--reps`` times; then as many times each of the second
runs ``bench/run.py`` measures, over a copy of a first run's memory: with
``--recheck-good 1d``, and plain. The linkpatrol measured is the one installed in the
Python that runs this script. Prints the medians of:

- the wall time of each phase of each kind of run: the start (interpreter, imports,
  options, the memory opened), the crawl, the report (read from the memory and written),
  and the command's whole CPU time;
- each process's and thread's time on a core and time waiting for one (the kernel's
  run queue) in a first run: the crawler's main thread, its other threads (the memory's
  writer and the finishing thread), each parse worker and the report's helper, and
  nginx's CPU;
- what a parse worker does to a page, stage by stage, timed alone (best of five passes
  over every page of the site, in the order the crawl found them): sniffing the charset,
  libxml2's parse, the whole extraction (parse included), deciding the links (a fresh
  decider for each pass, so every link is decided once, as in a crawl), and the pickling
  of a page sent and of its answer.

Threads and processes are read from ``/proc`` every 10 ms, so Linux only; the last few
milliseconds of a process that ends are not seen (its total still counts: the crawl's
whole CPU time comes from the kernel's account of the command). Not part of the test
suite; ``tests/test_bench_breakdown.py`` runs it on a small site.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
POLL = 0.01  # seconds between two readings of /proc
sys.path.insert(0, str(HERE.parent))

from bench.kit import served_site  # noqa: E402

# Run by the Python linkpatrol is installed in: the command itself, with the moments its
# phases begin written to a file (CLOCK_MONOTONIC, which every process shares), and the
# names of its threads and its helper's process id.
_DRIVER = textwrap.dedent(
    """
    import atexit, json, sys, threading, time
    marks = {"threads": {}}
    start_thread = threading.Thread.start
    def start(self):
        start_thread(self)
        marks["threads"][str(self.native_id)] = self.name
    threading.Thread.start = start
    import linkpatrol.cli as cli
    import linkpatrol.report.json as report_json
    with_signals, start_helper = cli._with_signals, report_json.Helper.start
    async def crawl(*args):
        marks["crawl"] = time.monotonic()
        try:
            return await with_signals(*args)
        finally:
            marks["report"] = time.monotonic()
    def helper(*args, **kwargs):
        found = start_helper(*args, **kwargs)
        if found is not None:
            marks["helper"] = found.pid
        return found
    cli._with_signals, report_json.Helper.start = crawl, staticmethod(helper)
    def save(path=sys.argv[1]):
        with open(path, "w") as out:
            json.dump(marks, out)
    atexit.register(save)  # the command ends by os._exit, after the at-exit handlers
    sys.argv = ["linkpatrol", *sys.argv[2:]]
    cli.run()
    """
)

# Run by the same Python: each stage of a parse worker's work, over the site's pages.
_STAGES = textwrap.dedent(
    """
    import gc, json, pickle, sys, time
    from lxml import etree
    from linkpatrol import extract, parsepool, policy
    from linkpatrol.cli import _settings, build_parser
    from linkpatrol.extract import extract_html, sniff_encoding
    with open(sys.argv[1], "rb") as saved:
        pages = pickle.load(saved)  # (url, body) of every page, in the order found
    settings = _settings(build_parser().parse_args(["check", pages[0][0]]))
    parser = extract._parser()
    pages_found = [extract_html(body) for _, body in pages]
    def decide():
        decider = parsepool.LinkDecider(policy.Policy(settings))
        return [decider.page(found, url) for found, (url, _) in zip(pages_found, pages)]
    answers = [("ok", answer) for answer in decide()]
    def sent_and_read(messages):
        return [pickle.loads(pickle.dumps(message, 5)) for message in messages]
    stages = {
        "charset sniffed": lambda: [sniff_encoding(body, None) for _, body in pages],
        "libxml2's parse": lambda: [etree.fromstring(body, parser) for _, body in pages],
        "extraction (the parse included)": lambda: [extract_html(body) for _, body in pages],
        "links decided": decide,
        "page pickled and unpickled": lambda: sent_and_read(
            (url, body, None, "text/html") for url, body in pages
        ),
        "answer pickled and unpickled": lambda: sent_and_read(answers),
    }
    gc.disable()
    out = {}
    for name, run in stages.items():
        best = float("inf")
        for _ in range(5):
            began = time.perf_counter()
            run()
            best = min(best, time.perf_counter() - began)
        out[name] = best / len(pages) * 1e6
    out["links a page"] = sum(len(p.links) for p in pages_found) / len(pages)
    out["bytes a page"] = sum(len(body) for _, body in pages) / len(pages)
    json.dump(out, sys.stdout)
    """
)


@dataclass
class Task:
    """One thread of the command's process tree, as last read."""

    pid: int
    tid: int
    on_cpu: float = 0.0  # seconds
    waiting: float = 0.0  # seconds runnable, but waiting for a core


@dataclass
class Sampled:
    crawler: int = 0  # the command's process
    tasks: dict[int, Task] = field(default_factory=dict)
    nginx: float = 0.0  # nginx's CPU meanwhile, seconds


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii") as f:
            return f.read()
    except OSError:
        return ""


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for tid in _tasks_of(pid):
        found += [int(x) for x in _read(f"/proc/{pid}/task/{tid}/children").split()]
    return found


def _tasks_of(pid: int) -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def _schedstat(pid: int, tid: int) -> tuple[float, float] | None:
    fields = _read(f"/proc/{pid}/task/{tid}/schedstat").split()
    return (int(fields[0]) / 1e9, int(fields[1]) / 1e9) if len(fields) >= 2 else None


def _nginx_pids() -> list[int]:
    """The processes named nginx (none where the site is served otherwise)."""
    return [
        int(pid)
        for pid in os.listdir("/proc")
        if pid.isdigit() and _read(f"/proc/{pid}/comm").strip() == "nginx"
    ]


def _on_cpu(pids: Iterable[int]) -> float:
    total = 0.0
    for pid in pids:
        for tid in _tasks_of(pid):
            read = _schedstat(pid, tid)
            total += read[0] if read else 0.0
    return total


def run_once(python: str, args: list[str]) -> tuple[dict, Sampled, float, float]:
    """One run of ``linkpatrol ARGS``: its phase marks, its threads as sampled, its wall
    time from the spawn, and its whole CPU time (itself and the children it waited for)."""
    with (
        tempfile.TemporaryDirectory() as scratch,
        open(Path(scratch) / "stderr", "w+b") as errors,
    ):
        marks_file = Path(scratch) / "marks.json"
        nginx = _nginx_pids()
        nginx_before = _on_cpu(nginx)
        sampled = Sampled()
        spawned = time.monotonic()
        proc = subprocess.Popen(
            [python, "-c", _DRIVER, str(marks_file), *args],
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
        sampled.crawler = proc.pid
        tree = {proc.pid}
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            for member in list(tree):
                tree.update(_children(member))
                for tid in _tasks_of(member):
                    read = _schedstat(member, tid)
                    if read is not None:
                        sampled.tasks[tid] = Task(member, tid, *read)
            time.sleep(POLL)
        wall = time.monotonic() - spawned
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1) or not marks_file.exists():
            errors.seek(0)
            said = errors.read().decode(errors="replace")
            raise SystemExit(f"bench: linkpatrol failed ({code}): {said[-2000:]}")
        marks = json.loads(marks_file.read_text(encoding="utf-8"))
        marks["spawned"], marks["ended"] = spawned, spawned + wall
        sampled.nginx = _on_cpu(nginx) - nginx_before
        return marks, sampled, wall, usage.ru_utime + usage.ru_stime


def roles(marks: dict, sampled: Sampled) -> dict[str, Task]:
    """The sampled threads under the names of what they do."""
    named: dict[str, Task] = {}
    crawler = sampled.crawler
    thread_names = {int(k): v for k, v in marks.get("threads", {}).items()}
    workers: dict[int, str] = {}  # process id: its name, in the order they started
    for task in sorted(sampled.tasks.values(), key=lambda t: (t.pid, t.tid)):
        if task.pid == crawler:
            process = "crawler"
        elif task.pid == marks.get("helper"):
            process = "report's helper"
        else:
            process = workers.setdefault(task.pid, f"parse worker {len(workers) + 1}")
        if task.tid == crawler:
            named["crawler: main thread"] = task
        elif task.pid == crawler:
            named[f"crawler: thread {thread_names.get(task.tid, task.tid)}"] = task
        else:  # a process of one thread, but for one a library may start
            named[process if task.tid == task.pid else f"{process}: thread {task.tid}"] = task
    return named


def stages(python: str, start_url: str, urls: list[str]) -> dict[str, float]:
    """Each stage of a parse worker's work, per page, over the pages fetched from the site."""
    pages = []
    for url in urls:
        with urllib.request.urlopen(url, timeout=10) as answer:
            pages.append((url, answer.read()))
    with tempfile.NamedTemporaryFile("wb", suffix=".pickle", delete=False) as out:
        pickle.dump(pages, out)
    try:
        done = subprocess.run(
            [python, "-c", _STAGES, out.name], capture_output=True, text=True, check=False
        )
    finally:
        os.unlink(out.name)
    if done.returncode:
        raise SystemExit(f"bench: the stages failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


# the runs timed, each on its own memory: a first run, then the two second runs over a
# copy of a first run's memory (nothing changed on the site)
RUNS = {
    "first run": None,
    "--recheck-good 1d": ["--recheck-good", "1d"],
    "plain second run": [],
}


def measure(start_url: str, reps: int, python: str = sys.executable) -> dict:
    """``reps`` runs of each kind, by ``python`` (one linkpatrol is installed in): medians
    per phase, per role (of a first run), and the stages of a parse worker."""
    phases: dict[str, dict[str, list[float]]] = {run: {} for run in RUNS}
    requests: dict[str, list[int]] = {run: [] for run in RUNS}
    nginx: list[float] = []
    per_role: dict[str, list[tuple[float, float]]] = {}
    pages: list[str] = []
    with tempfile.TemporaryDirectory() as kept:
        remembered = Path(kept) / "first.db"  # a first run's memory
        for run, extra in RUNS.items():
            for _ in range(reps):
                with tempfile.TemporaryDirectory() as scratch:
                    report, db = Path(scratch) / "report.json", Path(scratch) / "bench.db"
                    if extra is not None:
                        shutil.copyfile(remembered, db)
                    args = ["check", start_url, "--format", "json", "--output", str(report)]
                    args += ["-q", "--db", str(db), "--concurrency", "16", *(extra or [])]
                    marks, sampled, wall, spent = run_once(python, args)
                    written = json.loads(report.read_text(encoding="utf-8"))
                    requests[run].append(written["summary"]["requests"])
                    if extra is None and not remembered.exists():
                        shutil.copyfile(db, remembered)  # closed: its log is checkpointed
                        urls = written["urls"]
                        pages = [
                            u["url"]
                            for u in urls
                            if u["action"] == "parse" and u["http_status"] == 200
                        ]
                took = {
                    "start": marks["crawl"] - marks["spawned"],
                    "crawl": marks["report"] - marks["crawl"],
                    "report": marks["ended"] - marks["report"],
                    "whole run": wall,
                    "CPU": spent,
                }
                for name, seconds in took.items():
                    phases[run].setdefault(name, []).append(seconds)
                if extra is None:
                    nginx.append(sampled.nginx)
                    for name, task in roles(marks, sampled).items():
                        per_role.setdefault(name, []).append((task.on_cpu, task.waiting))
    return {
        "reps": reps,
        "phases": {
            run: {name: statistics.median(values) for name, values in measured.items()}
            for run, measured in phases.items()
        },
        "requests": {run: statistics.median(made) for run, made in requests.items()},
        "nginx": statistics.median(nginx),
        "roles": {
            name: (
                statistics.median(r[0] for r in rows),
                statistics.median(r[1] for r in rows),
            )
            for name, rows in per_role.items()
        },
        "pages": len(pages),
        "stages": stages(python, start_url, pages) if pages else {},
    }


def markdown(result: dict) -> str:
    """The measurements as Markdown tables."""
    lines = [
        f"Medians of {result['reps']} runs of each kind; the second runs go over a copy of a "
        "first run's memory, nothing changed on the site.",
        "",
        "| run | start s | crawl s | report s | whole run s | CPU s | requests |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run, measured in result["phases"].items():
        seconds = " | ".join(f"{s:.3f}" for s in measured.values())
        lines.append(f"| {run} | {seconds} | {result['requests'][run]:.0f} |")
    lines += [
        "",
        f"A first run, by process and thread (nginx's CPU meanwhile: {result['nginx']:.2f} s):",
        "",
        "| process or thread | on a core s | waiting for a core s |",
        "|---|---:|---:|",
    ]
    for name, (on_cpu, waiting) in sorted(result["roles"].items(), key=lambda kv: -kv[1][0]):
        if on_cpu >= 0.005:
            lines.append(f"| {name} | {on_cpu:.3f} | {waiting:.3f} |")
    found = result["stages"]
    if found:
        lines += [
            "",
            f"A parse worker's stages, alone, per page ({result['pages']} pages of "
            f"{found['bytes a page'] / 1024:.1f} KB and {found['links a page']:.1f} links "
            "on average):",
            "",
            "| stage | us a page |",
            "|---|---:|",
        ]
        lines += [
            f"| {name} | {us:.1f} |"
            for name, us in found.items()
            if name not in ("links a page", "bytes a page")
        ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    with served_site(args.pages) as truth:
        result = measure(truth["start_url"], args.reps)
    print(f"# Where the time goes: {args.pages}-page generated site ({os.cpu_count()} cores)\n")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
