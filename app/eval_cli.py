"""``geoql eval-languages``: one backend on the same requests in several languages, one table;
``geoql eval-requests``: one backend on the user-request benchmark, per class and per language.

    geoql eval-languages --osmnl-dir ../shared/osmnl --languages en,de,fr,ru,zh,yue,ja,ko
    geoql eval-languages --osmnl-dir ../shared/osmnl --pred-dir runs/osmnl   # score DIR/dev.<lang>.pred
    geoql eval-requests --split dev [--backend cpu] [--misses FILE] [--json OUT]
    geoql eval-requests --split dev --pred answers.jsonl                    # score answers, no compiling

An OsmNL-style directory holds ``dev.<lang>.nl`` and ``dev.<lang>.query`` for each
language, line ``i`` of every file deriving from line ``i`` of the OverpassNL dev split.
For each language the command compiles every request (or reads ``--pred-dir``), scores
the queries against the OverpassNL dev gold (only the wording of the request differs from
the benchmark) and against the language's own gold, and counts the queries with a part that the
request does not license (``geoql.eval.license``: by the request's own words, as ``geoql eval
--unlicensed`` counts them).

It lives in the application layer because it compiles; scoring one file against one gold
file is ``geoql eval --gold`` (``geoql.eval``). Compiled predictions are kept in
``--out-dir`` (default: a user cache folder named after the backend, its options, its
model files and the code) and written atomically every few batches, so a stopped run
resumes where it stopped and a second run with the same setup compiles nothing.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path

from geoql.app.compile import Compiler
from geoql.app.config import CompileConfig, load_config
from geoql.app.cpu.model import default_model_dir
from geoql.core.cli import positive_int
from geoql.core.errors import ConfigError, UserError
from geoql.core.files import check_writable_dir, write_atomic
from geoql.core.paths import user_dir
from geoql.eval.dataset import Example, load_examples, load_split, read_example_lines
from geoql.eval.faithfulness import train_place_aliases
from geoql.eval.license import measure
from geoql.eval.metrics import Scorer, aggregate, get_scorer
from geoql.eval.report import METRIC_COLUMNS, read_predictions
from geoql.eval.userbench import CLASSES, Row, format_report, load_rows, miss_json, read_answers, report_json, score
from geoql.nl.request import read_request
from geoql.retrieval import default_index_dir

LANGUAGES = ("en", "de", "fr", "ru", "zh", "yue", "ja", "ko")
# Predictions are saved after this many requests, so an interruption loses at most these.
CHECKPOINT_EVERY = 64
# The packages whose code decides what a backend answers: cached predictions of other code are stale.
CODE_PACKAGES = ("overpassql", "geoql.core", "geoql.osm", "geoql.nl", "geoql.eval", "geoql.retrieval",
                 "geoql.index", "geoql.app")
STAMP = "stamp.json"
# The row of the OverpassNL dev requests themselves (--original), for the same backend.
ORIGINAL = "orig"


@dataclass
class LanguagesConfig:
    osmnl_dir: str = field(metadata={"help": "directory with <prefix>.<lang>.nl and <prefix>.<lang>.query per language"})
    languages: tuple = field(default=LANGUAGES, metadata={"help": "languages, comma-separated (default: all eight of OsmNL)"})
    prefix: str = field(default="dev", metadata={"help": "the files' prefix: <prefix>.<lang>.nl"})
    gold_ref: str | None = field(default=None, metadata={
        "help": "the reference gold, line i for line i of every language (default: the OverpassNL dev queries)"})
    data_dir: str | None = field(default=None, metadata={
        "help": "OverpassNL directory: the default --gold-ref and the train split's place spellings (default: $GEOQL_DATA_DIR)"})
    pred_dir: str | None = field(default=None, metadata={
        "help": "score the files <prefix>.<lang>.pred of this directory instead of compiling"})
    out_dir: str | None = field(default=None, metadata={
        "help": "where compiled predictions are kept (default: a user cache folder for this backend, model and code)"})
    compile_config: CompileConfig = field(default_factory=CompileConfig, metadata={"help": "backend and compile options"})
    original: bool = field(default=False, metadata={
        "help": f"add a first row '{ORIGINAL}': the OverpassNL dev requests themselves (of --data-dir)"})
    limit: int | None = field(default=None, metadata={"help": "only the first N requests of each language"})
    fresh: bool = field(default=False, metadata={"help": "compile again even where predictions are kept"})
    batch_size: int = field(default=16, metadata={"help": "requests per backend call"})
    json_out: str | None = field(default=None, metadata={"help": "write the table's figures (percent) to this JSON file"})
    progress: bool = field(default=True, metadata={"help": "a progress bar per language"})

    def __post_init__(self):
        if isinstance(self.languages, str):
            self.languages = tuple(part.strip() for part in self.languages.split(","))
        self.languages = tuple(self.languages)
        if not self.languages or not all(self.languages):
            raise ConfigError("--languages wants codes separated by commas, e.g. en,de,fr")
        if ORIGINAL in self.languages:
            raise ConfigError(f"'{ORIGINAL}' is the row of --original, not a language: pass --original instead")
        if len(set(self.languages)) != len(self.languages):
            raise ConfigError(f"--languages names a language twice ({','.join(self.languages)}); give each once")
        if self.limit is not None and int(self.limit) < 1:
            raise ConfigError(f"limit must be at least 1 (got {self.limit}); leave it out for all requests")
        if int(self.batch_size) < 1:
            raise ConfigError(f"batch_size must be at least 1 (got {self.batch_size})")
        if self.pred_dir and (self.out_dir or self.fresh):
            raise ConfigError("--pred-dir scores files you have, it compiles nothing: drop --out-dir / --fresh")


def help_of(name: str) -> str:
    return next(f.metadata["help"] for f in fields(LanguagesConfig) if f.name == name)


# -- inputs ----------------------------------------------------------------------------

@dataclass
class Language:
    code: str
    all_examples: list[Example]  # every line of the language's files
    n: int  # the first n are compiled and scored (--limit)

    @property
    def examples(self) -> list[Example]:
        return self.all_examples[: self.n]


def load_languages(config: LanguagesConfig) -> tuple[list[str], list[Language]]:
    """The reference gold and each language's examples, all checked before any work."""
    base = Path(config.osmnl_dir).expanduser()
    if not base.is_dir():
        raise UserError(f"{base} is not a directory; pass --osmnl-dir DIR with {config.prefix}.<lang>.nl and .query files")
    dev = load_split("dev", config.data_dir) if config.original or not config.gold_ref else None
    ref = read_example_lines(config.gold_ref, "--gold-ref") if config.gold_ref else [e.query for e in dev]
    languages = []
    if config.original:
        if len(dev) != len(ref):
            raise UserError(f"--original: the dev split has {len(dev)} requests but --gold-ref {len(ref)} lines; "
                            "give the OverpassNL dev queries as --gold-ref, or drop --original")
        languages.append(Language(ORIGINAL, dev, min(config.limit or len(dev), len(dev))))
    for code in config.languages:
        nl, gold = base / f"{config.prefix}.{code}.nl", base / f"{config.prefix}.{code}.query"
        if not nl.is_file() or not gold.is_file():
            have = sorted(p.name.split(".")[1] for p in base.glob(f"{config.prefix}.*.nl") if p.name.count(".") == 2)
            raise UserError(f"{base} has no {nl.name} and {gold.name}; choose --languages from "
                            f"{','.join(have) or '(none there)'}")
        examples = load_examples(gold, nl, name=code, options=("--osmnl-dir", "--osmnl-dir", "--osmnl-dir"))
        if len(examples) != len(ref):
            raise UserError(f"{gold} has {len(examples)} lines but the reference gold has {len(ref)}: "
                            "line i of each language must be line i of --gold-ref (give the matching --gold-ref)")
        languages.append(Language(code, examples, min(config.limit or len(examples), len(examples))))
    return ref, languages


