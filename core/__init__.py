"""Ranklens core: the retrieval engine behind the workbench.

The default ranking (BM25 over a schema-aware projection) matches the reference
engine ratel-ai 0.12.0 score for score.
"""

from __future__ import annotations

__version__ = "0.1.0"
