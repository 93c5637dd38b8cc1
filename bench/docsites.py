#!/usr/bin/env python3
"""Link checkers on real documentation sites: Debian's HTML manuals served on loopback.

    python bench/docsites.py [--sites postgresql,python,libstdc++,git]
                             [--tools linkpatrol,linklint] [--reps 1] [--no-install]
                             [--targets] [--out bench/RESULTS.md]

Installs the documentation packages that are missing with apt (postgresql-doc-15,
python3.11-doc, libstdc++-12-doc, git-doc), serves each manual's folder with one nginx on
127.0.0.1 (a port each, from 18091), and works out the ground truth from the files
themselves: from the manual's first page, every page it reaches through its links, and
of every link those pages hold to their own site, which have no file behind them (a
folder answers with its ``index.html``) and which name a ``#fragment`` that no ``id`` or
``<a name>`` of an existing page holds. Links to other sites are left out: nothing leaves
the machine. Then runs each tool on each manual in turn, kept to the site (linkpatrol
with ``--check-anchors`` and ``--include`` of the site; linklint without ``-net``, which
checks named anchors by itself; linkinator skipping every other URL; LinkChecker without
``--check-extern`` and ignoring every other URL) and prints, per manual and tool, the wall time, the
missing links and anchors found, the false reports, and the peak memory of the tool's
whole process tree (the sum of its processes' RSS, and of their PSS, which counts a page
shared by a forked process once). With ``--targets`` it runs linkpatrol with and without
``--check-anchors``, linklint, linkinator and wget2, and the floor (``floor.py
--site-only``, 2 parse processes) after them, and ends with a table of the targets set
for linkpatrol's speed and memory (``targets.py``): each met or not, and whether the floor
itself is within it. The tables are printed, and added to ``bench/RESULTS.md`` as its
newest section (``--out FILE``; ``--out -``: printed only). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

import lxml.html

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import floor, install_peers, results, run_peers, serve  # noqa: E402
from bench import targets as goals  # noqa: E402

FIRST_PORT = 18091
TOOLS = ("linkpatrol", "linklint")  # run unless named
# what --targets runs on each manual, in turn
TARGET_TOOLS = ("linkpatrol", goals.WITHOUT_ANCHORS, "linklint", "linkinator", "wget2")
MAX_PAGES = 200_000  # far above any manual here: a crawl of the truth that reaches it is wrong
HTML_SUFFIXES = (".html", ".htm")


@dataclass(frozen=True)
class Manual:
    name: str
    package: str
    folder: Path


MANUALS = {
    m.name: m
    for m in (
        Manual("postgresql", "postgresql-doc-15", Path("/usr/share/doc/postgresql-doc-15/html")),
        Manual("python", "python3.11-doc", Path("/usr/share/doc/python3.11/html")),
        Manual("libstdc++", "libstdc++-12-doc", Path("/usr/share/doc/libstdc++-12-doc/libstdc++")),
        Manual("git", "git-doc", Path("/usr/share/doc/git-doc")),
    )
}


@dataclass
class Truth:
    """What a manual's own files say about its links, as a crawl from its first page sees
    them."""

    pages: int = 0
    links: set[str] = field(default_factory=set)  # distinct URLs of the site, fragments off
    missing: set[str] = field(default_factory=set)  # links with no file behind them
    anchors: set[str] = field(default_factory=set)  # distinct page#fragment links
    missing_anchors: set[str] = field(default_factory=set)


def canonical(url: str) -> str:
    """One spelling of a URL, whichever way a tool escapes it."""
    parts = urlsplit(url)
    text = f"{parts.scheme.lower()}://{parts.netloc.lower()}{unquote(parts.path) or '/'}"
    if parts.query:
        text += "?" + parts.query
    if parts.fragment:
        text += "#" + unquote(parts.fragment)
    return text


def file_of(root: Path, base: str, url: str) -> Path | None:
    """The file nginx answers ``url`` with (a folder: its index.html), or None."""
    path = unquote(urlsplit(url).path)
    target = root / path.lstrip("/")
    if target.is_dir():
        target = target / "index.html"
    return target if target.is_file() else None


def links_and_names(file: Path, url: str) -> tuple[list[str], set[str]]:
    """The page's links (absolute, fragments kept) and the names its fragments can take."""
    try:
        tree = lxml.html.fromstring(file.read_bytes())
    except (ValueError, lxml.etree.ParserError):
        return [], set()
    bases = tree.xpath("//base/@href")
    here = urljoin(url, bases[0].strip()) if bases else url
    links = []
    for value in tree.xpath("//*[not(self::base)]/@href | //@src"):
        value = value.strip()
        if value:
            links.append(urljoin(here, value))
    names = {str(n) for n in tree.xpath("//@id | //a/@name")}
    return links, names


