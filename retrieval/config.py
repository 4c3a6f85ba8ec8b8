"""Query-time settings of the retrievers.

The tag-fusion defaults were tuned on every second dev example (grid over the
three source weights, the popularity prior, the number of voting examples and
the vote power; see docs/retrieval.md). The test split was not used.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from geoql.core.errors import ConfigError

MAX_REQUEST_CHARS = 2000  # longer requests are cut: no OverpassNL request comes close
# How much context a prompt gets, at inference (app.config.CompileConfig) and in the
# training prompts (training.config.DataConfig) alike: a model sees what it was trained on.
K_TAGS = 10  # candidate tags
K_EXAMPLES = 5  # retrieved training examples


@dataclass
class RetrievalConfig:
    # fp32: the vectors of the model that embedded the index (ONNX Runtime encodes a request in a few ms).
    int8_query_encoder: bool = field(default=False, metadata={"help": "embed requests with an int8-quantised copy of the encoder "
                                     "(vectors ~0.95 cosine to fp32; the answers change)"})
    rrf_k: float = field(default=60.0, metadata={"help": "reciprocal-rank-fusion constant (higher = flatter)"})
    # example retrieval
    example_dense_weight: float = field(default=1.0, metadata={"help": "weight of the dense ranking of examples"})
    example_bm25_weight: float = field(default=1.0, metadata={"help": "weight of the BM25 ranking of examples"})
    example_char_weight: float = field(default=1.0, metadata={"help": "weight of the char n-gram TF-IDF ranking of examples"})
    example_pool: int = field(default=100, metadata={"help": "candidates taken from each example ranking before fusion"})
    # tag retrieval
    fusion: str = field(default="learned", metadata={"help": "tag fusion: 'learned' (the index's ranker.json from `geoql index fit-ranker`; "
                        "falls back to 'linear' without it), 'linear' (weighted calibrated scores) or 'rrf' (weighted reciprocal rank)"})
    example_vote_power: float = field(default=2.0, metadata={"help": "an example's vote is cos(request, example) ** power"})
    tag_dense_weight: float = field(default=0.5, metadata={"help": "weight of the dense (name/synonym) ranking of tags"})
    tag_bm25_weight: float = field(default=0.5, metadata={"help": "weight of the BM25 ranking of tags"})
    tag_example_weight: float = field(default=8.0, metadata={"help": "weight of the tags of the nearest training examples"})
    tag_pool: int = field(default=100, metadata={"help": "candidates taken from each tag ranking before fusion"})
    surface_pool: int = field(default=400, metadata={"help": "dense surfaces (names, synonyms, phrases) searched per request"})
    evidence_examples: int = field(default=20, metadata={"help": "nearest training examples whose tags vote"})
    max_free_text: int | None = field(default=None, metadata={"help": "learned fusion: at most this many free-text key=* tags "
                                      "in a result (they keep their linear-fusion places); None = no cap, 0 = none"})
    free_text_shift: int = field(default=2, metadata={"help": "learned fusion: free-text key=* tags move this many places "
                                 "below their linear-fusion place (controlled tags fill the gap)"})
    popularity_weight: float = field(default=0.3, metadata={"help": "weight of the log-popularity prior"})

    def __post_init__(self) -> None:
        if self.rrf_k <= 0:
            raise ConfigError(f"rrf_k must be positive, got {self.rrf_k}; 60 is the usual choice")
        for name in ("example_pool", "tag_pool", "surface_pool"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.fusion not in {"learned", "linear", "rrf"}:
            raise ConfigError(f"fusion must be 'learned', 'linear' or 'rrf', got {self.fusion!r}")
        if self.free_text_shift < 0:
            raise ConfigError(f"free_text_shift must be >= 0, got {self.free_text_shift}")
        if self.evidence_examples < 0:
            raise ConfigError("evidence_examples must be >= 0 (0 turns example evidence off)")
        weights = [self.example_dense_weight, self.example_bm25_weight, self.example_char_weight]
        if min(weights) < 0 or sum(weights) == 0:
            raise ConfigError("example weights must be >= 0 and not all 0; set at least one of dense/bm25/char to 1")
        tag_weights = [self.tag_dense_weight, self.tag_bm25_weight, self.tag_example_weight]
        if min(tag_weights) < 0 or sum(tag_weights) == 0:
            raise ConfigError("tag weights must be >= 0 and not all 0; set at least one of dense/bm25/example to 1")
