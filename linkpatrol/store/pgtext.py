"""How text goes to PostgreSQL. Kept out of the compiled modules: psycopg makes an
instance of this class for each text parameter, as a plain Python subclass of its own."""

from __future__ import annotations

from typing import Any

from psycopg.types.string import StrDumperUnknown


class Text(StrDumperUnknown):
    """Text as PostgreSQL can hold it: a NUL character, which SQLite keeps, becomes U+FFFD."""

    def dump(self, obj: str) -> Any:
        if "\x00" in obj:
            obj = obj.replace("\x00", "\ufffd")
        return super().dump(obj)
