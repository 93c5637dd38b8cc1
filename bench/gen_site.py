#!/usr/bin/env python3
"""A deterministic static website for link-checker benchmarks, with its ground truth.

    python bench/gen_site.py [--pages 2000] [--out /tmp/bench-site/N] [--mtime same]

Writes under OUT the site under test (``site/``, served on ``--site-port``), a "far" site
it links to (``ext/``, served on ``--ext-port``) and ``truth.json``: the counts and every
planted broken URL.

The site is a three-level tree (root index, section indexes, topic indexes, content
pages) plus about 20 random cross links a page, so every page is reachable within depth
3 while the link graph stays dense. Each content page is 5-15 KB of HTML with about 30
links: internal links in relative, root-relative and absolute form (some with #fragments
that exist on the target, some to folders), images, a stylesheet, script and icon in
``<head>``, and links to the far site.

Planted defects, all distinct URLs, never with a fragment:

- ``internal_404``: links to pages that do not exist on the site;
- ``internal_img_404``: ``<img>`` of images that do not exist on the site;
- ``external_404``: links to missing pages of the far site;
- ``refused``: links to a port where nothing listens.

Every fragment used is an id present on every page, so a checker that checks anchors
must report none. The same seed and parameters give byte-identical output, file times
included: by default every file gets its own mtime (2024-01-01 plus one second per file
in path order), so nginx's ETag (mtime and size) differs between any two files;
``--mtime same`` gives every file the same mtime, as a site deployed in one go, which
makes pages of equal size share an ETag (wget2 then parses only one of them).
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
import random
import shutil
import struct
import zlib
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin

VOCABULARY = (
    "link anchor crawl spider page site index archive release notes guide "
    "manual install network server client request response header status "
    "cache proxy route path query fragment resource document section topic "
    "chapter article report figure table image style script module package "
    "version update change history review summary detail overview reference "
    "example sample tutorial recipe question answer issue ticket feature "
    "option setting config value default limit timeout retry backoff queue "
    "worker thread process memory storage database record field column row "
    "search filter sort order group count total average median maximum "
    "minimum quickly slowly carefully often rarely always never usually the "
    "a an of to in for on with by from at about over under between through "
    "and or but so because while when where which that this these those "
    "webmaster editor author reader visitor team project community forum"
)
WORDS = VOCABULARY.split()

NUM_IMAGES = 40
MTIME_BASE = 1704067200  # 2024-01-01T00:00:00Z
NUM_FRAGMENTS = 4  # every page carries the ids h1..h4
ROBOTS = b"User-agent: *\nDisallow:\n"

Link = tuple[str, str]  # (href, "a" or "img")


def png_bytes(rng: random.Random, pad: int) -> bytes:
    """A valid 1x1 PNG with a tEXt chunk that pads it to about ``pad`` bytes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixel = bytes([0, rng.randrange(256), rng.randrange(256), rng.randrange(256)])
    text = b"Comment\x00" + bytes(rng.choice(b"abcdefghijklmnop") for _ in range(pad))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"tEXt", text)
        + chunk(b"IDAT", zlib.compress(pixel))
        + chunk(b"IEND", b"")
    )


