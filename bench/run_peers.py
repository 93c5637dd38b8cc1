#!/usr/bin/env python3
"""Run link checkers, one at a time, on the loopback site made by gen_site.py; score them.

    python bench/run_peers.py run --site /tmp/bench-site/200 [--tools a,b] [--reps 1]
    python bench/run_peers.py capacity --site /tmp/bench-site/2000   (wrk, the ceiling)
    python bench/run_peers.py report [--results DIR] > table.md

``run`` serves the site with ``bench/serve.py`` (unless it is served already, and then
stops it afterwards), runs each tool under ``/usr/bin/time -v timeout T``, rounds of
every tool in turn, and writes one JSON a run under ``RESULTS/<pages>/`` (``$BENCH_RESULTS``,
default /tmp/bench-results). A planted broken URL counts as found when the tool's own
output names it as failed; anything else it names as failed is a false report
(reports of a fragment apart, as false anchor reports). Requests are counted from nginx's
access log. The tool ``linkpatrol`` runs the command named by ``$LINKPATROL`` (default:
``linkpatrol`` on PATH). Peers come from ``bench/install_peers.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import serve  # noqa: E402
from bench.install_peers import NPM_BIN, PEERS  # noqa: E402

RUNS = Path(os.environ.get("BENCH_RUNS", "/tmp/bench-runs"))
RESULTS = Path(os.environ.get("BENCH_RESULTS", "/tmp/bench-results"))
CONC = 16
DEFAULT_TOOLS = ("linkchecker", "linkinator", "blc", "checklink", "wget2", "linklint")
ORDER = (
    "wget2",
    "linkinator",
    "linklint",
    "checklink",
    "blc",
    "linkchecker",
    "checklink-stock",
    "linkchecker-stock",
)

Parsed = dict[str, Any]  # checked (int or None), reported (URLs, fragments kept), note


def tool_specs(conc: int, start: str) -> dict[str, dict[str, Any]]:
    """Per tool: its command, environment, parser, version command and flags as quoted."""
    hostport = start.split("/")[2]
    linkchecker = str(PEERS / "venv" / "bin" / "linkchecker")
    linkpatrol = os.environ.get("LINKPATROL", "linkpatrol")
    checklink_env = {"W3C_CHECKLINK_CFG": str(PEERS / "checklink.conf")}
    return {
        "linkchecker": dict(
            cmd=[
                linkchecker,
                "-f",
                str(PEERS / "linkcheckerrc"),
                "--check-extern",
                "-t",
                str(conc),
                "--no-status",
                start,
            ],
            parse="linkchecker",
            version=[linkchecker, "--version"],
            flags=f"--check-extern -t {conc} --no-status, rc: maxrequestspersecond=100000 "
            "(+ server sends the `LinkChecker` header that unlocks >10 req/s)",
        ),
        "linkchecker-stock": dict(
            cmd=[linkchecker, "--check-extern", "--no-status", start],
            parse="linkchecker",
            version=[linkchecker, "--version"],
            flags="--check-extern --no-status (default 10 threads, default throttle: "
            "0.1-0.6 s between requests to one host)",
        ),
        "linkinator": dict(
            cmd=[
                str(NPM_BIN / "linkinator"),
                start,
                "--recurse",
                "--concurrency",
                str(conc),
                "--format",
                "json",
                "--timeout",
                "30000",
            ],
            parse="linkinator",
            version=[str(NPM_BIN / "linkinator"), "--version"],
            flags=f"--recurse --concurrency {conc} --format json --timeout 30000",
        ),
        "blc": dict(
            cmd=[
                str(NPM_BIN / "blc"),
                start,
                "--recursive",
                "--filter-level",
                "3",
                "--requests",
                str(conc),
                "--host-requests",
                str(conc),
            ],
            parse="blc",
            version=[str(NPM_BIN / "blc"), "--version"],
            flags=f"--recursive --filter-level 3 --requests {conc} --host-requests {conc}",
        ),
        "checklink": dict(
            cmd=[str(PEERS / "checklink-nosleep"), "--recursive", "--sleep", "0", start],
            env=checklink_env,
            parse="checklink",
            version=["/usr/bin/checklink", "--version"],
            flags="--recursive --sleep 0 (copy of /usr/bin/checklink with the 1 s minimum "
            "sleep check removed; cfg Allow_Private_IPs=1)",
        ),
        "checklink-stock": dict(
            cmd=["/usr/bin/checklink", "--recursive", start],
            env=checklink_env,
            parse="checklink",
            version=["/usr/bin/checklink", "--version"],
            flags="--recursive (stock: sleeps 1 s between requests to one server; "
            "cfg Allow_Private_IPs=1)",
        ),
        "wget2": dict(
            cmd=[
                "wget2",
                "--spider",
                "-r",
                "-l",
                "0",
                f"--max-threads={conc}",
                "--robots=off",
                "--tries=1",
                "--timeout=30",
                start,
            ],
            parse="wget2",
            version=["wget2", "--version"],
            flags=f"--spider -r -l 0 --max-threads={conc} --robots=off --tries=1 --timeout=30",
        ),
        "linkpatrol": dict(
            cmd=[
                linkpatrol,
                "check",
                start,
                "--format",
                "json",
                "--output",
                "report.json",
                "-q",
                "--db",
                "bench.db",
                "--concurrency",
                str(conc),
            ],
            parse="linkpatrol",
            version=[linkpatrol, "--version"],
            flags=f"check --format json -q --db (fresh) --concurrency {conc}",
        ),
        "linklint": dict(
            cmd=[
                "linklint",
                "-http",
                "-host",
                hostport,
                "-limit",
                "1000000",
                "-net",
                "-doc",
                "doc",
                "/@",
            ],
            parse="linklint",
            version=["linklint", "-version"],
            flags=f"-http -host {hostport} -limit 1000000 -net -doc doc /@",
        ),
    }


# Each parser reads a run's folder: the tool's stdout and stderr, and its own files.


def norm(url: str) -> str:
    return urldefrag(url)[0]


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


def parse_linkchecker(d: Path, start: str) -> Parsed:
    out = read(d / "stdout")
    reported = set()
    for block in out.split("\n\n"):
        url = re.search(r"^Real URL\s+(\S+)", block, re.M)
        if url and re.search(r"^Result\s+Error", block, re.M):
            reported.add(url.group(1))
    m = re.search(r"That's it\. (\d+) links? in (\d+) URLs? checked", out)
    return dict(
        checked=int(m.group(2)) if m else None,
        reported=reported,
        note=m.group(0) if m else "no summary line",
    )


def parse_linkinator(d: Path, start: str) -> Parsed:
    try:
        data = json.loads(read(d / "stdout"))
    except ValueError:
        return dict(checked=None, reported=set(), note="no JSON output")
    links = data.get("links", [])
    urls = {norm(x["url"]) for x in links}
    reported = {x["url"] for x in links if x.get("state") == "BROKEN"}
    return dict(
        checked=len(urls),
        reported=reported,
        note=f"{len(links)} link records, {len(urls)} distinct URLs",
    )


def parse_blc(d: Path, start: str) -> Parsed:
    out = read(d / "stdout")
    urls, reported = {norm(start)}, set()
    for m in re.finditer(r"^[├└]─+(OK|BROKEN)─+ (\S+)", out, re.M):
        urls.add(norm(m.group(2)))
        if m.group(1) == "BROKEN":
            reported.add(m.group(2))
    pages = len(re.findall(r"^Getting links from:", out, re.M))
    tot = re.findall(r"Finished! (\d+) links found\. (?:(\d+) excluded\. )?(\d+) broken", out)
    return dict(
        checked=len(urls),
        reported=reported,
        note=f"{pages} pages parsed; last summary {tot[-1] if tot else None}",
    )


def parse_checklink(d: Path, start: str) -> Parsed:
    out = read(d / "stdout")
    urls = {norm(start)}
    urls |= {norm(u) for u in re.findall(r"^Checking link (\S+)", out, re.M)}
    urls |= {norm(u) for u in re.findall(r"^(?:GET|HEAD) (\S+)", out, re.M)}
    reported: set[str] = set()
    for section in re.split(r"^List of broken links and other issues:", out, flags=re.M)[1:]:
        section = section.split("\n----------------------------------------")[0]
        current = None
        for line in section.splitlines():
            url = re.match(r"^(https?://\S+)\s*$", line)
            if url:
                current = url.group(1)
                continue
            code = re.match(r"^\s+Code: (\S+)", line)
            if code and current:
                if not code.group(1).startswith(("2", "3")):
                    reported.add(current)
                continue
            fragment = re.match(r"^\s+(\S+#\S+)", line)  # lines of broken fragments
            if fragment and "Line" not in line:
                reported.add(fragment.group(1))
    docs = re.search(r"Checked (\d+) documents? in ([\d.]+) seconds", out)
    return dict(
        checked=len(urls), reported=reported, note=docs.group(0) if docs else "no summary line"
    )


def parse_wget2(d: Path, start: str) -> Parsed:
    out, err = read(d / "stdout"), read(d / "stderr")
    tried = {
        norm(u) for u in re.findall(r"^\[\d+\] (?:Checking|Downloading) '(\S+)' \.\.\.", out, re.M)
    }
    answered: dict[str, list[int]] = {}
    for m in re.finditer(r"^HTTP (ERROR )?response (\d+) .*\[(\S+)\]$", out, re.M):
        answered.setdefault(norm(m.group(3)), []).append(int(m.group(2)))
    reported = {u for u, codes in answered.items() if any(c >= 400 for c in codes)}
    # wget2 prints a failed connection without its URL ("Failed to write N bytes (111:
    # Connection refused)"): a URL it tried that never got an answer counts as reported
    inferred = {u for u in tried if u not in answered}
    reported |= inferred
    fails = len(re.findall(r"Connection refused", err))
    tail = re.search(r"Downloaded: .*", out)
    return dict(
        checked=len(tried),
        reported=reported,
        inferred=sorted(inferred),
        note=f"{tail.group(0) if tail else 'no summary'}; "
        f"{fails} unattributed 'Connection refused' lines on stderr, "
        f"{len(inferred)} tried URLs with no response",
    )


def parse_linklint(d: Path, start: str) -> Parsed:
    doc = d / "doc"
    base = start.rstrip("/")

    def listed(name: str) -> list[str]:
        return [
            ln.strip()
            for ln in read(doc / name).splitlines(True)
            if ln.startswith("    ") and ln.strip()
        ]

    reported = {base + p if p.startswith("/") else p for p in listed("httpfail.txt")}
    reported |= set(listed("urlfail.txt"))
    summary, urlsum = read(doc / "summary.txt"), read(doc / "urlsum.txt")
    files = re.search(r"Linklint found (\d+) files", summary)
    nurls = re.search(r"Linklint checked (\d+) urls", urlsum)
    anchors = re.search(r"ERROR\s+(\d+) missing named anchors", summary)
    checked = (int(files.group(1)) if files else 0) + (int(nurls.group(1)) if nurls else 0)
    # errorA.txt lists the missing named anchors: reports of a fragment
    for line in read(doc / "errorA.txt").splitlines():
        s = line.strip()
        if "#" in s and not s.startswith("#"):
            reported.add(base + s if s.startswith("/") else s)
    return dict(
        checked=checked if files else None,
        reported=reported,
        note=f"{files.group(0) if files else ''}; {nurls.group(0) if nurls else ''}; "
        f"{anchors.group(0) if anchors else 'no anchor errors'}",
    )


def parse_linkpatrol(d: Path, start: str) -> Parsed:
    try:
        data = json.loads((d / "report.json").read_text())
    except (OSError, ValueError):
        return dict(checked=None, reported=set(), note="no JSON report")
    urls = data.get("urls", [])
    reported = {u["url"] for u in urls if u.get("state") == "broken"}
    return dict(
        checked=len(urls),
        reported=reported,
        note=f"{len(urls)} URLs, summary {data.get('summary')}",
    )


PARSERS: dict[str, Callable[[Path, str], Parsed]] = {
    "linkchecker": parse_linkchecker,
    "linkinator": parse_linkinator,
    "blc": parse_blc,
    "checklink": parse_checklink,
    "wget2": parse_wget2,
    "linklint": parse_linklint,
    "linkpatrol": parse_linkpatrol,
}


def parse_time_v(path: Path) -> dict[str, Any]:
    """Wall, CPU, peak RSS and exit status as ``/usr/bin/time -v`` wrote them."""
    text = read(path)

    def field(label: str) -> str | None:
        m = re.search(re.escape(label) + r":\s*(\S+)", text)
        return m.group(1) if m else None

    wall = field("Elapsed (wall clock) time (h:mm:ss or m:ss)")
    secs = 0.0
    for part in wall.split(":") if wall else ():
        secs = secs * 60 + float(part)
    return dict(
        wall_s=round(secs, 2),
        user_s=float(field("User time (seconds)") or 0),
        sys_s=float(field("System time (seconds)") or 0),
        max_rss_mb=round(int(field("Maximum resident set size (kbytes)") or 0) / 1024, 1),
        exit=int(field("Exit status") or -1),
    )


# how often the memory of a run's processes is read while it runs
TREE_SAMPLE = 0.1
LOG_FLUSH_S = 1.3  # nginx flushes its buffered access log every second


class TreeMemory:
    """The peak of a running command's process tree, read every ``TREE_SAMPLE`` s: the sum
    of its processes' resident memory (RSS: a page two processes share, as a forked
    worker shares its parent's, counts in each), and of their proportional shares (PSS:
    such a page counts once, split between them). A peak that lasts less than a sample
    can be missed."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.rss_mb = 0.0
        self.pss_mb = 0.0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        root = psutil.Process(self.pid)
        while not self._done.wait(TREE_SAMPLE):
            rss = pss = 0
            with contextlib.suppress(psutil.Error):
                for process in [root, *root.children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        memory = process.memory_full_info()
                        rss, pss = rss + memory.rss, pss + memory.pss
            self.rss_mb = max(self.rss_mb, rss / 2**20)
            self.pss_mb = max(self.pss_mb, pss / 2**20)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def log_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def error_lines(offset: int) -> int:
    """Lines nginx wrote to its error log since ``offset`` (should stay 0)."""
    try:
        with serve.ERROR_LOG.open("rb") as f:
            f.seek(offset)
            return len(f.read().splitlines())
    except OSError:
        return 0


def logged_answers(offset: int, since: float = 0.0) -> list[tuple[str, float]]:
    """Each answer nginx logged after ``offset``, once its buffered log is flushed: its
    port and method, and the moment it was sent (a line without one: any moment). Only
    the answers sent from ``since`` on: one logged late is another run's."""
    time.sleep(LOG_FLUSH_S)
    found: list[tuple[str, float]] = []
    with serve.ACCESS_LOG.open("rb") as f:
        f.seek(offset)
        for line in f.read().decode(errors="replace").splitlines():
            parts = line.split()
            if len(parts) >= 3 and (moment := _answered(parts)) >= since:
                found.append((f"{parts[0]} {parts[1]}", moment))
    return found


def _answered(parts: list[str]) -> float:
    try:
        return float(parts[-1])
    except ValueError:
        return math.inf


def counted(answers: list[tuple[str, float]]) -> dict[str, int]:
    """The answers by port and method."""
    return dict(Counter(key for key, _ in answers))


def server_counts(offset: int, since: float = 0.0) -> dict[str, int]:
    """Requests nginx logged after ``offset`` and answered from ``since`` on, by port and
    method."""
    return counted(logged_answers(offset, since))


def version_of(spec: dict[str, Any]) -> str:
    try:
        p = subprocess.run(spec["version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"? ({error})"
    for line in (p.stdout + p.stderr).strip().splitlines():
        m = re.search(r"(\d+\.\d+(?:\.\d+)?)", line)
        if m and "Copyright" not in line and "WARNING" not in line:
            return m.group(1)
    return "?"


def score(parsed: Parsed, truth: dict[str, Any]) -> dict[str, Any]:
    """Recall and false reports against the planted broken URLs."""
    want = {b["url"] for b in truth["broken"]}
    reported = parsed["reported"]
    plain = {norm(u) for u in reported if "#" not in u}
    fragments = {u for u in reported if "#" in u}
    found = want & plain
    by_kind: dict[str, list[int]] = {}
    for b in truth["broken"]:
        kind = by_kind.setdefault(b["kind"], [0, 0])
        kind[1] += 1
        kind[0] += b["url"] in found
    return dict(
        found=len(found),
        planted=len(want),
        recall=round(len(found) / len(want), 3),
        missed=sorted(want - found),
        false_reports=sorted(plain - want),
        false_anchor_reports=len(fragments),
        by_kind={k: f"{v[0]}/{v[1]}" for k, v in by_kind.items()},
    )


def ensure_server(site: Path) -> bool:
    """Serve ``site`` unless nginx serves it already; True if this started it."""
    if serve.running_pid() is not None:
        if serve.served_root() != site:
            sys.exit("run_peers: nginx is serving another site; python bench/serve.py stop")
        return False
    try:
        serve.start(site)
    except serve.ServeError as error:
        sys.exit(str(error))
    return True


def run_one(
    tool: str, spec: dict[str, Any], rep: int, label: str, timeout: int
) -> tuple[Path, dict[str, Any], float]:
    """One run of ``tool`` in a fresh folder: the folder, ``time``'s figures, its wall."""
    work = RUNS / label / f"{tool}-{rep}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    work.chmod(0o777)  # LinkChecker run as root drops to nobody
    env = dict(os.environ, **spec.get("env", {}))
    argv = [
        "/usr/bin/time",
        "-v",
        "-o",
        str(work / "time.txt"),
        "timeout",
        "-k",
        "10",
        str(timeout),
        *spec["cmd"],
    ]
    print(f"[{label}] {tool} rep {rep}: {' '.join(spec['cmd'])}", flush=True)
    with (work / "stdout").open("wb") as so, (work / "stderr").open("wb") as se:
        began_at = time.time()
        began = time.perf_counter()
        run = subprocess.Popen(
            argv, stdout=so, stderr=se, cwd=work, env=env, stdin=subprocess.DEVNULL
        )
        tree = TreeMemory(run.pid)
        run.wait()
        wall = time.perf_counter() - began
        ended_at = time.time()
        tree.stop()
    times = parse_time_v(work / "time.txt")
    times["began_at"], times["ended_at"] = began_at, ended_at
    # the tree under time and timeout, which add a little of their own
    times["tree_rss_mb"], times["tree_pss_mb"] = round(tree.rss_mb, 1), round(tree.pss_mb, 1)
    return work, times, wall


def quick_start(times: dict[str, Any], offset: int) -> dict[str, float | None]:
    """How long a run took from its start to the server's first answer, and from the
    server's last answer to its end (nginx logs each answer's moment, to the
    millisecond, as it is sent): a tool's fixed costs at either end. An answer logged
    before the run began is another's, flushed late to the log."""
    return ends_at(times, logged_answers(offset, times["began_at"]))


def ends_at(times: dict[str, Any], answers: list[tuple[str, float]]) -> dict[str, float | None]:
    """:func:`quick_start` of the run's answers."""
    moments = [moment for _, moment in answers if moment != math.inf]
    if not moments:
        return {"to_first_answer_s": None, "after_last_answer_s": None}
    return {
        "to_first_answer_s": round(min(moments) - times["began_at"], 3),
        "after_last_answer_s": round(times["ended_at"] - max(moments), 3),
    }


def ends_of(times: Mapping[str, Any]) -> float | None:
    """A run's fixed costs at either end: the seconds before the server's first answer and
    after its last (None where either was not measured)."""
    first, last = times.get("to_first_answer_s"), times.get("after_last_answer_s")
    return None if first is None or last is None else round(first + last, 3)


# the floor's rounds, kept apart from the tools' records (report() reads those)
FLOOR_DIR = "floor"
FLOOR_WORKERS = 2  # parse processes, as linkpatrol has on two cores


def run_floor(start: str, rep: int, results: Path) -> dict[str, Any]:
    """One round of the floor (``floor.py``: fetch, parse and resolve, nothing else) on
    the site, its record written under ``results``/floor."""
    from bench import floor

    wall, cpu, checked, broken = floor.one_round(start, FLOOR_WORKERS, "libxml2")
    record = {
        "tool": "floor",
        "rep": rep,
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 2),
        "urls_checked": checked,
        "broken": broken,
    }
    (results / FLOOR_DIR).mkdir(exist_ok=True)
    (results / FLOOR_DIR / f"floor-{rep}.json").write_text(json.dumps(record, indent=1))
    return record


def floor_walls(results: Path) -> list[float]:
    """The wall times of the floor's rounds recorded under ``results``, round by round."""
    found = [json.loads(f.read_text()) for f in (results / FLOOR_DIR).glob("floor-*.json")]
    return [r["wall_s"] for r in sorted(found, key=lambda r: r["rep"])]


def cmd_run(a: argparse.Namespace) -> None:
    site = a.site.resolve()
    truth = json.loads((site / "truth.json").read_text())
    pages = truth["counts"]["html_pages"]
    start = truth["start_url"]
    specs = tool_specs(a.conc, start)
    tools = a.tools.split(",") if a.tools else list(DEFAULT_TOOLS)
    for t in tools:
        if t not in specs:
            sys.exit(f"run_peers: unknown tool {t}; known: {', '.join(specs)}")
    label = a.label or str(pages)
    results = a.results / label
    results.mkdir(parents=True, exist_ok=True)
    started = ensure_server(site)
    try:
        versions = {t: version_of(specs[t]) for t in tools}
        for rep in range(1, a.reps + 1):
            for t in tools:
                spec = specs[t]
                offset, error_offset = log_size(serve.ACCESS_LOG), log_size(serve.ERROR_LOG)
                work, tv, wall = run_one(t, spec, rep, label, a.timeout)
                tv["time_v_wall_s"] = tv["wall_s"]
                tv["wall_s"] = round(wall, 3)  # GNU time rounds to 10 ms
                answers = logged_answers(offset, tv["began_at"])  # the log read once
                srv, ends = counted(answers), ends_at(tv, answers)
                srv_err = error_lines(error_offset)
                parsed = PARSERS[spec["parse"]](work, start)
                sc = score(parsed, truth)
                checked = parsed["checked"]
                rec = dict(
                    tool=t,
                    variant=a.label,
                    version=versions[t],
                    flags=spec["flags"],
                    cmd=spec["cmd"],
                    env=spec.get("env", {}),
                    pages=pages,
                    rep=rep,
                    timeout_s=a.timeout,
                    timed_out=tv["exit"] in (124, 137),
                    **tv,
                    cpu_s=round(tv["user_s"] + tv["sys_s"], 2),
                    urls_checked=checked,
                    urls_per_s=round(checked / tv["wall_s"], 1)
                    if checked and tv["wall_s"]
                    else None,
                    server_requests=srv,
                    server_requests_total=sum(srv.values()),
                    server_error_log_lines=srv_err,
                    **ends,
                    tool_note=parsed.get("note"),
                    inferred=parsed.get("inferred"),
                    truth_distinct_urls=truth["counts"]["distinct_urls"],
                    **sc,
                )
                (results / f"{t}-{rep}.json").write_text(json.dumps(rec, indent=1))
                print(
                    f"   wall {tv['wall_s']} s  cpu {rec['cpu_s']} s  rss {tv['max_rss_mb']} MB"
                    f"  urls {checked}  found {sc['found']}/{sc['planted']}"
                    f"  fp {len(sc['false_reports'])} (+{sc['false_anchor_reports']} anchor)"
                    f"  srv {rec['server_requests_total']} (errlog +{srv_err})"
                    f"  first answer +{ends['to_first_answer_s']} s"
                    f"  last answer -{ends['after_last_answer_s']} s"
                    f"  exit {tv['exit']}",
                    flush=True,
                )
            if a.floor:  # in the same round, under the same load as the tools
                floor = run_floor(start, rep, results)
                print(f"   the floor: wall {floor['wall_s']} s  cpu {floor['cpu_s']} s", flush=True)
    finally:
        if started:
            serve.stop()


def cmd_capacity(a: argparse.Namespace) -> None:
    site = a.site.resolve()
    truth = json.loads((site / "truth.json").read_text())
    started = ensure_server(site)
    try:
        page = next(p for p in sorted(os.listdir(site / "site" / "s0")) if p.startswith("page-"))
        url = truth["start_url"] + "s0/" + page
        size = (site / "site" / "s0" / page).stat().st_size
        found = []
        for threads, conns in ((1, 4), (2, 16)):
            p = subprocess.run(
                ["timeout", "30", "wrk", f"-t{threads}", f"-c{conns}", "-d10s", "--latency", url],
                capture_output=True,
                text=True,
            )
            rps = re.search(r"Requests/sec:\s+([\d.]+)", p.stdout)
            found.append(
                dict(
                    url=url,
                    page_bytes=size,
                    threads=threads,
                    connections=conns,
                    duration_s=10,
                    requests_per_s=float(rps.group(1)) if rps else None,
                    raw=p.stdout,
                )
            )
            print(
                f"wrk -t{threads} -c{conns} -d10s {url} ({size} B): "
                f"{rps.group(1) if rps else '?'} req/s",
                flush=True,
            )
        a.results.mkdir(parents=True, exist_ok=True)
        (a.results / "capacity.json").write_text(json.dumps(found, indent=1))
    finally:
        if started:
            serve.stop()


def report(results: Path) -> str:
    """A Markdown table of every run under ``results``: per tool, its median run."""
    rows = []
    for label in sorted(os.listdir(results), key=lambda x: (not x.isdigit(), x.zfill(9))):
        d = results / label
        if not d.is_dir():
            continue
        groups: dict[str, list[dict[str, Any]]] = {}
        for file in sorted(d.glob("*.json")):
            r = json.loads(file.read_text())
            groups.setdefault(r["tool"], []).append(r)
        for tool, rs in groups.items():
            rs.sort(key=lambda r: r["wall_s"])
            med = rs[len(rs) // 2]  # by wall time (the upper median for an even count)
            name = tool + (f" [{med['variant']}]" if med.get("variant") else "")
            rows.append((med["pages"], name, med, rs))
    rows.sort(
        key=lambda x: (
            x[0],
            bool(x[2].get("variant")),
            ORDER.index(x[2]["tool"]) if x[2]["tool"] in ORDER else 99,
        )
    )
    lines = [
        "| tool | version | pages | reps | wall s (median) | wall s (min-max) | CPU s "
        "| peak RSS MB | URLs checked (truth) | URLs/s | server requests | recall "
        "| false reports (+anchor) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for pages, tool, m, rs in rows:
        walls = [r["wall_s"] for r in rs]
        timeout = " TIMEOUT" if m["timed_out"] else ""
        lines.append(
            f"| {tool} | {m['version']} | {pages} | {len(rs)} | {m['wall_s']}{timeout} | "
            f"{min(walls)}-{max(walls)} | {m['cpu_s']} | {m['max_rss_mb']} | "
            f"{m['urls_checked']} ({m['truth_distinct_urls']}) | {m['urls_per_s']} | "
            f"{m['server_requests_total']} | {m['found']}/{m['planted']} | "
            f"{len(m['false_reports'])} (+{m['false_anchor_reports']}) |"
        )
    lines += ["", "Flags per tool:"]
    seen = set()
    for _, tool, m, _ in rows:
        if tool not in seen:
            seen.add(tool)
            lines.append(f"- **{tool}**: `{m['flags']}`")
    lines += ["", "Misses and false reports (median run):"]
    for pages, tool, m, _ in rows:
        extra = f"; inferred from silence: {m['inferred']}" if m.get("inferred") else ""
        more = " ..." if len(m["false_reports"]) > 5 else ""
        lines.append(
            f"- {tool} @ {pages}: by kind {m['by_kind']}; missed {m['missed'] or 'none'}; "
            f"false {m['false_reports'][:5] or 'none'}{more}; "
            f"server {m['server_requests']}; tool says: {m['tool_note']}{extra}"
        )
    capacity = results / "capacity.json"
    if capacity.exists():
        lines.append("")
        for c in json.loads(capacity.read_text()):
            lines.append(
                f"- nginx ceiling: wrk -t{c['threads']} -c{c['connections']} "
                f"-d{c['duration_s']}s on one {c['page_bytes']} B page: "
                f"**{c['requests_per_s']:.0f} req/s**"
            )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--site", type=Path, required=True, help="folder made by gen_site.py")
    r.add_argument("--tools", default="", help=f"default: {','.join(DEFAULT_TOOLS)}")
    r.add_argument("--reps", type=int, default=1)
    r.add_argument("--timeout", type=int, default=600)
    r.add_argument("--conc", type=int, default=CONC)
    r.add_argument("--results", type=Path, default=RESULTS)
    r.add_argument("--label", default="", help="results subfolder (default: page count)")
    r.add_argument(
        "--floor", action="store_true", help="run the floor (floor.py) after each round's tools"
    )
    c = sub.add_parser("capacity")
    c.add_argument("--site", type=Path, required=True)
    c.add_argument("--results", type=Path, default=RESULTS)
    p = sub.add_parser("report")
    p.add_argument("--results", type=Path, default=RESULTS)
    a = ap.parse_args()
    if a.cmd == "run":
        cmd_run(a)
    elif a.cmd == "capacity":
        cmd_capacity(a)
    else:
        print(report(a.results))


if __name__ == "__main__":
    main()
