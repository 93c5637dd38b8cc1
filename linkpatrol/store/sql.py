"""The memory's logic in SQL, written once for every database it runs on.

:class:`SqlStore` implements the whole :class:`~linkpatrol.store.Store` interface in the
SQL that SQLite and PostgreSQL both speak, with ``?`` placeholders, in parts by role, each
building on the one before:

- :mod:`~linkpatrol.store.schema`: the tables and their migrations, the :class:`Dialect`
  that names where the databases differ, and the :class:`Session` each backend supplies;
- :mod:`~linkpatrol.store.frontier`: discovery and its limits, claims and their leases;
- :mod:`~linkpatrol.store.outcomes`: outcomes, links, history, robots.txt, what a pass
  keeps besides;
- :mod:`~linkpatrol.store.crew`: passes begun, joined, resumed and ended, and the workers
  that share one;
- :mod:`~linkpatrol.store.queries`: the reports' reads.

The backends are ``linkpatrol.store.sqlite`` (one file, flock, WAL) and
``linkpatrol.store.postgres`` (a connection pool, an advisory lock).
"""

from __future__ import annotations

from linkpatrol.store.crew import WORKER_SILENCE
from linkpatrol.store.queries import QueriesPart
from linkpatrol.store.schema import LINKS_BY_TARGET, SCHEMA_VERSION, Dialect, Session


class SqlStore(QueriesPart):
    """The :class:`~linkpatrol.store.Store` over any SQL database with a :class:`Dialect`."""


__all__ = ["LINKS_BY_TARGET", "SCHEMA_VERSION", "WORKER_SILENCE", "Dialect", "Session", "SqlStore"]
