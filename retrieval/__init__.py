"""Retrieval over the tag knowledge index: tags, few-shot examples, and the prompt.

Heavy libraries (faiss, bm25s, sentence-transformers) load when a retriever is
loaded, not on import.
"""

from .artifacts import IndexMissingError, default_index_dir
from .config import K_EXAMPLES, K_TAGS, RetrievalConfig
from .examples import ExampleRetriever, RetrievedExample
from .prompt import SYSTEM_PROMPT, build_prompt, prompt_context
from .tags import TagHit, TagRetriever

__all__ = [
    "ExampleRetriever",
    "IndexMissingError",
    "K_EXAMPLES",
    "K_TAGS",
    "RetrievalConfig",
    "RetrievedExample",
    "SYSTEM_PROMPT",
    "TagHit",
    "TagRetriever",
    "build_prompt",
    "prompt_context",
    "default_index_dir",
]
