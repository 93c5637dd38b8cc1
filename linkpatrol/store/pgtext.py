"""How text goes to PostgreSQL. Kept out of the compiled modules: psycopg makes an
instance of this class for each text parameter, as a plain Python subclass of its own."""

from __future__ import annotations

from typing import Any

from psycopg.types.string import StrDumperUnknown


def storable(text: str) -> str:
    """Text as PostgreSQL can hold it: a NUL character, which SQLite keeps, becomes U+FFFD."""
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


class Text(StrDumperUnknown):
    """Every text parameter, :func:`storable`."""

    def dump(self, obj: str) -> Any:
        return super().dump(storable(obj))