class Site:
    """The plan of one site; ``build`` writes it. One random stream drives everything, so
    the order of the calls on it is part of the output: change it and every figure
    measured on earlier sites stops being comparable."""

    def __init__(
        self,
        pages: int,
        seed: int = 1,
        host: str = "127.0.0.1",
        site_port: int = 18081,
        ext_port: int = 18082,
        dead_port: int = 18083,
        broken_frac: float = 0.012,
    ) -> None:
        if pages < 20:
            raise SystemExit("gen_site: --pages must be at least 20")
        self.rng = random.Random(seed)
        self.pages_total = pages
        self.seed = seed
        self.host = host
        self.site_base = f"http://{host}:{site_port}"
        self.ext_base = f"http://{host}:{ext_port}"
        self.dead_base = f"http://{host}:{dead_port}"
        self.broken_frac = broken_frac
        self.sections = max(2, round(pages / 100))
        self.topics = 3
        self.index_paths = ["/index.html"]
        for s in range(self.sections):
            self.index_paths.append(f"/s{s}/index.html")
            for t in range(self.topics):
                self.index_paths.append(f"/s{s}/t{t}/index.html")
        n_content = pages - len(self.index_paths)
        if n_content < 10:
            raise SystemExit("gen_site: too few pages for the section layout")
        # round-robin over the sections; a quarter at section level, the rest in topics
        self.content: list[tuple[str, int, int | None]] = []
        for i in range(n_content):
            s = i % self.sections
            slot = (i // self.sections) % 4
            if slot == 0:
                self.content.append((f"/s{s}/page-{i}.html", s, None))
            else:
                self.content.append((f"/s{s}/t{slot - 1}/page-{i}.html", s, slot - 1))
        self.ext_pool = [f"/far/{k}.html" for k in range(max(20, pages // 4))]
        self.images = [f"/img/pic-{k}.png" for k in range(NUM_IMAGES)]
        self.head_assets = ["/css/site.css", "/js/app.js", "/favicon.ico"] + [
            f"/css/s{s}.css" for s in range(self.sections)
        ]

    def href_for(
        self, from_path: str, target: str, allow_frag: bool = True, dir_form: bool = False
    ) -> str:
        """``target`` (a path of the site) as written on page ``from_path``: relative,
        root-relative or absolute, now and then with a fragment."""
        r = self.rng.random()
        path = target
        if dir_form and path.endswith("/index.html"):
            path = path[: -len("index.html")]
        if r < 0.40:
            href = posixpath.relpath(path, posixpath.dirname(from_path))
            if path.endswith("/") and not href.endswith("/"):
                href += "/"
        elif r < 0.75:
            href = path
        else:
            href = self.site_base + path
        if allow_frag and self.rng.random() < 0.15:
            href += f"#h{self.rng.randint(1, NUM_FRAGMENTS)}"
        return href

    def sentence(self, n: int) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(n))

    def paragraph(self, links: list[str]) -> str:
        parts = []
        for link in links:
            parts.append(self.sentence(self.rng.randint(6, 18)))
            parts.append(link)
        parts.append(self.sentence(self.rng.randint(10, 40)) + ".")
        return "<p>" + " ".join(parts) + "</p>\n"

    def render(
        self,
        path: str,
        title: str,
        section: int | None,
        nav: list[str],
        body_links: list[str],
        images: list[str],
        target_size: int,
    ) -> str:
        css_s = f"/css/s{section}.css" if section is not None else "/css/s0.css"
        head = (
            '<!DOCTYPE html>\n<html lang="en">\n<head>\n'
            '<meta charset="utf-8">\n'
            f"<title>{title}</title>\n"
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f'<link rel="stylesheet" href="{self.href_for(path, "/css/site.css", False)}">\n'
            f'<link rel="stylesheet" href="{css_s}">\n'
            '<link rel="icon" href="/favicon.ico">\n'
            f'<script src="{self.href_for(path, "/js/app.js", False)}"></script>\n'
            "</head>\n<body>\n"
        )
        out = [head, "<header><nav><ul>\n"]
        out += [f"<li>{a}</li>\n" for a in nav]
        out.append("</ul></nav></header>\n<main>\n")
        out.append(f'<h1 id="top">{title}</h1>\n')
        # the body links and images spread over NUM_FRAGMENTS sections
        items = body_links + images
        self.rng.shuffle(items)
        for k in range(1, NUM_FRAGMENTS + 1):
            chunk = items[k - 1 :: NUM_FRAGMENTS]
            out.append(f'<h2 id="h{k}">{self.sentence(4).title()}</h2>\n')
            while chunk:
                take = self.rng.randint(1, 3)
                out.append(self.paragraph(chunk[:take]))
                chunk = chunk[take:]
        size = sum(len(x) for x in out)
        while size < target_size - 200:
            p = self.paragraph([])
            out.append(p)
            size += len(p)
        out.append(f"</main>\n<footer><p>Generated page {title}</p></footer>\n</body>\n</html>\n")
        return "".join(out)

    def a(self, href: str) -> str:
        return f'<a href="{href}">{self.sentence(self.rng.randint(2, 4))}</a>'

    def img(self, src: str) -> str:
        return f'<img src="{src}" alt="{self.sentence(2)}" width="1" height="1">'

    def plan_broken(self, content_paths: list[str]) -> list[dict[str, Any]]:
        """The planted broken URLs (distinct, absolute), each placed on 1-3 content pages
        (``found_on``)."""
        rng = self.rng
        approx_ok = (
            len(self.index_paths)
            + len(content_paths)
            + len(self.images)
            + len(self.head_assets)
            + min(len(self.ext_pool), 3 * len(content_paths))
        )
        n_broken = max(6, round(self.broken_frac * approx_ok))
        n_refused = max(1, round(0.12 * n_broken))
        n_img = max(1, round(0.10 * n_broken))
        n_ext = max(2, round(0.35 * n_broken))
        n_int = max(2, n_broken - n_refused - n_img - n_ext)
        broken: list[dict[str, Any]] = []
        for k in range(n_int):
            s = rng.randrange(self.sections)
            if rng.random() < 0.5:
                p = f"/s{s}/gone-{k}.html"
            else:
                p = f"/s{s}/t{rng.randrange(self.topics)}/gone-{k}.html"
            broken.append(
                {"kind": "internal_404", "path": p, "url": self.site_base + p, "expect": 404}
            )
        for k in range(n_img):
            p = f"/img/missing-{k}.png"
            broken.append(
                {"kind": "internal_img_404", "path": p, "url": self.site_base + p, "expect": 404}
            )
        for k in range(n_ext):
            url = f"{self.ext_base}/far/gone-{k}.html"
            broken.append({"kind": "external_404", "path": None, "url": url, "expect": 404})
        for k in range(n_refused):
            url = f"{self.dead_base}/x/{k}.html"
            broken.append(
                {"kind": "refused", "path": None, "url": url, "expect": "connection refused"}
            )
        for b in broken:
            hosts = rng.sample(content_paths, rng.randint(1, 3))
            b["found_on"] = sorted(self.site_base + h for h in hosts)
            b["hosts"] = hosts
        return broken

    def build(self, out: Path, mtime: str = "distinct") -> dict[str, Any]:
        """Write the site, the far site and ``truth.json`` under ``out``; the truth."""
        rng = self.rng
        site_dir, ext_dir = out / "site", out / "ext"
        for d in (site_dir, ext_dir):
            if d.exists():
                shutil.rmtree(d)
            d.mkdir(parents=True)

        content_paths = [c[0] for c in self.content]
        all_pages = self.index_paths + content_paths
        broken = self.plan_broken(content_paths)
        placements: dict[str, list[dict[str, Any]]] = {}
        for b in broken:
            for h in b.pop("hosts"):
                placements.setdefault(h, []).append(b)

        occurrences = 0
        referenced: set[str] = set()
        sizes: list[int] = []

        def note(href: str, from_path: str) -> None:
            nonlocal occurrences
            occurrences += 1
            referenced.add(urldefrag(urljoin(self.site_base + from_path, href))[0])

        def write(path: str, data: bytes) -> None:
            file = site_dir / path.lstrip("/")
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_bytes(data)

        def emit(
            path: str,
            title: str,
            section: int | None,
            nav: list[Link],
            body: list[Link],
            imgs: list[Link],
            size: int,
        ) -> None:
            for href, _ in nav + body + imgs:
                note(href, path)
            html = self.render(
                path,
                title,
                section,
                [self.a(h) for h, _ in nav],
                [self.a(h) for h, _ in body],
                [self.img(h) for h, _ in imgs],
                size,
            )
            # the head's assets, on every page
            note("/css/site.css", path)
            note(f"/css/s{section if section is not None else 0}.css", path)
            note("/favicon.ico", path)
            note("/js/app.js", path)
            sizes.append(len(html))
            write(path, html.encode("utf-8"))

        # index pages
        by_section: dict[int, list[str]] = {s: [] for s in range(self.sections)}
        by_topic: dict[tuple[int, int], list[str]] = {}
        for p, s, t in self.content:
            if t is None:
                by_section[s].append(p)
            else:
                by_topic.setdefault((s, t), []).append(p)

        root_nav = [
            (self.href_for("/index.html", f"/s{s}/index.html", False, dir_form=True), "a")
            for s in range(self.sections)
        ]
        root_body = [
            (self.href_for("/index.html", rng.choice(content_paths)), "a") for _ in range(10)
        ]
        root_img = [(self.href_for("/index.html", rng.choice(self.images), False), "img")]
        emit("/index.html", "Home", None, root_nav, root_body, root_img, rng.randint(5000, 15000))
        for s in range(self.sections):
            ip = f"/s{s}/index.html"
            nav = [(self.href_for(ip, "/index.html", False, dir_form=True), "a")]
            nav += [
                (self.href_for(ip, f"/s{s}/t{t}/index.html", False, dir_form=True), "a")
                for t in range(self.topics)
            ]
            body = [(self.href_for(ip, p), "a") for p in by_section[s]]
            emit(ip, f"Section {s}", s, nav, body, [], rng.randint(5000, 15000))
            for t in range(self.topics):
                tp = f"/s{s}/t{t}/index.html"
                nav = [
                    (self.href_for(tp, "/index.html", False, dir_form=True), "a"),
                    (self.href_for(tp, ip, False, dir_form=True), "a"),
                ]
                body = [(self.href_for(tp, p), "a") for p in by_topic.get((s, t), [])]
                emit(tp, f"Section {s} topic {t}", s, nav, body, [], rng.randint(5000, 15000))

        # content pages
        for i, (p, s, t) in enumerate(self.content):
            up = f"/s{s}/t{t}/index.html" if t is not None else f"/s{s}/index.html"
            nxt = content_paths[(i + self.sections) % len(content_paths)]
            nav = [
                (self.href_for(p, "/index.html", False, dir_form=True), "a"),
                (self.href_for(p, f"/s{s}/index.html", False, dir_form=True), "a"),
                (self.href_for(p, up, False, dir_form=True), "a"),
                (self.href_for(p, nxt), "a"),
            ]
            body = []
            for _ in range(rng.randint(16, 21)):
                r = rng.random()
                if r < 0.06:
                    target = rng.choice(self.index_paths)
                    body.append((self.href_for(p, target, dir_form=rng.random() < 0.7), "a"))
                elif r < 0.55:  # biased to the page's own section
                    target = rng.choice(content_paths[s :: self.sections])
                    body.append((self.href_for(p, target), "a"))
                else:
                    body.append((self.href_for(p, rng.choice(content_paths)), "a"))
            for _ in range(rng.randint(2, 4)):
                body.append((self.ext_base + rng.choice(self.ext_pool), "a"))
            imgs = [
                (self.href_for(p, rng.choice(self.images), False), "img")
                for _ in range(rng.randint(2, 4))
            ]
            for b in placements.get(p, []):
                href = self.href_for(p, b["path"], False) if b["path"] is not None else b["url"]
                if b["kind"] == "internal_img_404":
                    imgs.append((href, "img"))
                else:
                    body.append((href, "a"))
            emit(p, f"Page {i}", s, nav, body, imgs, rng.randint(5000, 15000))

        # assets
        write("/css/site.css", ("body{font-family:sans-serif;margin:2em}\n" * 40).encode())
        for s in range(self.sections):
            write(f"/css/s{s}.css", f"h1{{color:#{s % 10}{s % 10}3}}\n".encode() * 20)
        write("/js/app.js", b"(function(){var x=1;})();\n" * 60)
        for im in self.images:
            write(im, png_bytes(rng, rng.randint(1000, 8000)))
        write("/favicon.ico", png_bytes(rng, 300))
        write("/robots.txt", ROBOTS)

        # the far site: small pages without links
        for ep in self.ext_pool:
            file = ext_dir / ep.lstrip("/")
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(
                '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Far '
                f"{ep}</title></head><body><p>{self.sentence(60)}</p></body></html>\n",
                encoding="utf-8",
            )
        (ext_dir / "index.html").write_text(
            "<!DOCTYPE html><html><head><title>Far</title></head><body>far</body></html>\n",
            encoding="utf-8",
        )
        (ext_dir / "robots.txt").write_bytes(ROBOTS)

        etag_dups = set_mtimes([site_dir, ext_dir], mtime)
        start = self.site_base + "/"
        ref_internal = {u for u in referenced if u.startswith(self.site_base + "/")}
        ref_external = {u for u in referenced if u.startswith(self.ext_base + "/")}
        ref_dead = {u for u in referenced if u.startswith(self.dead_base + "/")}
        unlinked = {b["url"] for b in broken} - referenced
        if unlinked:
            raise RuntimeError(f"gen_site: planted but never linked: {sorted(unlinked)}")
        truth = {
            "generator": "gen_site.py",
            "params": {
                "pages": self.pages_total,
                "seed": self.seed,
                "host": self.host,
                "site_base": self.site_base,
                "ext_base": self.ext_base,
                "dead_base": self.dead_base,
                "broken_frac": self.broken_frac,
                "mtime": mtime,
            },
            "start_url": start,
            "counts": {
                "html_pages": len(all_pages),
                "index_pages": len(self.index_paths),
                "content_pages": len(content_paths),
                "page_bytes_min": min(sizes),
                "page_bytes_max": max(sizes),
                "page_bytes_mean": round(sum(sizes) / len(sizes)),
                "link_occurrences": occurrences,
                "links_per_page_mean": round(occurrences / len(all_pages), 1),
                "distinct_urls": len(referenced | {start}),
                "distinct_internal": len(ref_internal | {start}),
                "distinct_external": len(ref_external),
                "distinct_dead_port": len(ref_dead),
                "broken": len(broken),
                "broken_pct_of_distinct": round(100 * len(broken) / len(referenced | {start}), 2),
                "files_sharing_an_etag": etag_dups,
            },
            "broken": [{k: v for k, v in b.items() if k != "path"} for b in broken],
        }
        with (out / "truth.json").open("w") as f:
            json.dump(truth, f, indent=1, sort_keys=True)
            f.write("\n")
        return truth


def set_mtimes(folders: list[Path], mtime: str) -> int:
    """Give every file its deterministic time (see the module's docstring); how many files
    share an ETag (mtime and size) with an earlier one."""
    files = sorted(os.path.join(r, f) for d in folders for r, _, fs in os.walk(d) for f in fs)
    for k, file in enumerate(files):
        t = MTIME_BASE + (k if mtime == "distinct" else 0)
        os.utime(file, (t, t))
    etags: dict[tuple[int, int], int] = {}
    for file in files:
        st = os.stat(file)
        key = (int(st.st_mtime), st.st_size)
        etags[key] = etags.get(key, 0) + 1
    return sum(n - 1 for n in etags.values())


def generate(out: Path, pages: int, mtime: str = "distinct", **params: Any) -> dict[str, Any]:
    """Write a site of ``pages`` pages under ``out``; its truth."""
    out.mkdir(parents=True, exist_ok=True)
    return Site(pages, **params).build(out, mtime)


def default_out(pages: int, site_port: int = 18081) -> Path:
    """Where the benchmarks keep the site of ``pages`` pages: /tmp/bench-site/N, with the
    port in the name for a site served on another one (its links name the port)."""
    return Path(f"/tmp/bench-site/{pages}" + ("" if site_port == 18081 else f"-port{site_port}"))


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--out", type=Path, help="output folder (default /tmp/bench-site/N, and -portP off 18081)"
    )
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--site-port", type=int, default=18081)
    ap.add_argument("--ext-port", type=int, default=18082)
    ap.add_argument(
        "--dead-port", type=int, default=18083, help="port where nothing listens (refused)"
    )
    ap.add_argument(
        "--broken-frac",
        type=float,
        default=0.012,
        help="planted broken URLs as a fraction of distinct URLs",
    )
    ap.add_argument(
        "--mtime",
        choices=("distinct", "same"),
        default="distinct",
        help="file mtimes: one second apart (default) or all equal",
    )
    a = ap.parse_args()
    out = a.out or default_out(a.pages, a.site_port)
    truth = generate(
        out,
        a.pages,
        a.mtime,
        seed=a.seed,
        host=a.host,
        site_port=a.site_port,
        ext_port=a.ext_port,
        dead_port=a.dead_port,
        broken_frac=a.broken_frac,
    )
    print(json.dumps({"out": str(out), **truth["counts"]}, indent=1))


if __name__ == "__main__":
    main()
