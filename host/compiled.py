"""ORM queries compiled once per process, for the per-turn hot path.

Building a query through the ORM cost several times the database's own time per turn.
A query whose shape is the same for everyone is compiled once with sentinel ids, and
each call puts the real ids where the sentinels were.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db import connection
from django.db.models import Model, QuerySet

# Far outside any real id, so a parameter equal to one is the sentinel.
_FIRST_SENTINEL = -7_700_000_000_000


class CompiledQuery:
    def __init__(self, build: Callable[..., QuerySet[Any]], *names: str) -> None:
        self.build = build
        self.names = names
        self._compiled: dict[str, tuple[str, tuple[Any, ...], dict[int, str]]] = {}

    def sql(self, **ids: int | str) -> tuple[str, list[Any]]:
        """The SQL and its parameters for these ids (one per name given at creation).

        A text parameter is built as `str(sentinel)`: it is found by its text.
        """
        alias = connection.alias
        if alias not in self._compiled:
            sentinels = {name: _FIRST_SENTINEL - n for n, name in enumerate(self.names)}
            query = self.build(**sentinels).query
            sql, params = query.get_compiler(alias).as_sql()
            by_value: dict[object, str] = {value: name for name, value in sentinels.items()}
            by_value |= {str(value): name for name, value in sentinels.items()}
            slots = {i: by_value[value] for i, value in enumerate(params) if value in by_value}
            self._compiled[alias] = (sql, tuple(params), slots)
        sql, template, slots = self._compiled[alias]
        return sql, [ids[slots[i]] if i in slots else value for i, value in enumerate(template)]

    def rows(self, **ids: int | str) -> list[tuple[Any, ...]]:
        """The rows as the database sends them (no field converters: jsonb is its text)."""
        sql, params = self.sql(**ids)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows: list[tuple[Any, ...]] = cursor.fetchall()
            return rows


def model_columns(model: type[Model]) -> list[str]:
    """The columns `model_from_row` reads, in its order: select them with values_list."""
    return [field.attname for field in model._meta.concrete_fields]


def model_from_row[M: Model](model: type[M], values: Sequence[Any]) -> tuple[M, Sequence[Any]]:
    """An instance from the row's first `model_columns(model)` values, and the rest of
    the row (the next model's columns, annotations). For fields without converters."""
    columns = model_columns(model)
    instance = model.from_db(connection.alias, columns, values[: len(columns)])
    return instance, values[len(columns) :]