# -- predictions: compiled and kept, or read -----------------------------------------------

def _files_signature(path: Path) -> list:
    """Names, sizes and times of a model or index folder's files: a retrained model is another model."""
    if path.is_file():
        st = path.stat()
        return [[path.name, st.st_size, st.st_mtime_ns]]
    if not path.is_dir():
        return []
    rows = []
    for p in sorted(path.rglob("*")):
        if p.is_file():
            st = p.stat()
            rows.append([p.relative_to(path).as_posix(), st.st_size, st.st_mtime_ns])
    return rows


def code_fingerprint() -> str:
    """A digest of the source of the packages that decide a backend's answers."""
    digest = hashlib.sha256()
    this = Path(__file__).resolve()
    for name in CODE_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        for root in spec.submodule_search_locations:
            for p in sorted(Path(root).rglob("*")):
                if p.suffix not in (".py", ".json", ".lark", ".txt", ".tsv") or not p.is_file() or "__pycache__" in p.parts:
                    continue
                if p.resolve() == this:
                    continue  # this command only orders the work: its own changes leave the predictions as they are
                digest.update(p.relative_to(root).as_posix().encode())
                digest.update(p.read_bytes())
    return digest.hexdigest()[:16]


def stamp_of(compile_config: CompileConfig) -> dict:
    """What decides the predictions besides the requests: backend, options, model files, code."""
    options = dict(compile_config.backend_options)
    files = {}
    for key, value in sorted(options.items()):
        if isinstance(value, str) and value and Path(value).expanduser().exists():
            files[key] = _files_signature(Path(value).expanduser())
    if compile_config.backend == "cpu":
        files.setdefault("model_dir", _files_signature(default_model_dir()))
        index = compile_config.index_dir or options.get("index_dir")
        files.setdefault("index_dir", _files_signature(Path(index).expanduser() if index else default_index_dir()))
    settings = {f.name: getattr(compile_config, f.name) for f in fields(CompileConfig)}
    return {"settings": json.loads(json.dumps(settings, default=str, sort_keys=True)), "files": files,
            "code": code_fingerprint()}


