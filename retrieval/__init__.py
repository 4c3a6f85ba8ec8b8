"""Retrieval over the tag knowledge index: tags, few-shot examples, and the prompt.

Heavy libraries (faiss, bm25s, sentence-transformers) load when a retriever is
loaded, not on import.
"""

from .artifacts import IndexMissingError, default_index_dir
from .config import RetrievalConfig
from .examples import ExampleRetriever, RetrievedExample
from .prompt import SYSTEM_PROMPT, build_prompt
from .tags import TagHit, TagRetriever

__all__ = [
    "ExampleRetriever",
    "IndexMissingError",
    "RetrievalConfig",
    "RetrievedExample",
    "SYSTEM_PROMPT",
    "TagHit",
    "TagRetriever",
    "build_prompt",
    "default_index_dir",
]
