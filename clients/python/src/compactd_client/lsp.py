"""The LSP types compactd uses for progress. LSP defines them, so they have
no schema under schemas/ and are written here by hand."""

from typing import Literal, Optional, TypedDict, Union

#: A `$/progress` token: a client's `workDoneToken`, or one the server created.
ProgressToken = Union[int, str]


class _WorkDoneProgressBeginRequired(TypedDict):
    kind: Literal["begin"]
    title: str


class WorkDoneProgressBegin(_WorkDoneProgressBeginRequired, total=False):
    cancellable: bool
    message: str
    percentage: Optional[int]


class _WorkDoneProgressReportRequired(TypedDict):
    kind: Literal["report"]


class WorkDoneProgressReport(_WorkDoneProgressReportRequired, total=False):
    cancellable: bool
    message: str
    percentage: Optional[int]


class _WorkDoneProgressEndRequired(TypedDict):
    kind: Literal["end"]


class WorkDoneProgressEnd(_WorkDoneProgressEndRequired, total=False):
    message: str


WorkDoneProgressValue = Union[WorkDoneProgressBegin, WorkDoneProgressReport, WorkDoneProgressEnd]


class ProgressParams(TypedDict):
    """`$/progress`'s params."""

    token: ProgressToken
    value: WorkDoneProgressValue