def _digest(stamp: dict) -> str:
    return hashlib.sha256(json.dumps(stamp, sort_keys=True).encode()).hexdigest()[:16]


def prepare_out_dir(config: LanguagesConfig, cache: str = "eval-languages") -> tuple[Path, dict]:
    """The folder compiled predictions go to, and its stamp; refuses one that holds another setup's.

    ``config`` is any config with ``compile_config``, ``out_dir``, ``fresh`` and ``prefix``
    (``geoql eval-requests`` passes its own); ``cache`` names the default folder's parent."""
    stamp = stamp_of(config.compile_config)
    key = _digest(stamp)
    if config.out_dir:
        out = Path(config.out_dir).expanduser()
    else:
        out = user_dir("cache", cache, f"{config.compile_config.backend}-{key}")
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} is a file; give a directory to --out-dir")
    try:
        check_writable_dir(out)
    except OSError as exc:
        raise UserError(f"--out-dir: {exc}") from None
    kept = _read_stamp(out)
    if kept is not None and kept.get("key") != key and not config.fresh:
        raise UserError(f"{out} holds predictions of another backend, option, model or code version ({out / STAMP}); "
                        "pass another --out-dir, or --fresh to compile them again there")
    if kept is None and any(out.glob(f"{config.prefix}.*.pred")) and not config.fresh:
        raise UserError(f"{out} holds .pred files that this command did not write; score them with --pred-dir {out}, "
                        "or pass another --out-dir")
    if kept is None or kept.get("key") != key:
        kept = {"key": key, "stamp": stamp, "requests": {}}
    return out, kept


