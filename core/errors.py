"""The project's error types.

Every error a user can cause (bad file, unknown method, missing model) is a
`RanklensError`; its message names the offending item and says how to fix it.
"""

from __future__ import annotations


class RanklensError(Exception):
    """Base class of every error Ranklens raises on purpose."""


class CatalogError(RanklensError, ValueError):
    """A catalog file or item could not be loaded: the message names the file, the item and the fix."""


class QueryError(RanklensError, ValueError):
    """A query, method or option is not valid: the message lists the valid choices."""


class EmbedderError(RanklensError):
    """An embedding model could not be loaded or failed while embedding."""


class RerankerError(RanklensError):
    """A reranker could not be loaded or failed."""