def truth_of(root: Path, base: str) -> Truth:
    """Crawl the manual's files from ``base``/ the way a link checker crawls its site."""
    truth = Truth()
    names: dict[str, set[str] | None] = {}  # page URL -> its ids (None: not an HTML page)

    def names_of(page: str) -> set[str] | None:
        if page not in names:
            file = file_of(root, base, page)
            if file is None or not file.name.endswith(HTML_SUFFIXES):
                names[page] = None
            else:
                names[page] = links_and_names(file, page)[1]
        return names[page]

    start = base + "/"
    queue, seen = deque([start]), {start}
    fragments: set[str] = set()
    while queue and truth.pages < MAX_PAGES:
        page = queue.popleft()
        file = file_of(root, base, page)
        if file is None or not file.name.endswith(HTML_SUFFIXES):
            continue
        truth.pages += 1
        links, names[page] = links_and_names(file, page)
        for link in links:
            if not link.startswith(base + "/"):
                continue
            target, fragment = urldefrag(link)
            truth.links.add(canonical(target))
            if file_of(root, base, target) is None:
                truth.missing.add(canonical(target))
            elif target not in seen:
                seen.add(target)
                queue.append(target)
            if fragment:
                fragments.add(link)
    for link in fragments:
        target, fragment = urldefrag(link)
        ids = names_of(target)
        if ids is None:
            continue  # a fragment of a missing page or of a file that is not HTML
        truth.anchors.add(canonical(link))
        if unquote(fragment) not in ids and fragment not in ids:
            truth.missing_anchors.add(canonical(link))
    return truth


def tool_spec(tool: str, start: str) -> dict[str, Any]:
    """The benchmark's command for ``tool``, kept to the site and checking anchors (but
    for linkpatrol-no-anchors, which is linkpatrol without ``--check-anchors``)."""
    anchors = tool != goals.WITHOUT_ANCHORS
    if not anchors:
        tool = "linkpatrol"
    spec = dict(run_peers.tool_specs(run_peers.CONC, start)[tool])
    if tool == "linkpatrol":
        origin = "^" + re.escape(start)
        extra = ["--check-anchors"] if anchors else []
        spec["cmd"] = [*spec["cmd"], *extra, "--include", origin]
        spec["flags"] += " ".join(["", *extra, "--include", origin])
    elif tool == "linklint":
        spec["cmd"] = [part for part in spec["cmd"] if part != "-net"]
        spec["flags"] = spec["flags"].replace(" -net", "")
    elif tool == "linkinator":
        # nothing leaves the machine: a link elsewhere would wait out its 30 s timeout
        elsewhere = f"^(?!{re.escape(start)})"
        spec["cmd"] = [*spec["cmd"], "--skip", elsewhere]
        spec["flags"] += f" --skip '{elsewhere}'"
    elif tool == "linkchecker":
        # its own site only: outside URLs are ignored, not requested
        elsewhere = f"^(?!{re.escape(start)})"
        cmd = [part for part in spec["cmd"] if part != "--check-extern"]
        spec["cmd"] = [*cmd[:-1], "--ignore-url", elsewhere, cmd[-1]]
        spec["flags"] = spec["flags"].replace("--check-extern ", f"--ignore-url '{elsewhere}' ")
    return spec


def scored(reported: set[str], truth: Truth, base: str) -> dict[str, int]:
    """Missing links and anchors found, and what else was reported, of this site only."""
    ours = [u for u in reported if u.startswith(base + "/")]
    plain = {canonical(u) for u in ours if "#" not in u}
    anchors = {canonical(u) if urlsplit(u).fragment else u for u in ours if "#" in u}
    return {
        "found": len(plain & truth.missing),
        "false": len(plain - truth.missing),
        "anchors found": len(anchors & truth.missing_anchors),
        "false anchors": len(anchors - truth.missing_anchors),
    }


def install(manuals: list[Manual], tools: list[str]) -> None:
    missing = [m.package for m in manuals if not m.folder.is_dir()]
    if missing:
        install_peers.apt_install(missing)
    install_peers.install([t for t in tools if not t.startswith("linkpatrol")])


def command_of(argv: list[str]) -> str:
    """The command as the results file shows it: without where it was written, which
    says nothing of what was measured."""
    shown = [a for a in argv if not a.startswith("--out=")]
    if "--out" in shown:
        at = shown.index("--out")
        del shown[at : at + 2]
    return " ".join(["python bench/docsites.py", *shown])