def _read_stamp(out: Path) -> dict | None:
    try:
        data = json.loads((out / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _kept_lines(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    return text.split("\n")[:-1]  # every line ends with a newline; anything after the last is not a line


def compile_language(lang: Language, compiler: Compiler, out: Path, kept: dict, config: LanguagesConfig) -> tuple[list[str], dict]:
    """The predictions for the first ``lang.n`` requests, compiling only those not kept in ``out``.

    ``out/<prefix>.<lang>.pred`` holds the predictions of the first requests, as many as
    ``stamp.json`` says, with a digest of those requests; they are trusted only when the
    digest still matches.
    """
    path = out / f"{config.prefix}.{lang.code}.pred"
    lines: list[str] = []
    record = kept["requests"].get(lang.code)
    if not config.fresh and isinstance(record, dict):
        on_disk = _kept_lines(path)
        n = record.get("n")
        if isinstance(n, int) and n <= min(len(on_disk), len(lang.all_examples)) and \
                record.get("digest") == _prefix_digest(lang.all_examples, n):
            lines = on_disk[:n]
    stats = {"kept": min(len(lines), lang.n), "compiled": 0, "no_query": 0}
    if len(lines) >= lang.n:
        return lines[: lang.n], stats
    todo = lang.all_examples[len(lines): lang.n]
    bar = None
    if config.progress:
        from tqdm import tqdm

        bar = tqdm(total=lang.n, initial=len(lines), desc=f"{lang.code} ({compiler.backend_name})", unit="q",
                   file=sys.stderr)
    since_save = 0
    try:
        for start in range(0, len(todo), config.batch_size):
            chunk = todo[start:start + config.batch_size]
            comps = compiler.compile_batch([e.nl for e in chunk], batch_size=config.batch_size)
            failed = next((k for k, comp in enumerate(comps) if comp.failed), None)
            for comp in comps[:failed]:
                lines.append(comp.query.replace("\n", " "))
                stats["no_query"] += not comp.query
            answered = len(comps) if failed is None else failed
            stats["compiled"] += answered
            since_save += answered
            if failed is not None:
                # The backend failed (no model, no server, a damaged index): a failure is no answer, so it is
                # not written as an empty line that the next run would keep; what came before it is kept.
                why = comps[failed].errors[0] if comps[failed].errors else "it failed"
                where = f" (request {len(lines) + 1} of {lang.code}; the {len(lines)} before it are kept)" if lines else ""
                raise UserError(f"the {compiler.backend_name} backend gives no query{where}: {why}")
            if bar is not None:
                bar.update(len(chunk))
            if since_save >= CHECKPOINT_EVERY:
                _save(path, out, kept, lang, lines)
                since_save = 0
    finally:
        if bar is not None:
            bar.close()
        if since_save:
            _save(path, out, kept, lang, lines)
    return lines, stats


def _prefix_digest(examples: list[Example], n: int) -> str:
    return hashlib.sha256("\n".join(e.nl for e in examples[:n]).encode("utf-8")).hexdigest()[:16]


def _save(path: Path, out: Path, kept: dict, lang: Language, lines: list[str]) -> None:
    # The predictions first, then the stamp that vouches for them: after a stop between
    # the two, the stamp still vouches for the first lines, which have not changed.
    write_atomic(path, "".join(line + "\n" for line in lines))
    kept["requests"][lang.code] = {"n": len(lines), "digest": _prefix_digest(lang.all_examples, len(lines))}
    write_atomic(out / STAMP, json.dumps(kept, indent=1, sort_keys=True) + "\n")


def read_language_predictions(lang: Language, config: LanguagesConfig) -> list[str]:
    path = Path(config.pred_dir).expanduser() / f"{config.prefix}.{lang.code}.pred"
    if not path.is_file():
        raise UserError(f"{path} does not exist; --pred-dir needs {config.prefix}.<lang>.pred for every language of --languages")
    n = len(lang.examples)
    full = None if config.limit else n
    preds = read_predictions(path, expected=full, against=f"{config.prefix}.{lang.code}.nl")
    if config.limit and len(preds) < n:
        raise UserError(f"{path} has {len(preds)} predictions, fewer than --limit {n}; compile them all first")
    return preds[:n]


# -- scoring and the table ------------------------------------------------------------

def score_language(lang: Language, preds: list[str], ref: list[str], scorer: Scorer, aliases: dict) -> dict:
    """The figures of one language: against the reference gold and its own, and the unlicensed rates."""
    examples = lang.examples
    requests = [e.nl for e in examples]
    own = [e.query.strip() for e in examples]
    ref = [q.strip() for q in ref[: lang.n]]
    row = {"n": lang.n,
           "vs_ref": aggregate(scorer.score_many(preds, ref, progress=False)),
           "vs_own": aggregate(scorer.score_many(preds, own, progress=False))}
    read = [read_request(nl) for nl in requests]  # once, for the three files
    row["unlicensed"] = {name: measure(read, queries, aliases=aliases).as_dict()["any"]
                         for name, queries in (("pred", preds), ("gold_ref", ref), ("gold_own", own))}
    row["empty"] = sum(not p.strip() for p in preds)
    return row


def format_languages(rows: dict[str, dict]) -> str:
    """The table: per language, the metrics against both golds and the shares of queries with unlicensed parts.

    >>> figures = {"oqs": 61.5, "kvs": 53.2, "tree": 60.0, "chrf": 70.0, "em": 1.0, "n": 2}
    >>> print(format_languages({"en": {"n": 2, "vs_ref": figures, "vs_own": figures,
    ...     "unlicensed": {"pred": 50.0, "gold_ref": 0.0, "gold_own": 0.0}}}))
                 vs OverpassNL dev gold         vs the language's own gold     unlicensed %
    lang      n    OQS   KVS TreeS  chrF    EM    OQS   KVS TreeS  chrF    EM   pred  gold  own
    en        2   61.5  53.2  60.0  70.0   1.0   61.5  53.2  60.0  70.0   1.0   50.0   0.0  0.0
    """
    metric_keys = ("oqs", "kvs", "tree", "chrf", "em")
    labels = dict(METRIC_COLUMNS)
    head = " ".join(f"{labels[k]:>5}" for k in metric_keys)
    width = len(head) + 2
    lines = [f"{'':13}{'vs OverpassNL dev gold':<{width}}{'vs the language' + chr(39) + 's own gold':<{width}}unlicensed %",
             f"{'lang':<6}{'n':>5}  {head}  {head}   pred  gold  own"]
    for code, row in rows.items():
        ref = " ".join(f"{row['vs_ref'][k]:>5.1f}" for k in metric_keys)
        own = " ".join(f"{row['vs_own'][k]:>5.1f}" for k in metric_keys)
        u = row["unlicensed"]
        lines.append(f"{code:<6}{row['n']:>5}  {ref}  {own}  {u['pred']:>5.1f} {u['gold_ref']:>5.1f} {u['gold_own']:>4.1f}")
    return "\n".join(lines)


def run_languages(config: LanguagesConfig, scorer: Scorer | None = None) -> tuple[dict, str]:
    """Compile (or read) and score every language; returns the figures and the printed report."""
    scorer = scorer or get_scorer()
    ref, languages = load_languages(config)
    if config.json_out:
        if Path(config.json_out).is_dir():
            raise UserError(f"{config.json_out} is a directory; give a file name for --json")
        try:
            check_writable_dir(Path(config.json_out).expanduser().parent)
        except OSError as exc:
            raise UserError(f"--json: {exc}") from None
    preds: dict[str, list[str]] = {}
    stats: dict[str, dict] = {}
    source: str
    if config.pred_dir:
        for lang in languages:  # every file is checked before anything is scored
            preds[lang.code] = read_language_predictions(lang, config)
        source = str(config.pred_dir)
    else:
        out, kept = prepare_out_dir(config)
        source = str(out)
        compiler = Compiler(config=config.compile_config)
        try:
            for lang in languages:
                preds[lang.code], stats[lang.code] = compile_language(lang, compiler, out, kept, config)
        finally:
            compiler.close()
    aliases = train_place_aliases(config.data_dir)
    rows = {}
    for lang in languages:
        rows[lang.code] = score_language(lang, preds[lang.code], ref, scorer, aliases)
        if lang.code in stats:
            rows[lang.code]["compiled"] = stats[lang.code]["compiled"]
            rows[lang.code]["kept"] = stats[lang.code]["kept"]
    what = f"predictions from {source}" if config.pred_dir else \
        f"backend {config.compile_config.backend}, predictions kept in {source}"
    text = "\n".join([
        f"{config.osmnl_dir}: {len(config.languages)} languages, {what}",
        format_languages(rows),
        f"unlicensed %: queries with a part their request does not license, by its own words: a tag, area, around, "
        f"set name, setting, output, name, id, user or date (pred: the predictions, gold: the OverpassNL dev gold, "
        f"own: the language's gold; " + (f"{ORIGINAL}: the OverpassNL dev requests themselves; " if config.original else "") +
        f"place spellings of {len(aliases)} places learned from the train split license a place; "
        f"with a backend's tag evidence: scripts/unlicensed_rate.py)",
        _detail_command(config, source, next((lang.code for lang in languages if lang.code != ORIGINAL), None)),
    ]).rstrip("\n")
    compiled = sum(s["compiled"] for s in stats.values())
    if stats:
        text += f"\ncompiled {compiled} requests now, {sum(s['kept'] for s in stats.values())} kept from before"
    figures = {"osmnl_dir": str(config.osmnl_dir), "backend": None if config.pred_dir else config.compile_config.backend,
               "predictions": source, "limit": config.limit, "aliases": len(aliases), "languages": rows}
    if config.json_out:
        write_atomic(Path(config.json_out).expanduser(), json.dumps(figures, indent=2, ensure_ascii=False) + "\n")
    return figures, text


def _detail_command(config: LanguagesConfig, source: str, code: str | None) -> str:
    if code is None:
        return ""
    base, stem = Path(config.osmnl_dir), f"{config.prefix}.{code}"
    return (f"one language in detail: geoql eval --gold {base / (stem + '.query')} --requests {base / (stem + '.nl')} "
            f"--pred {Path(source) / (stem + '.pred')} --unlicensed")


# -- the command --------------------------------------------------------------------------

def register(subparsers) -> None:
    p = subparsers.add_parser(
        "eval-languages", help="one backend on OsmNL-style requests in several languages: one table",
        description="Compile the requests of every language of an OsmNL-style directory (or read --pred-dir) "
        "and print OQS, KVS, TreeS, chrF and EM against the OverpassNL dev gold and against each "
        "language's own gold, with the share of queries with a part the request does not license.")
    p.add_argument("--osmnl-dir", required=True, metavar="DIR", help=help_of("osmnl_dir"))
    p.add_argument("--languages", default=",".join(LANGUAGES), metavar="LANGS", help=help_of("languages"))
    p.add_argument("--prefix", default="dev", help=help_of("prefix"))
    p.add_argument("--gold-ref", metavar="FILE", help=help_of("gold_ref"))
    p.add_argument("--data-dir", metavar="DIR", help=help_of("data_dir"))
    p.add_argument("--pred-dir", metavar="DIR", help=help_of("pred_dir"))
    p.add_argument("--out-dir", metavar="DIR", help=help_of("out_dir"))
    add_backend_arguments(p)
    p.add_argument("--original", action="store_true", help=help_of("original"))
    p.add_argument("--limit", type=positive_int, help=help_of("limit"))
    p.add_argument("--fresh", action="store_true", help=help_of("fresh"))
    p.add_argument("--batch-size", type=positive_int, default=16, help=help_of("batch_size"))
    p.add_argument("--json", dest="json_out", metavar="OUT", help=help_of("json_out"))
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bars")
    p.set_defaults(handler=run)
    register_requests(subparsers)


def add_backend_arguments(p) -> None:
    """--backend, --config and --option: what compiles, for the commands that compile (compile_config_of reads them)."""
    p.add_argument("--backend", help="cpu (the default), transformers, openai or vllm")
    p.add_argument("--config", help="YAML file with compile options (see docs/compile.md)")
    p.add_argument("--option", "-o", action="append", default=[], metavar="KEY=VALUE",
                   help="backend option, e.g. model_dir=DIR, model=./runs/sft, base_url=URL (repeatable)")


def compile_config_of(args) -> CompileConfig:
    config = load_config(args.config) if args.config else CompileConfig()
    options = dict(config.backend_options)
    if args.backend and args.backend != config.backend:
        config, options = config.replace(backend=args.backend, backend_options={}), {}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--option wants KEY=VALUE, got {item!r}")
        options[key.strip()] = value
    if config.backend == "cpu":
        # An evaluation scores the model there is: a missing or stale one is an error to
        # fix, not minutes of training (into the model folder) in the middle of a run.
        options.setdefault("train_if_missing", "false")
    return config.replace(backend_options=options)


def run(args) -> int:
    if args.pred_dir and (args.backend or args.config or args.option):
        raise UserError("--pred-dir scores files you have, it compiles nothing: drop --backend / --config / --option")
    config = LanguagesConfig(
        osmnl_dir=args.osmnl_dir, languages=args.languages, prefix=args.prefix, gold_ref=args.gold_ref,
        data_dir=args.data_dir, pred_dir=args.pred_dir, out_dir=args.out_dir,
        compile_config=compile_config_of(args), original=args.original, limit=args.limit, fresh=args.fresh, batch_size=args.batch_size,
        json_out=args.json_out, progress=args.progress)
    _, text = run_languages(config)
    print(text)
    return 0


# -- geoql eval-requests: the user-request benchmark -------------------------------------------

@dataclass
class RequestsConfig:
    split: str = field(default="dev", metadata={"help": "dev (tune on it), test (score once, at the end) or all"})
    pred: str | None = field(default=None, metadata={
        "help": "score these answers instead of compiling: JSONL with id and query, or one query a line in row order"})
    compile_config: CompileConfig = field(default_factory=CompileConfig, metadata={"help": "backend and compile options"})
    out_dir: str | None = field(default=None, metadata={
        "help": "where compiled answers are kept (default: a user cache folder for this backend, model and code)"})
    fresh: bool = field(default=False, metadata={"help": "compile again even where answers are kept"})
    limit: int | None = field(default=None, metadata={"help": "only the first N rows of each split"})
    classes: tuple = field(default=(), metadata={"help": "only these classes, comma-separated"})
    languages: tuple = field(default=(), metadata={"help": "only these languages, comma-separated"})
    batch_size: int = field(default=16, metadata={"help": "requests per backend call"})
    progress: bool = field(default=True, metadata={"help": "a progress bar while compiling"})
    show: int = field(default=20, metadata={"help": "misses to print (all of them go to --misses)"})
    misses_out: str | None = field(default=None, metadata={"help": "write every miss as JSONL (request, query, failed facts)"})
    answers_out: str | None = field(default=None, metadata={"help": "write the scored answers as JSONL (id, query)"})
    json_out: str | None = field(default=None, metadata={"help": "write the figures and the misses as JSON"})
    same_as: str | None = field(default=None, metadata={
        "help": "compile and compare with these earlier answers (a kept .pred or --answers JSONL), without scoring: "
                "which rows changed. Where none did, a split already scored keeps its score unseen again (test)"})
    prefix: str = "userbench"  # the kept files: <prefix>.<split>.pred

    def __post_init__(self):
        for name in ("classes", "languages"):
            value = getattr(self, name)
            if isinstance(value, str):
                value = tuple(part.strip() for part in value.split(",") if part.strip())
            setattr(self, name, tuple(value))
        unknown = [c for c in self.classes if c not in CLASSES]
        if unknown:
            raise ConfigError(f"--classes: unknown {', '.join(unknown)}; choose from {', '.join(CLASSES)}")
        if self.limit is not None and int(self.limit) < 1:
            raise ConfigError(f"limit must be at least 1 (got {self.limit})")
        if self.pred and (self.out_dir or self.fresh):
            raise ConfigError("--pred scores answers you have, it compiles nothing: drop --out-dir / --fresh")
        if self.same_as and (self.pred or self.misses_out or self.json_out):
            raise ConfigError("--same-as compares answers without scoring them: drop --pred / --misses / --json")


def requests_help(name: str) -> str:
    return next(f.metadata["help"] for f in fields(RequestsConfig) if f.name == name)


def benchmark_rows(config: RequestsConfig) -> list[Row]:
    """The rows to score: the split's, the first ``limit`` of each split, then the class and language filters."""
    splits = ("dev", "test") if config.split == "all" else (config.split,)
    rows = []
    for split in splits:
        rows += load_rows(split)[: config.limit or None]
    rows = [r for r in rows if (not config.classes or r.cls in config.classes)
            and (not config.languages or r.lang in config.languages)]
    if not rows:
        raise UserError("no row of the benchmark matches --classes / --languages; see --help for the names")
    return rows


def compile_rows(rows: list[Row], config: RequestsConfig) -> tuple[list[str], str]:
    """Each row's answer from the backend, and where they are kept: per split in the out folder,
    so a rerun compiles only what is missing (and nothing when backend, model and code are the same)."""
    out, kept = prepare_out_dir(config, cache="eval-requests")
    compiler = Compiler(config=config.compile_config)
    answers: dict[str, str] = {}
    counts = {"compiled": 0, "kept": 0}
    try:
        for split in ("dev", "test"):
            wanted = {r.id for r in rows if r.split == split}
            if not wanted:
                continue
            everything = load_rows(split)
            # the split's rows in file order, up to the last one asked for (a prefix, so kept answers stay valid)
            last = max(i for i, r in enumerate(everything) if r.id in wanted)
            examples = [Example("userbench", i, r.request, "", "") for i, r in enumerate(everything)]
            lines, stats = compile_language(Language(split, examples, last + 1), compiler, out, kept, config)
            answers.update({r.id: line for r, line in zip(everything, lines)})
            counts["compiled"] += stats["compiled"]
            counts["kept"] += stats["kept"]
    finally:
        compiler.close()
    return [answers[r.id] for r in rows], f"{out}; compiled {counts['compiled']} now, {counts['kept']} kept from before"


def run_requests(config: RequestsConfig) -> tuple[dict, str]:
    """Compile (or read) the answers and score them; returns the figures and the printed report."""
    rows = benchmark_rows(config)
    for path, option in ((config.json_out, "--json"), (config.misses_out, "--misses"), (config.answers_out, "--answers")):
        if path:
            if Path(path).is_dir():
                raise UserError(f"{path} is a directory; give a file name for {option}")
            try:
                check_writable_dir(Path(path).expanduser().parent)
            except OSError as exc:
                raise UserError(f"{option}: {exc}") from None
    if config.pred:
        answers, source = read_answers(config.pred, rows), f"answers from {config.pred}"
    else:
        answers, kept_in = compile_rows(rows, config)
        source = f"backend {config.compile_config.backend}, answers kept in {kept_in}"
    title = f"user requests, split {config.split}: {len(rows)} rows; {source}"
    if config.same_as:
        return compare_answers(rows, answers, config, title)
    report = score(rows, answers)
    text = format_report(report, title=title, misses=config.show)
    if config.misses_out:
        write_atomic(Path(config.misses_out).expanduser(),
                     "".join(json.dumps(miss_json(r), ensure_ascii=False) + "\n" for r in report.misses()))
        text += f"\nall {len(report.misses())} misses: {config.misses_out}"
    if config.answers_out:
        _write_answers(config.answers_out, [(r.row.id, r.query) for r in report.results])
    figures = report_json(report, split=config.split, source=source, limit=config.limit,
                          classes=list(config.classes), languages=list(config.languages))
    if config.json_out:
        write_atomic(Path(config.json_out).expanduser(), json.dumps(figures, indent=2, ensure_ascii=False) + "\n")
    return figures, text


def _write_answers(path: str, answers: list[tuple[str, str]]) -> None:
    """``--answers``: one JSON object a line, ``id`` and ``query`` (what ``--pred`` and ``--same-as`` read)."""
    write_atomic(Path(path).expanduser(),
                 "".join(json.dumps({"id": i, "query": q}, ensure_ascii=False) + "\n" for i, q in answers))


def compare_answers(rows: list[Row], answers: list[str], config: RequestsConfig, title: str) -> tuple[dict, str]:
    """``--same-as``: the rows whose answer differs from the earlier one, by id, and nothing scored (no
    request text, no verdict: comparing code on the test split shows nothing of it)."""
    before = read_answers(config.same_as, rows)
    changed = [r.id for r, now, then in zip(rows, answers, before) if now.strip() != then.strip()]
    if config.answers_out:
        _write_answers(config.answers_out, [(r.id, a) for r, a in zip(rows, answers)])
    text = (f"{title}\n{len(changed)} of {len(rows)} answers differ from {config.same_as} (not scored)"
            + (f": {', '.join(changed)}" if changed else ""))
    return {"n": len(rows), "changed": changed, "same_as": str(config.same_as)}, text


def register_requests(subparsers) -> None:
    p = subparsers.add_parser(
        "eval-requests", help="one backend on the user-request benchmark: per class, per language, the misses",
        description="Compile the requests of the user-request benchmark (geoql.eval.userbench; or read --pred) and "
        "print the share of answers that carry every fact of their request and nothing foreign, per class "
        "and per language, with the misses: which fact failed, the request and the query. Tune on dev; "
        "score test once, at the end.")
    p.add_argument("--split", choices=("dev", "test", "all"), default="dev", help=requests_help("split"))
    p.add_argument("--pred", metavar="FILE", help=requests_help("pred"))
    add_backend_arguments(p)
    p.add_argument("--out-dir", metavar="DIR", help=requests_help("out_dir"))
    p.add_argument("--fresh", action="store_true", help=requests_help("fresh"))
    p.add_argument("--limit", type=positive_int, help=requests_help("limit"))
    p.add_argument("--classes", default="", metavar="NAMES", help=requests_help("classes"))
    p.add_argument("--languages", default="", metavar="LANGS", help=requests_help("languages"))
    p.add_argument("--batch-size", type=positive_int, default=16, help=requests_help("batch_size"))
    p.add_argument("--show", type=int, default=20, metavar="N", help=requests_help("show"))
    p.add_argument("--misses", dest="misses_out", metavar="FILE", help=requests_help("misses_out"))
    p.add_argument("--answers", dest="answers_out", metavar="FILE", help=requests_help("answers_out"))
    p.add_argument("--json", dest="json_out", metavar="OUT", help=requests_help("json_out"))
    p.add_argument("--same-as", metavar="FILE", help=requests_help("same_as"))
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    p.set_defaults(handler=run_requests_command)


def run_requests_command(args) -> int:
    if args.pred and (args.backend or args.config or args.option):
        raise UserError("--pred scores answers you have, it compiles nothing: drop --backend / --config / --option")
    config = RequestsConfig(
        split=args.split, pred=args.pred, compile_config=compile_config_of(args), out_dir=args.out_dir,
        fresh=args.fresh, limit=args.limit, classes=args.classes, languages=args.languages,
        batch_size=args.batch_size, progress=args.progress, show=max(args.show, 0), misses_out=args.misses_out,
        answers_out=args.answers_out, json_out=args.json_out, same_as=args.same_as)
    _, text = run_requests(config)
    print(text)
    return 0
