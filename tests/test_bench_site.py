"""``bench/gen_site.py`` and ``bench/serve.py``: the benchmark's site holds what its truth says.

Every figure of recall and false reports in the benchmarks is scored against
``truth.json``: a planted broken URL that had a file, or a link broken by accident, would
make a checker look wrong where it is right.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

import lxml.html
import pytest

from bench import gen_site

ROOT = Path(__file__).resolve().parent.parent
PAGES = 20
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, no proxy


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def links_of(page: Path, url: str) -> set[str]:
    """Every ``href`` and ``src`` of a page, absolute, fragments kept."""
    tree = lxml.html.fromstring(page.read_bytes())
    return {urljoin(url, value) for value in tree.xpath("//@href | //@src")}


def file_for(out: Path, truth: dict[str, Any], url: str) -> Path | None:
    """The file that answers ``url`` (a folder answers with its index.html), if any."""
    params = truth["params"]
    roots = {params["site_base"]: out / "site", params["ext_base"]: out / "ext"}
    parts = urlsplit(url)
    root = roots.get(f"{parts.scheme}://{parts.netloc}")
    if root is None:
        return None
    file = root / parts.path.lstrip("/")
    if parts.path.endswith("/"):
        file = file / "index.html"
    return file if file.is_file() else None


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("site")
    return out, gen_site.generate(out, PAGES)


def test_every_planted_broken_url_has_no_file_and_is_linked_where_truth_says(
    site: tuple[Path, dict[str, Any]],
) -> None:
    out, truth = site
    kinds = {entry["kind"] for entry in truth["broken"]}
    assert kinds == {"internal_404", "internal_img_404", "external_404", "refused"}
    assert len(truth["broken"]) == truth["counts"]["broken"] >= 6
    dead = truth["params"]["dead_base"]
    for entry in truth["broken"]:
        url = entry["url"]
        assert "#" not in url
        assert file_for(out, truth, url) is None, f"{url} is planted broken but has a file"
        assert url.startswith(dead) == (entry["kind"] == "refused")
        assert entry["found_on"]
        for page_url in entry["found_on"]:
            page = file_for(out, truth, page_url)
            assert page is not None, page_url
            assert url in {urldefrag(u)[0] for u in links_of(page, page_url)}


def test_every_other_link_of_the_site_is_good(site: tuple[Path, dict[str, Any]]) -> None:
    out, truth = site
    start = truth["start_url"]
    planted = {entry["url"] for entry in truth["broken"]}
    pages = sorted((out / "site").rglob("*.html"))
    assert len(pages) == truth["counts"]["html_pages"] == PAGES
    linked: set[str] = set()
    for page in pages:
        url = urljoin(start, page.relative_to(out / "site").as_posix())
        for link in links_of(page, url):
            target, fragment = urldefrag(link)
            linked.add(target)
            if target in planted:
                continue
            file = file_for(out, truth, target)
            assert file is not None, f"{url} links to {link}, which has no file"
            if fragment:  # every fragment names an id of the page it points into
                ids = lxml.html.fromstring(file.read_bytes()).xpath("//@id")
                assert fragment in ids, f"{url} links to {link}: no such id"
    assert planted <= linked
    assert len(linked | {start}) == truth["counts"]["distinct_urls"]


def test_the_same_parameters_give_the_same_bytes_and_times(
    site: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    out, truth = site
    again = tmp_path / "again"
    assert gen_site.generate(again, PAGES) == truth

    def listing(folder: Path) -> dict[str, tuple[bytes, int]]:
        return {
            str(f.relative_to(folder)): (f.read_bytes(), f.stat().st_mtime_ns)
            for f in sorted(folder.rglob("*"))
            if f.is_file() and f.name != "truth.json"
        }

    assert listing(again) == listing(out)
    assert (again / "truth.json").read_bytes() == (out / "truth.json").read_bytes()


@pytest.mark.skipif(shutil.which("nginx") is None and not Path("/usr/sbin/nginx").is_file(),
                    reason="nginx is not installed")  # fmt: skip
def test_nginx_serves_the_site_and_logs_each_request(tmp_path: Path) -> None:
    site_port, ext_port, dead_port = free_port(), free_port(), free_port()
    # nginx's workers, started by root, read as nobody: not from pytest's private folders
    readable = Path(tempfile.mkdtemp(prefix="lp-bench-site-"))
    readable.chmod(0o755)
    out = readable / "site"
    truth = gen_site.generate(
        out, PAGES, site_port=site_port, ext_port=ext_port, dead_port=dead_port
    )
    run = tmp_path / "nginx"
    env = dict(os.environ, NGINX_RUN=str(run), SITE_PORT=str(site_port), EXT_PORT=str(ext_port))
    serve = [sys.executable, str(ROOT / "bench" / "serve.py")]
    started = subprocess.run(
        [*serve, "start", str(out)], env=env, capture_output=True, text=True, timeout=30
    )
    assert started.returncode == 0, started.stderr
    try:
        again = subprocess.run(
            [*serve, "start", str(out)], env=env, capture_output=True, text=True, timeout=30
        )
        assert again.returncode == 3 and "already running" in again.stderr
        with DIRECT.open(truth["start_url"], timeout=10) as answer:
            assert answer.headers["LinkChecker"] == "bench"
            assert answer.read() == (out / "site" / "index.html").read_bytes()
        broken = next(e["url"] for e in truth["broken"] if e["kind"] == "external_404")
        with pytest.raises(urllib.error.HTTPError) as missing:
            DIRECT.open(broken, timeout=10)
        assert missing.value.code == 404
    finally:
        stopped = subprocess.run(
            [*serve, "stop"], env=env, capture_output=True, text=True, timeout=30
        )
        shutil.rmtree(readable)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    status = subprocess.run([*serve, "status"], env=env, capture_output=True, timeout=30)
    assert status.returncode == 1
    # flushed when nginx stops; each line ends with the moment of its answer
    log = [line.rsplit(" ", 1)[0] for line in (run / "access.log").read_text().splitlines()]
    assert f"{site_port} GET 200 /" in log
    assert f"{ext_port} GET 404 {urlsplit(broken).path}" in log