def section(rows: list[tuple], summaries: list[str], targets: str | None, command: str) -> str:
    """The run's figures as a section of the results file: what each manual's files say,
    every tool's run on every manual, and the targets judged where they were asked for."""
    lines = [
        f"## Real documentation sites (`{command}`)",
        "",
        f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores; runs in {run_peers.RUNS}/docs-*.",
        "",
        *(f"- {summary}" for summary in summaries),
        "",
        "| manual | tool | wall s | wall / linkpatrol's | CPU s | to first answer s "
        "| after last answer s | missing links found | false link reports "
        "| missing anchors found | false anchor reports | tree peak MB, RSS / PSS |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    ours: dict[tuple[str, int], float] = {
        (row[0], row[2]): row[3] for row in rows if row[1] == "linkpatrol"
    }
    for name, tool, rep, wall, times, truth, score in rows:
        cpu = round(times["user_s"] + times["sys_s"], 2)
        our_wall = ours.get((name, rep))
        ratio = f"{wall / our_wall:.2f}" if our_wall else "—"
        lines.append(
            f"| {name} | {tool} | {wall} | {ratio} | {cpu} | {times['to_first_answer_s']} "
            f"| {times['after_last_answer_s']} | {score['found']}/{len(truth.missing)} "
            f"| {score['false']} | {score['anchors found']}/{len(truth.missing_anchors)} "
            f"| {score['false anchors']} | {times['tree_rss_mb']} / {times['tree_pss_mb']} |"
        )
    if targets is not None:
        reps = max((row[2] for row in rows), default=0)
        lines += [
            "",
            f"The targets (medians of {reps}; the floor: `floor.py --site-only`):",
            "",
            targets,
        ]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--sites", default=",".join(MANUALS), help="comma-separated")
    ap.add_argument("--tools", default=None, help="linkpatrol,linklint unless --targets")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=1200)
    ap.add_argument("--no-install", action="store_true")
    ap.add_argument(
        "--out",
        type=Path,
        default=results.FILE,
        help="the results file the tables are added to, newest first ('-': none)",
    )
    ap.add_argument(
        "--targets",
        action="store_true",
        help=f"run {','.join(TARGET_TOOLS)} and the floor; judge the targets",
    )
    args = ap.parse_args()
    unknown = [s for s in args.sites.split(",") if s not in MANUALS]
    if unknown:
        sys.exit(f"docsites: unknown site {', '.join(unknown)}; known: {', '.join(MANUALS)}")
    manuals = [MANUALS[s] for s in args.sites.split(",")]
    tools = (args.tools or ",".join(TARGET_TOOLS if args.targets else TOOLS)).split(",")
    if not args.no_install:
        install(manuals, tools)
    for m in manuals:
        if not m.folder.is_dir():
            sys.exit(f"docsites: {m.folder} is missing (apt-get install {m.package})")
    ports = {m.name: FIRST_PORT + k for k, m in enumerate(manuals)}
    try:
        serve.start_folders([(ports[m.name], m.name, m.folder) for m in manuals])
    except serve.ServeError as error:
        sys.exit(str(error))
    rows = []
    summaries: list[str] = []
    runs: dict[str, dict[str, list[goals.Run]]] = {}
    floors: dict[str, list[float]] = {}
    try:
        for m in manuals:
            base = f"http://127.0.0.1:{ports[m.name]}"
            truth = truth_of(m.folder, base)
            summaries.append(
                f"{m.name}: {truth.pages} pages, {len(truth.links)} links to the site, "
                f"{len(truth.missing)} missing; {len(truth.anchors)} with a fragment, "
                f"{len(truth.missing_anchors)} naming no anchor"
            )
            print(summaries[-1], flush=True)
            for rep in range(1, args.reps + 1):
                for tool in tools:
                    spec = tool_spec(tool, base + "/")
                    offset = run_peers.log_size(serve.ACCESS_LOG)
                    work, times, wall = run_peers.run_one(
                        tool, spec, rep, f"docs-{m.name}", args.timeout
                    )
                    times.update(run_peers.quick_start(times, offset))
                    parsed = run_peers.PARSERS[spec["parse"]](work, base + "/")
                    score = scored(parsed["reported"], truth, base)
                    rows.append((m.name, tool, rep, round(wall, 2), times, truth, score))
                    print(f"   wall {wall:.2f} s  {score}  exit {times['exit']}", flush=True)
                    run = goals.Run(wall, times["tree_pss_mb"], run_peers.ends_of(times))
                    runs.setdefault(m.name, {}).setdefault(tool, []).append(run)
                if args.targets:
                    wall = floor.one_round(
                        base + "/", run_peers.FLOOR_WORKERS, "libxml2", site_only=True
                    )[0]
                    floors.setdefault(m.name, []).append(wall)
                    print(f"   the floor: wall {wall:.2f} s", flush=True)
    finally:
        serve.stop()
    judged = goals.table(goals.targets(runs, floors)) if args.targets else None
    text = section(rows, summaries, judged, command_of(sys.argv[1:]))
    print("\n" + text)
    if str(args.out) != "-":
        results.record(args.out, text)
        print(f"recorded in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
