"""Source 1: the iD editor's tagging schema from the npm registry.

The package is pinned (the registry's ``latest`` tag has served an old
backport), its tarball is checked against the registry's ``dist.integrity``
(SRI sha512) and cached, so a rebuild needs the network only once.

Besides English, the package ships ``dist/translations/<lang>.json`` for about
130 languages (preset names, terms and aliases, field labels and option titles).
They are kept as raw bytes and parsed one language at a time
(``SchemaFiles.translation``): all of them parsed at once would hold several
hundred MB of Python objects.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from geoql.core.errors import GeoqlError
from geoql.core.files import write_atomic

PACKAGE = "@openstreetmap/id-tagging-schema"
DIST_FILES = {
    "presets": "package/dist/presets.json",
    "fields": "package/dist/fields.json",
    "translations": "package/dist/translations/en.json",
    "deprecated": "package/dist/deprecated.json",
    "taginfo": "package/dist/taginfo.json",
}
TRANSLATIONS_DIR = "package/dist/translations/"
# "de.json", "zh-CN.json", "be@tarask.json"; not the ".min.json" twins (same content) nor index.json (coverage)
_TRANSLATION_FILE = re.compile(r"^([a-z]{2,3}(?:-[A-Za-z]{2,4})?(?:@[a-z]+)?)\.json$")


class SchemaError(GeoqlError):
    """The schema could not be fetched or does not look like id-tagging-schema."""


@dataclass(frozen=True)
class SchemaFiles:
    version: str
    integrity: str
    tarball_url: str
    presets: dict
    fields: dict
    translations: dict  # the "en" → "presets" subtree: presets, fields, categories
    deprecated: list
    taginfo: dict
    # language code -> the raw bytes of dist/translations/<lang>.json, English included
    translation_files: dict[str, bytes] = field(default_factory=dict, repr=False)

    @property
    def languages(self) -> list[str]:
        """Codes of the languages the package ships translations for (as the package spells them), sorted."""
        return sorted(self.translation_files)

    def translation(self, lang: str) -> dict:
        """The ``presets`` subtree (presets, fields, categories) of one language; {} when the file lacks one.

        A file that does not parse raises :class:`SchemaError` naming it.
        """
        data = self.translation_files.get(lang)
        if data is None:
            return {}
        try:
            tree = json.loads(data)
        except ValueError as exc:
            raise SchemaError(f"{TRANSLATIONS_DIR}{lang}.json in {PACKAGE}@{self.version} does not parse ({exc})") from None
        section = tree.get(lang, {}) if isinstance(tree, dict) else {}
        presets = section.get("presets") if isinstance(section, dict) else None
        return presets if isinstance(presets, dict) else {}


def metadata_url(registry: str, version: str) -> str:
    return f"{registry.rstrip('/')}/{quote(PACKAGE, safe='@')}/{version}"


def check_integrity(data: bytes, integrity: str) -> None:
    """Check ``data`` against an SRI string such as ``sha512-<base64>``."""
    algo, _, expected = integrity.partition("-")
    if algo not in {"sha512", "sha384", "sha256"} or not expected:
        raise SchemaError(f"unsupported integrity string {integrity!r} in the registry metadata")
    digest = base64.b64encode(hashlib.new(algo, data).digest()).decode()
    if digest != expected:
        raise SchemaError(f"the {PACKAGE} tarball fails its {algo} integrity check (corrupt download or cache)")


def fetch_tarball(registry: str, version: str, cache_dir: Path, *, timeout: float = 60.0) -> tuple[bytes, dict]:
    """Return (tarball bytes, registry ``dist`` metadata), from the cache when it verifies."""
    import requests

    cache_dir.mkdir(parents=True, exist_ok=True)
    meta_path = cache_dir / f"id-tagging-schema-{version}.dist.json"
    tgz_path = cache_dir / f"id-tagging-schema-{version}.tgz"
    if meta_path.is_file() and tgz_path.is_file():
        dist = json.loads(meta_path.read_text(encoding="utf-8"))
        data = tgz_path.read_bytes()
        try:
            check_integrity(data, dist["integrity"])
            return data, dist
        except (SchemaError, KeyError):
            pass  # a damaged cache is refetched below
    url = metadata_url(registry, version)
    try:
        response = requests.get(url, timeout=timeout, headers={"Accept": "application/json"})
        response.raise_for_status()
        dist = response.json()["dist"]
        tarball = requests.get(dist["tarball"], timeout=timeout)
        tarball.raise_for_status()
    except (requests.RequestException, ValueError, KeyError) as exc:
        raise SchemaError(
            f"could not fetch {PACKAGE}@{version} from {registry} ({exc}); check registry access "
            "or pass --registry URL"
        ) from None
    data = tarball.content
    check_integrity(data, dist.get("integrity", ""))
    write_atomic(tgz_path, data)
    write_atomic(meta_path, json.dumps(dist).encode())
    return data, dist


def read_schema(data: bytes, dist: dict, version: str) -> SchemaFiles:
    """Parse the five dist files out of the tarball bytes; keep every language's translation file unparsed."""
    loaded = {}
    translation_files: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            for name, member in DIST_FILES.items():
                handle = archive.extractfile(member)
                if handle is None:
                    raise KeyError(member)
                loaded[name] = json.load(handle)
            for member in archive.getmembers():
                if not member.isfile() or not member.name.startswith(TRANSLATIONS_DIR):
                    continue
                match = _TRANSLATION_FILE.match(member.name[len(TRANSLATIONS_DIR):])
                handle = archive.extractfile(member) if match else None
                if handle is not None:
                    translation_files[match.group(1)] = handle.read()
    except (tarfile.TarError, KeyError, ValueError) as exc:
        raise SchemaError(f"the {PACKAGE}@{version} tarball lacks a readable {exc}") from None
    try:
        translations = loaded["translations"]["en"]["presets"]
    except (KeyError, TypeError):
        raise SchemaError(f"{DIST_FILES['translations']} has no en.presets section") from None
    return SchemaFiles(
        version=version,
        integrity=dist.get("integrity", ""),
        tarball_url=dist.get("tarball", ""),
        presets=loaded["presets"],
        fields=loaded["fields"],
        translations=translations,
        deprecated=loaded["deprecated"],
        taginfo=loaded["taginfo"],
        translation_files=translation_files,
    )


def load_schema(registry: str, version: str, cache_dir: Path) -> SchemaFiles:
    data, dist = fetch_tarball(registry, version, cache_dir)
    return read_schema(data, dist, version)
