"""The link graph for Graphviz: pages as nodes, links as edges, far URLs clustered by host.

Broken targets and the links to them are red, warnings orange, redirects dashed, URLs never
requested grey; the new ones the report names have a double border. URLs of the site
(parsed pages, and anything under a start URL's site) are nodes of their own; every other
URL sits in a cluster of its host (or scheme, for ``mailto:`` and the like), or, with
``hosts=True`` (``--graph-hosts``), is collapsed into one node per host so that a site of
thousands of pages stays drawable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from linkpatrol.model import Action, State
from linkpatrol.report import Entry, Report, archived_words, start_url_of
from linkpatrol.report.text import clean
from linkpatrol.urls import is_http, origin, relative_to

_STATE_STYLE = {
    State.BROKEN: 'color="red", fontcolor="red", penwidth=2',
    State.WARNING: 'color="orange", fontcolor="darkorange3"',
    State.REDIRECT: 'style="rounded,dashed"',
    State.DISALLOWED: 'color="grey50", fontcolor="grey40"',
    State.UNCHECKED: 'color="grey50", fontcolor="grey40"',
}


def quote(*lines: str) -> str:
    """A dot quoted string showing ``lines`` literally (no escape sequence survives)."""
    shown = []
    for line in lines:
        text = clean(line).replace("\\", "\\\\").replace('"', '\\"')
        shown.append(text.replace("\n", " ").replace("\r", " "))
    return '"' + "\\n".join(shown) + '"'


def _host_of(url: str) -> str:
    """The cluster a far URL belongs to: 'scheme://host:port', or 'mailto:' for other schemes."""
    return origin(url) or url.partition(":")[0] + ":"


@dataclass
class _Host:
    node: str
    urls: int = 0
    broken: int = 0
    members: list[str] = field(default_factory=list)


def render_dot(report: Report, *, hosts: bool = False) -> str:
    base = report.start_urls[0] if report.start_urls else ""
    out = [
        "digraph linkpatrol {",
        f"  graph [rankdir=LR, fontname=Helvetica, fontsize=11, "
        f"label={quote(f'linkpatrol pass {report.pass_id} of ' + ', '.join(report.starts))}];",
        "  node [shape=box, style=rounded, fontname=Helvetica, fontsize=10];",
        '  edge [color="grey40", arrowsize=0.6];',
    ]
    node_of: dict[str, str] = {}
    far: dict[str, _Host] = {}

    def node_line(name: str, entry: Entry, label: str, indent: str = "  ") -> str:
        style = _STATE_STYLE.get(entry.state)
        shape = "" if entry.action is Action.PARSE else ", shape=ellipse"
        extra = f", {style}" if style else ""
        if entry.new:
            extra += ", peripheries=2"
        said = [entry.url]
        if entry.archived is not None:  # the copy is a click away in SVG
            said.append(f"{archived_words(entry.archived)}: {entry.archived.url}")
            extra += f", URL={quote(entry.archived.url)}"
        return f"{indent}{name} [label={quote(label)}, tooltip={quote(*said)}{shape}{extra}];"

    for entry in report.entries:
        near = entry.action is Action.PARSE or start_url_of(report, entry.url) is not None
        if near:
            name = f"n{len(node_of)}"
            out.append(node_line(name, entry, relative_to(entry.url, base)))
        else:
            key = _host_of(entry.url)
            host = far.setdefault(key, _Host(node=f"h{len(far)}"))
            host.urls += 1
            if entry.state is State.BROKEN:
                host.broken += 1
            if hosts:
                name = host.node
            else:
                name = f"n{len(node_of)}"
                label = relative_to(entry.url, entry.url) if is_http(entry.url) else entry.url
                host.members.append(node_line(name, entry, label, indent="    "))
        node_of[entry.url] = name

    for number, (key, host) in enumerate(far.items()):
        if hosts:
            counts = f"{host.urls} URL{'s' if host.urls != 1 else ''}"
            if host.broken:
                counts += f", {host.broken} broken"
            style = ', color="red", fontcolor="red", penwidth=2' if host.broken else ""
            out.append(f"  {host.node} [label={quote(key, counts)}, shape=folder{style}];")
            continue
        out.append(f"  subgraph cluster_{number} {{")
        out.append(f'    label={quote(key)}; style="rounded,dashed"; color="grey60";')
        out.extend(host.members)
        out.append("  }")

    # one edge per pair of nodes: red when a link it stands for is broken, dashed when all
    # of them are redirects
    edges: dict[tuple[str, str], tuple[bool, bool]] = {}
    for entry in report.entries:
        target = node_of[entry.url]
        for ref in entry.referrers:
            source = node_of.get(ref.url)
            if source is None:
                continue
            red, dashed = edges.get((source, target), (False, True))
            edges[(source, target)] = (
                red or entry.state is State.BROKEN,
                dashed and ref.line is None,
            )
    for (source, target), (red, dashed) in edges.items():
        attrs = (['color="red"'] if red else []) + (["style=dashed"] if dashed else [])
        shown = f" [{', '.join(attrs)}]" if attrs else ""
        out.append(f"  {source} -> {target}{shown};")
    out.append("}")
    return "\n".join(out) + "\n"
