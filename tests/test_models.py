"""Model catalog: cards load, parameter counts match published numbers, KV bytes.

Expected numbers come from outside this repo (model cards, papers, keras-hub
presets, vLLM's KV-cache formula), never from the code under test.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from rlbatch_solver.catalog.models import (
    cards_dir,
    from_hf_config,
    list_models,
    load_model,
)
from rlbatch_solver.errors import InputError

REQUIRED_MODELS = {
    "qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-3b", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b",
    "qwen2.5-72b", "qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3-8b", "qwen3-14b", "qwen3-32b",
    "qwen3-30b-a3b", "qwen3-235b-a22b", "llama3.1-8b", "llama3.1-70b", "llama3.2-1b", "llama3.2-3b",
    "mistral-7b", "gemma2-9b", "deepseek-r1-distill-qwen-1.5b", "deepseek-r1-distill-qwen-7b",
    "deepseek-v3",
}

# Qwen/Qwen2.5-7B config.json (architecture keys), as published on Hugging Face.
QWEN25_7B_CONFIG = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "max_position_embeddings": 131072,
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "tie_word_embeddings": False,
    "vocab_size": 152064,
}

# deepseek-ai/DeepSeek-V3 config.json (size keys).
DEEPSEEK_V3_CONFIG = {
    "model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432,
    "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128,
    "vocab_size": 129280, "max_position_embeddings": 163840, "tie_word_embeddings": False,
    "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
    "moe_intermediate_size": 2048, "first_k_dense_replace": 3, "moe_layer_freq": 1,
    "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128, "v_head_dim": 128,
}


# ------------------------------------------------------------------ catalog
def test_catalog_has_every_required_model() -> None:
    assert REQUIRED_MODELS <= set(list_models())


def test_cards_dir_holds_the_yaml_files() -> None:
    assert (cards_dir() / "qwen2.5-7b.yaml").is_file()


@pytest.mark.parametrize("name", sorted(REQUIRED_MODELS))
def test_card_loads_and_is_sourced(name: str) -> None:
    card = load_model(name)
    assert card.name == name
    assert card.hf_id and "/" in card.hf_id
    assert card.config_source and card.published_params_source
    assert card.published_params > 0


def test_card_file_name_matches_card_name() -> None:
    for path in cards_dir().glob("*.yaml"):
        assert load_model(str(path)).name == path.stem


@pytest.mark.parametrize("name", sorted(REQUIRED_MODELS))
def test_total_params_within_2_percent_of_published(name: str) -> None:
    card = load_model(name)
    assert abs(card.total_params() - card.published_params) / card.published_params < 0.02


# Exact counts published by others for the same architectures:
# keras-team/keras-hub keras_hub/src/models/{qwen3/qwen3,qwen/qwen,llama3/llama3}_presets.py.
@pytest.mark.parametrize("name,params", [
    ("qwen3-0.6b", 596_049_920),
    ("qwen3-1.7b", 1_720_574_976),
    ("qwen3-4b", 4_022_468_096),
    ("qwen3-8b", 8_190_735_360),
    ("qwen3-14b", 14_768_307_200),
    ("qwen3-32b", 32_762_123_264),
    ("qwen2.5-0.5b", 494_032_768),
    ("qwen2.5-3b", 3_085_938_688),
    ("qwen2.5-32b", 32_763_876_352),
    ("qwen2.5-72b", 72_706_203_648),
    ("qwen2.5-1.5b", 1_543_714_304),  # keras-hub qwen2.5_math_1.5b: same architecture
    ("qwen2.5-7b", 7_615_616_512),  # keras-hub qwen2.5_math_7b: same architecture
    ("llama3.1-8b", 8_030_261_248),  # keras-hub llama3_8b: Llama 3 and 3.1 share it
    ("llama3-8b", 8_030_261_248),  # the same architecture, an 8K context
])
def test_total_params_exact(name: str, params: int) -> None:
    assert load_model(name).total_params() == params


def test_gemma2_non_embedding_params_match_paper() -> None:
    # Gemma 2 report (arXiv:2408.00118) Table 2: 9B non-embedding = 8,324,201,984.
    card = load_model("gemma2-9b")
    assert card.total_params() - card.embedding_params() == 8_324_201_984


def test_moe_active_params_match_published() -> None:
    # Qwen3 model cards: 3.3B / 22B activated; DeepSeek-V3 README: 37B activated.
    for name, active in (("qwen3-30b-a3b", 3.3e9), ("qwen3-235b-a22b", 22e9), ("deepseek-v3", 37e9)):
        card = load_model(name)
        assert card.is_moe
        assert abs(card.active_params() - active) / active < 0.02, name
        assert card.active_params() < card.total_params() / 5


def test_dense_active_equals_total() -> None:
    card = load_model("llama3.1-70b")
    assert not card.is_moe and card.active_params() == card.total_params()


def test_deepseek_v3_excludes_mtp_module() -> None:
    # 671B main model; the 685B checkpoint adds a 14B MTP module we do not count.
    total = load_model("deepseek-v3").total_params()
    assert 665e9 < total < 677e9


def test_layer_params() -> None:
    card = load_model("deepseek-v3")
    assert card.is_mla
    dense, moe = card.layer_params(0), card.layer_params(3)  # first_k_dense_replace = 3
    assert moe > 10 * dense
    assert card.largest_layer_params() == moe
    qwen = load_model("qwen2.5-7b")
    body = sum(qwen.layer_params(i) for i in range(qwen.num_hidden_layers))
    assert body + 2 * qwen.embedding_params() + qwen.hidden_size == qwen.total_params()
    with pytest.raises(InputError) as err:
        qwen.layer_params(28)
    assert err.value.field == "layer"


def test_embedding_params() -> None:
    assert load_model("qwen2.5-7b").embedding_params() == 152064 * 3584


def test_tied_embeddings_count_once() -> None:
    card = load_model("qwen2.5-0.5b")
    untied = dataclasses.replace(card, tie_word_embeddings=False)
    assert untied.total_params() - card.total_params() == card.embedding_params()


# ------------------------------------------------------------------ KV cache
@pytest.mark.parametrize("name,tp,expected", [
    ("qwen2.5-7b", 1, 57_344),  # 56 KiB
    ("qwen2.5-32b", 1, 262_144),  # 256 KiB
    ("llama3.1-70b", 1, 327_680),  # 320 KiB
    ("llama3.1-70b", 8, 40_960),  # 8 kv heads / tp 8 = 1 head per rank
    ("qwen2.5-7b", 8, 14_336),  # 4 kv heads < tp 8: each rank keeps one (replicated)
    ("deepseek-v3", 1, 61 * (512 + 64) * 2),  # MLA latent, 70,272 B
    ("deepseek-v3", 8, 61 * (512 + 64) * 2),  # MLA is not split by tp
])
def test_kv_bytes_per_token(name: str, tp: int, expected: int) -> None:
    assert load_model(name).kv_bytes_per_token(tp=tp) == expected


def test_kv_bytes_fp8_halves_bf16() -> None:
    card = load_model("qwen3-8b")
    assert card.kv_bytes_per_token(dtype_bytes=1) * 2 == card.kv_bytes_per_token()


@pytest.mark.parametrize("kwargs,field", [
    ({"tp": 0}, "tp"), ({"tp": -2}, "tp"), ({"dtype_bytes": 0}, "dtype_bytes"),
])
def test_kv_bytes_rejects_bad_arguments(kwargs: dict, field: str) -> None:
    with pytest.raises(InputError) as err:
        load_model("qwen2.5-7b").kv_bytes_per_token(**kwargs)
    assert err.value.field == field


# ------------------------------------------------------------------ name lookup
@pytest.mark.parametrize("text,name", [
    ("QWEN2.5-7B", "qwen2.5-7b"),
    ("Qwen/Qwen2.5-7B", "qwen2.5-7b"),
    ("qwen2.5-7b-instruct", "qwen2.5-7b"),
    ("Qwen/Qwen2.5-72B-Instruct", "qwen2.5-72b"),
    ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama3.1-8b"),
    ("meta-llama/Meta-Llama-3.1-8B", "llama3.1-8b"),
    ("meta-llama/Meta-Llama-3-8B-Instruct", "llama3-8b"),
    # OpenRLHF's examples' SFT model (examples/scripts/train_ppo_llama_ray.sh --pretrain): a full fine-tune of it
    ("OpenRLHF/Llama-3-8b-sft-mixture", "llama3-8b"),
    ("OpenLLMAI/Llama-3-8b-sft-mixture", "llama3-8b"),
    ("meta-llama/Llama-3.2-1B-Instruct", "llama3.2-1b"),
    ("google/gemma-2-9b-it", "gemma2-9b"),
    ("mistralai/Mistral-7B-Instruct-v0.3", "mistral-7b"),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "deepseek-r1-distill-qwen-7b"),
    ("deepseek-ai/DeepSeek-R1", "deepseek-v3"),
    ("Qwen/Qwen3-30B-A3B", "qwen3-30b-a3b"),
])
def test_aliases(text: str, name: str) -> None:
    assert load_model(text).name == name


def test_unknown_model_suggests_close_names() -> None:
    with pytest.raises(InputError) as err:
        load_model("qwen2.5-8b")
    assert err.value.field == "model"
    assert "qwen2.5-8b" in err.value.problem
    assert "Did you mean" in str(err.value) and "qwen2.5-" in err.value.fix


def test_mistral_v01_is_not_aliased_to_v03() -> None:
    # v0.1 has a 32000 vocab and sliding window: a different card, not an alias.
    with pytest.raises(InputError):
        load_model("mistralai/Mistral-7B-v0.1")


# ------------------------------------------------------------------ config.json
def test_from_hf_config_file_matches_card(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(QWEN25_7B_CONFIG))
    card = load_model(str(path))
    ref = load_model("qwen2.5-7b")
    assert card.head_dim == 128 and card.attention_bias and not card.tie_word_embeddings
    assert card.total_params() == ref.total_params()
    assert card.kv_bytes_per_token() == 57_344
    # A directory holding config.json works too.
    assert load_model(str(tmp_path)).total_params() == ref.total_params()


def test_from_hf_config_deepseek_v3_matches_card() -> None:
    card = from_hf_config(DEEPSEEK_V3_CONFIG, "dsv3")
    ref = load_model("deepseek-v3")
    assert card.is_moe and card.is_mla and card.first_k_dense_replace == 3
    assert card.total_params() == ref.total_params()
    assert card.active_params() == ref.active_params()


def test_from_hf_config_qwen3_moe_sparse_step() -> None:
    base = {"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144,
            "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
            "head_dim": 128, "vocab_size": 151936, "num_experts": 128, "num_experts_per_tok": 8,
            "moe_intermediate_size": 768, "norm_topk_prob": True, "decoder_sparse_step": 1}
    every = from_hf_config(base, "a")
    assert every.qk_norm and not every.attention_bias
    assert every.total_params() == load_model("qwen3-30b-a3b").total_params()
    half = from_hf_config({**base, "decoder_sparse_step": 2}, "b")
    assert not half.is_moe_layer(0) and half.is_moe_layer(1)
    assert half.total_params() < every.total_params()


def test_from_hf_config_gemma2_defaults_to_tied() -> None:
    config = {"model_type": "gemma2", "hidden_size": 3584, "intermediate_size": 14336,
              "num_hidden_layers": 42, "num_attention_heads": 16, "num_key_value_heads": 8,
              "head_dim": 256, "vocab_size": 256000}
    card = from_hf_config(config, "g")
    assert card.tie_word_embeddings
    assert card.total_params() == load_model("gemma2-9b").total_params()


@pytest.mark.parametrize("key,value", [
    ("hidden_size", 0), ("num_hidden_layers", -1), ("vocab_size", "big"), ("intermediate_size", 1.5),
    ("num_attention_heads", float("inf")), ("num_key_value_heads", 0),
])
def test_from_hf_config_rejects_bad_values(key: str, value: object) -> None:
    with pytest.raises(InputError) as err:
        from_hf_config({**QWEN25_7B_CONFIG, key: value}, "bad")
    assert err.value.field == key


def test_from_hf_config_rejects_missing_key() -> None:
    config = dict(QWEN25_7B_CONFIG)
    del config["num_hidden_layers"]
    with pytest.raises(InputError) as err:
        from_hf_config(config, "bad")
    assert err.value.field == "num_hidden_layers"


def test_bad_json_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text("{not json")
    with pytest.raises(InputError) as err:
        load_model(str(path))
    assert err.value.field == "model" and "JSON" in err.value.problem
    with pytest.raises(InputError):
        load_model(str(tmp_path / "nope.json"))
    with pytest.raises(InputError):
        load_model(str(tmp_path))  # directory without config.json


# ------------------------------------------------------------------ card YAML
def _card_yaml(**overrides: object) -> str:
    fields = {"name": "tiny", "hf_id": "x/tiny", "num_hidden_layers": 2, "hidden_size": 64,
              "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
              "vocab_size": 1000, "published_params": "1.0e6"}
    fields.update(overrides)
    return "\n".join(f"{k}: {v}" for k, v in fields.items() if v is not None) + "\n"


def test_card_yaml_path_loads(tmp_path: Path) -> None:
    path = tmp_path / "tiny.yaml"
    path.write_text(_card_yaml())
    card = load_model(str(path))
    assert card.head_dim == 16 and card.published_params == 1.0e6
    # 2 * (q 64*64 + k,v 2*64*32 + o 64*64 + mlp 3*64*128 + 2 norms*64) + 2 * 1000*64 + 64
    assert card.total_params() == 2 * (4096 + 4096 + 4096 + 24576 + 128) + 128_000 + 64


@pytest.mark.parametrize("overrides,field", [
    ({"num_hidden_layers": None}, "num_hidden_layers"),
    ({"hidden_size": -64}, "hidden_size"),
    ({"num_key_value_heads": 3}, "num_key_value_heads"),
    ({"tie_word_embeddings": "maybe"}, "tie_word_embeddings"),
    ({"num_experts": 8, "num_experts_per_tok": 9, "moe_intermediate_size": 32}, "num_experts_per_tok"),
    ({"hiden_size": 64}, "hiden_size"),
    ({"published_params": "lots"}, "published_params"),
])
def test_card_yaml_rejects_bad_fields(tmp_path: Path, overrides: dict, field: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(_card_yaml(**overrides))
    with pytest.raises(InputError) as err:
        load_model(str(path))
    assert err.value.field == field


def test_malformed_yaml(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: [unclosed\n")
    with pytest.raises(InputError) as err:
        load_model(str(path))
    assert err.value.field == "model" and "YAML" in err.value.problem


def test_lora_params_match_peft_on_qwen2_5_7b():
    """PEFT prints "trainable params: 20,185,088" for Qwen2.5-7B with r=8 on all-linear (7 projections x 28 layers:
    8 x 90,112 per layer); the count scales with the rank and covers every expert of an MoE model."""
    m = load_model("qwen2.5-7b")
    assert m.lora_params(8) == 20_185_088
    assert m.lora_params(16) == 2 * m.lora_params(8)
    moe = load_model("qwen3-30b-a3b")
    h, ffn = moe.hidden_size, moe.moe_intermediate_size
    assert moe.lora_params(8) > moe.num_hidden_layers * moe.num_experts * 8 * 3 * (h + ffn)


def test_lora_q_v_counts_the_attention_projections_only():
    """peft's default targets: q_proj and v_proj, r x (in + out) each per layer; for MLA (no q/v projections) the
    latent attention's projections but the output one, never an MLP."""
    m = load_model("qwen2.5-7b")  # q: 3584 -> 3584, v: 3584 -> 512, 28 layers
    assert m.lora_params(16, "q_v") == 16 * ((3584 + 3584) + (3584 + 512)) * 28
    d = load_model("deepseek-v3")
    per_layer = (d.hidden_size + d.q_lora_rank) + (d.q_lora_rank + d.num_attention_heads * (d.qk_nope_head_dim + d.qk_rope_head_dim)) \
        + (d.hidden_size + d.kv_lora_rank + d.qk_rope_head_dim) \
        + (d.kv_lora_rank + d.num_attention_heads * (d.qk_nope_head_dim + d.v_head_dim))
    assert d.lora_params(8, "q_v") == 8 * per_layer * d.num_hidden_layers


