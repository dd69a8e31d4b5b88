"""The models people download: HuggingFace transformers, timm and
torchvision, each from a small config with random weights (nothing is
fetched), dropout off, with a batch and a loss computed outside the model.

Each builder returns a zoo.Workload, so tests and bench/ run the same
workloads. The libraries are imported when a model is built: a torch
without them can still import this module (`available()` says which
libraries import).

torchvision: PyPI's wheel is a CUDA build; beside torch's CPU wheel its C++
ops (nms, roi_align, ...) fail to load and its import stops at the fake
registration of nms. `import_torchvision()` defines the two schemas that
registration needs first; the models are plain Python and never call them.

Thread-safety: builders make fresh objects; nothing here is shared.
"""

import importlib
import sys
from typing import Callable, Dict, List

import torch
import torch.nn.functional as F

from zoo import Workload

VOCAB = 1000
SEQ = 32
BATCH = 4


def import_torchvision():
    """torchvision, imported beside torch's CPU wheel (see the module's doc)."""
    try:
        return importlib.import_module("torchvision")
    except RuntimeError as e:
        if "torchvision::nms" not in str(e):
            raise
    for name in [m for m in sys.modules if m.split(".")[0] == "torchvision"]:
        del sys.modules[name]
    global _TORCHVISION_SCHEMAS
    _TORCHVISION_SCHEMAS = torch.library.Library("torchvision", "FRAGMENT")
    for op in ("nms", "qnms"):
        _TORCHVISION_SCHEMAS.define(op + "(Tensor dets, Tensor scores, float iou_threshold) "
                                         "-> Tensor")
    return importlib.import_module("torchvision")


_TORCHVISION_SCHEMAS = None  # The schemas import_torchvision defined, held.


def _tokens(seed: int, shape=(BATCH, SEQ)) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, VOCAB, shape, generator=g)


def _images(size: int, channels: int = 3) -> torch.Tensor:
    g = torch.Generator().manual_seed(1)
    return torch.randn(BATCH, channels, size, size, generator=g)


def _classes(n: int = 10) -> torch.Tensor:
    return torch.arange(BATCH) % n


def _logits_ce(output, target):
    logits = output.logits if hasattr(output, "logits") else output
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))


def _lm_loss(output, ids):
    """Next-token cross-entropy, as HF's causal LM loss shifts it."""
    logits = output.logits[:, :-1]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


def _with_torchvision() -> None:
    """transformers and timm import torchvision when it is installed."""
    try:
        import_torchvision()
    except ImportError:
        pass


def _hf(config_cls: str, model_cls: str, **config):
    _with_torchvision()
    transformers = importlib.import_module("transformers")
    cfg = getattr(transformers, config_cls)(**config)
    cfg._attn_implementation = "sdpa"
    return getattr(transformers, model_cls)(cfg)


_HF_TEXT = dict(vocab_size=VOCAB, max_position_embeddings=128)


def bert() -> Workload:
    m = _hf("BertConfig", "BertForSequenceClassification", hidden_size=64,
            num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, num_labels=3,
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **_HF_TEXT)
    return Workload(m, (_tokens(0),), torch.arange(BATCH) % 3, _logits_ce)


def gpt2() -> Workload:
    m = _hf("GPT2Config", "GPT2LMHeadModel", vocab_size=VOCAB, n_positions=128, n_embd=64,
            n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0, resid_pdrop=0.0,
            embd_pdrop=0.0, attn_pdrop=0.0)
    ids = _tokens(0)
    return Workload(m, (ids,), ids, _lm_loss)


def _llama(kv_heads: int) -> Workload:
    m = _hf("LlamaConfig", "LlamaForCausalLM", hidden_size=64, intermediate_size=128,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=kv_heads,
            **_HF_TEXT)
    ids = _tokens(0)
    return Workload(m, (ids,), ids, _lm_loss)


def llama_gqa() -> Workload:
    return _llama(2)


