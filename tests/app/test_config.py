"""CompileConfig and YAML config files."""

from __future__ import annotations

import pytest

from geoql.app.config import CompileConfig, load_config


def test_defaults_are_the_cpu_backend_and_greedy():
    c = CompileConfig()
    assert c.backend == "cpu" and c.n == 1 and c.effective_temperature == 0.0
    assert c.max_new_tokens >= 384


def test_sampling_defaults_to_a_temperature():
    assert CompileConfig(n=8).effective_temperature == 0.7
    assert CompileConfig(n=8, temperature=0.2).effective_temperature == 0.2


@pytest.mark.parametrize("kwargs, fix", [
    ({"n": 0}, "at least one"), ({"temperature": -1}, "greedy"), ({"top_p": 0}, "nucleus"),
    ({"max_new_tokens": 2}, "384"), ({"backend_options": "x"}, "mapping"), ({"k_tags": -1}, "0 leaves"),
])
def test_bad_values_name_the_fix(kwargs, fix):
    with pytest.raises(ValueError, match=fix):
        CompileConfig(**kwargs)


def test_every_field_has_help():
    from dataclasses import fields

    assert all(f.metadata.get("help") for f in fields(CompileConfig))


def test_yaml_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("backend: openai\nbackend_options: {base_url: 'http://127.0.0.1:8000/v1'}\nn: 4\n")
    c = load_config(path)
    assert c.backend == "openai" and c.n == 4 and c.backend_options["base_url"].endswith("/v1")


@pytest.mark.parametrize("text, message", [
    ("backend: openai\nbogus: 1\n", "unknown option"), ("[1, 2]\n", "mapping"), ("a: [\n", "not valid YAML"),
])
def test_bad_yaml_files(tmp_path, text, message):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        load_config(path)
    with pytest.raises(ValueError, match="not found"):
        load_config(tmp_path / "missing.yaml")


def test_replace_rejects_unknown_fields():
    with pytest.raises(ValueError, match="unknown compile option"):
        CompileConfig().replace(temprature=1)