def test_a_qwen2_5_vl_config_json_reads_its_vision_tower_as_the_card_does():
    """A Qwen2.5-VL config.json (model_type qwen2_5_vl, LM keys at the top, the ViT in vision_config) gives the
    catalog card's numbers: the vision tower and merger counted in total_params, q/k/v bias on the LM; a config
    without vision_config (or a text model type) has no vision tower."""
    from rlbatch_solver.catalog.models import from_hf_config, load_model

    card = load_model("qwen2.5-vl-3b")
    config = {"model_type": "qwen2_5_vl", "hidden_size": 2048, "intermediate_size": 11008, "num_attention_heads": 16,
              "num_hidden_layers": 36, "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": True,
              "vision_config": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16,
                                "in_chans": 3, "out_hidden_size": 2048, "patch_size": 14, "spatial_merge_size": 2,
                                "temporal_patch_size": 2, "window_size": 112,
                                "fullatt_block_indexes": [7, 15, 23, 31]}}
    read = from_hf_config(config, "vl")
    assert read.attention_bias and read.has_vision and read.vision_fullatt_blocks == 4
    assert read.vision_params() == card.vision_params() and read.total_params() == card.total_params()
    text = from_hf_config({k: v for k, v in config.items() if k != "vision_config"}, "lm")
    assert not text.has_vision and text.total_params() == read.total_params() - card.vision_params()
    assert load_model("qwen2.5-3b").total_params() == text.total_params()