def llama_mha() -> Workload:
    return _llama(4)


class _T5Wrapper(torch.nn.Module):
    """T5 called with its decoder's inputs, as a seq2seq step calls it."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids, decoder_ids):
        return self.model(input_ids=ids, decoder_input_ids=decoder_ids)


def t5() -> Workload:
    m = _hf("T5Config", "T5ForConditionalGeneration", vocab_size=VOCAB, d_model=64, d_kv=16,
            d_ff=128, num_layers=2, num_heads=4, dropout_rate=0.0, decoder_start_token_id=0)
    ids, labels = _tokens(0), _tokens(1, (BATCH, 16))
    return Workload(_T5Wrapper(m), (ids, labels), labels, _logits_ce)


def hf_vit() -> Workload:
    m = _hf("ViTConfig", "ViTForImageClassification", image_size=32, patch_size=8,
            hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
            num_labels=10, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return Workload(m, (_images(32),), _classes(), _logits_ce)


def _timm(name: str, size: int, **kwargs) -> Workload:
    _with_torchvision()
    timm = importlib.import_module("timm")
    m = timm.create_model(name, pretrained=False, num_classes=10, **kwargs)
    return Workload(m, (_images(size),), _classes(), _logits_ce)


def _tv(build: Callable, size: int) -> Workload:
    return Workload(build(), (_images(size),), _classes(), _logits_ce)


def tv_resnet18() -> Workload:
    return _tv(lambda: import_torchvision().models.resnet18(num_classes=10), 64)


def tv_mobilenet_v3_small() -> Workload:
    return _tv(lambda: import_torchvision().models.mobilenet_v3_small(num_classes=10,
                                                                      dropout=0.0), 64)


def tv_vit() -> Workload:
    def build():
        vt = import_torchvision().models.vision_transformer
        return vt.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                                    hidden_dim=64, mlp_dim=128, num_classes=10)
    return _tv(build, 32)


def tv_swin_t() -> Workload:
    """swin_t's configuration, without its stochastic depth (random)."""
    def build():
        swin = import_torchvision().models.swin_transformer
        return swin.SwinTransformer(patch_size=[4, 4], embed_dim=96, depths=[2, 2, 6, 2],
                                    num_heads=[3, 6, 12, 24], window_size=[7, 7],
                                    stochastic_depth_prob=0.0, num_classes=10)
    return _tv(build, 64)


MODELS: Dict[str, Callable[[], Workload]] = {
    "hf_bert": bert,
    "hf_gpt2": gpt2,
    "hf_llama_gqa": llama_gqa,
    "hf_llama_mha": llama_mha,
    "hf_t5": t5,
    "hf_vit": hf_vit,
    "timm_resnet18": lambda: _timm("resnet18", 64),
    "timm_convnext_atto": lambda: _timm("convnext_atto", 64),
    "timm_efficientnet_b0": lambda: _timm("efficientnet_b0", 64),
    "timm_mobilenetv3_small_100": lambda: _timm("mobilenetv3_small_100", 64),
    "timm_vit_tiny": lambda: _timm("vit_tiny_patch16_224", 64, img_size=64),
    "tv_resnet18": tv_resnet18,
    "tv_mobilenet_v3_small": tv_mobilenet_v3_small,
    "tv_vit": tv_vit,
    "tv_swin_t": tv_swin_t,
}

LIBRARY = {"hf": "transformers", "timm": "timm", "tv": "torchvision"}


def library_of(name: str) -> str:
    return LIBRARY[name.split("_", 1)[0]]


def available() -> List[str]:
    """The models whose library imports here."""
    ok = set()
    for lib in ("torchvision", "transformers", "timm"):  # timm imports torchvision.
        try:
            import_torchvision() if lib == "torchvision" else importlib.import_module(lib)
            ok.add(lib)
        except Exception:
            pass
    return [n for n in MODELS if library_of(n) in ok]
