"""How values and options may be spelled: durations in milliseconds, ..."""

from __future__ import annotations

import itertools

import pytest

from linkpatrol.options import parse_duration
from tests.conftest import Runner, Serve
from tests.sitesrv import Page, html

# ---- durations ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("200ms", 0.2),
        ("1ms", 0.001),
        ("0.5ms", 0.0005),
        ("1s500ms", 1.5),
        ("1m30s", 90.0),
        ("2m", 120.0),
        ("1h 30m", 5400.0),
        ("1.5h", 5400.0),
        ("45", 45.0),
        ("250 MS", 0.25),
        (3, 3.0),
    ],
)
def test_a_duration_is_read_in_every_unit(text: str | int, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["forever", "200mss", "ms", "5 ms s", "1y", ""])
def test_a_wrong_duration_says_how_to_write_one(text: str) -> None:
    with pytest.raises(ValueError, match="duration") as caught:
        parse_duration(text)
    if text:
        assert "200ms, 90s, 15m, 2h, 7d" in str(caught.value)


def test_a_delay_in_milliseconds_spaces_the_requests(run: Runner, serve: Serve) -> None:
    pages = "".join(f'<a href="/{n}.html">{n}</a>' for n in range(4))
    site = serve(
        {
            "/": Page(html("<html><body>", pages, "</body></html>")),
            **{f"/{n}.html": Page(html("<p>page</p>")) for n in range(4)},
            "/robots.txt": Page("", status=404),
        }
    )

    proc = run.check(site.url("/"), "--delay", "200ms", "--per-host", "1", "-q")

    assert proc.returncode == 0, proc.stderr
    times = sorted(hit.at for hit in site.requests() if hit.path != "/robots.txt")
    assert len(times) == 5
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert min(gaps) >= 0.15, gaps
    assert max(gaps) < 2.0, gaps  # milliseconds, not minutes or seconds