def test_a_qwen2_5_vl_config_json_with_its_language_model_under_text_config_keeps_its_vit_and_qkv_bias():
    """Newer transformers write Qwen2.5-VL's language-model keys under text_config (model_type qwen2_5_vl_text) with
    the ViT in the top level's vision_config: the card read from it is the catalog's, ViT and q/k/v bias included
    (it lost both, pricing the 7B as 7.62B instead of 8.29B)."""
    from rlbatch_solver.catalog.models import from_hf_config, load_model

    card = load_model("qwen2.5-vl-7b")
    text = {"model_type": "qwen2_5_vl_text", "hidden_size": 3584, "intermediate_size": 18944,
            "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4, "vocab_size": 152064}
    vision = {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16, "in_chans": 3,
              "out_hidden_size": 3584, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2,
              "window_size": 112, "fullatt_block_indexes": [7, 15, 23, 31]}
    read = from_hf_config({"model_type": "qwen2_5_vl", "tie_word_embeddings": False, "text_config": text,
                           "vision_config": vision}, "new")
    assert read.has_vision and read.attention_bias and read.model_type == "qwen2_5_vl"
    assert read.total_params() == card.total_params()
    # the text model alone (its own type): q/k/v bias, no ViT
    alone = from_hf_config({**text, "tie_word_embeddings": False}, "lm")
    assert alone.attention_bias and not alone.has_vision
    assert alone.total_params() == load_model("qwen2.5-7b").total_params()


def test_the_qwen2_vl_card_counts_its_vit_as_the_module_print_shows_and_a_config_json_reads_the_same():
    """Qwen2-VL-7B's ViT is not Qwen2.5-VL's: LayerNorms with bias and a two-Linear QuickGELU MLP (fc1 1280 -> 5120,
    fc2 5120 -> 1280), full attention in every block, and its vision_config names the ViT's width embed_dim and the
    merger's output hidden_size (transformers qwen2_vl modeling/configuration). The card's block and merger are the
    module print's Linear/LayerNorm shapes summed, and its whole ViT is the Qwen2-VL paper's 675M; a config.json in
    that layout reads to the same card, and the language model alone is Qwen2.5-7B's."""
    from rlbatch_solver.catalog.models import from_hf_config, load_model

    card = load_model("qwen2-vl-7b")
    linear = lambda i, o: i * o + o  # noqa: E731  (Linear with bias)
    block = 2 * (1280 + 1280) + linear(1280, 3840) + linear(1280, 1280) + linear(1280, 5120) + linear(5120, 1280)
    merger = (1280 + 1280) + linear(5120, 5120) + linear(5120, 3584)
    assert card.vision_block_params() == block and card.vision_merger_params() == merger
    # the published size: the Qwen2-VL paper (arXiv 2409.12191, Table 1) gives the vision encoder as 675M parameters
    assert card.vision_params() == pytest.approx(675e6, rel=0.01)
    assert card.total_params() == pytest.approx(8.29e9, rel=0.005)  # the Hugging Face safetensors count (docs/models.md)
    assert card.total_params() - card.vision_params() == load_model("qwen2.5-7b").total_params()
    config = {"model_type": "qwen2_vl", "hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28,
              "num_hidden_layers": 28, "num_key_value_heads": 4, "vocab_size": 152064, "tie_word_embeddings": False,
              "vision_config": {"depth": 32, "embed_dim": 1280, "hidden_size": 3584, "hidden_act": "quick_gelu",
                                "mlp_ratio": 4, "num_heads": 16, "in_chans": 3, "patch_size": 14,
                                "spatial_merge_size": 2, "temporal_patch_size": 2}}
    read = from_hf_config(config, "vl2")
    assert read.attention_bias and read.vision_plain_mlp and read.vision_window_size == 0
    assert read.vision_params() == card.vision_params() and read.total_params() == card.total_params()
    assert not load_model("qwen2.5-vl-7b").vision_plain_mlp
