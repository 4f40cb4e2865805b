"""A catalogue of real, third-party model architectures for fxgen's export/regenerate round trip.

Every entry is a *small* configuration of a network written by someone else, built with random
weights from ``torch.manual_seed(0)`` (nothing downloads weights or data) and run in eval mode
on CPU in well under a second. One module per library holds its entries:

========================  ==================================================================
``monai_models``          MONAI 1.6.1's ``monai.networks.nets`` (the original zoo)
``misc_models``           efficientnet-pytorch, rtdl-revisiting-models, mlp-mixer-pytorch
``pytorchcv_models``      pytorchcv 0.0.74: classification/segmentation/detection/pose nets
``hf_models``             Hugging Face ``transformers`` 4.46.3 at tiny configs (``HFTracer``)
``hf_decoders``           its decoder language models without ``HFTracer`` (TorchDynamo)
``hf_encoders``           five of its encoders without ``HFTracer`` (TorchDynamo), any release
``vit_pytorch_models``    vit-pytorch 1.26.11's Vision Transformer variants
``x_transformers_models`` x-transformers 2.31.10 (three untraceable examples)
``kornia_models``         kornia 0.9.0's local-feature networks and image-processing modules
``lucidrains_models``     perceiver, linformer, performer, gMLP, ResMLP, Nystromformer, ...
========================  ==================================================================

``bench/install_zoo.sh`` installs them all (pinned, never torchvision or another torch).
Importing this package imports only ``torch``: factories import their library lazily, and
each entry's ``requires`` names those imports so a test can ``pytest.importorskip`` them.

How an entry is meant to be used::

    zm = ZOO[0]
    model = zm.factory().eval()
    args = zm.inputs()
    tracer = zm.tracer()  # honours tracer_class, leaf_modules and autowrap_functions
    graph = tracer.trace(model, concrete_args=zm.concrete_args)
    gm = torch.fx.GraphModule(tracer.root, graph)
    torch.testing.assert_close(gm(*args), model(*args))  # outputs may be nested/dicts

``traceable`` records what ``bench/zoo_survey.py`` found with the pinned library versions:
``True`` means tracing (with the entry's tracer, ``concrete_args``, ``leaf_modules`` and
``autowrap_functions``) succeeds *and* the GraphModule reproduces the eager output exactly
(``torch.equal``, NaNs in the same places; a note would say so where only float reduction order
differs and ``allclose`` at 1e-6 was accepted: no entry needs that today). Both runs start from
``torch.manual_seed(0)``: one model (``vit_pytorch.ATSViT``) samples noise in eval mode.
``False`` entries are kept on purpose, as real-world examples of what torch.fx cannot capture
(``note`` gives the one-line reason and where it is raised). Several trace *without an error*
and are still wrong -- ``monai.BasicUNet[no-leaf]``, ``x_transformers.Encoder``,
``performer_pytorch.Performer``: compare against the eager model, never only against the trace. ``features`` tags what an
entry exercises in an exporter (see :data:`FEATURES`); most tags are computed by the survey
(``zoo_survey.py --write-features``) into ``_features.py`` and merged in here.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import torch
import torch.fx
from torch import nn

Inputs = Callable[[], tuple[Any, ...]]

#: The values :attr:`ZooModel.features` may hold, and what each one means.
FEATURES: dict[str, str] = {
    "non_persistent_buffers": "a submodule registers a buffer with persistent=False",
    "tensor_constants": "the traced graph reads a `_tensor_constantN` that torch.fx created",
    "plain_tensor_attributes": "the traced graph reads a tensor stored as a plain attribute "
    "(`self.x = torch.tensor(...)`), neither parameter nor buffer",
    "non_identifier_keys": "a module/parameter/buffer path has a segment that is not a "
    "Python identifier (dashes, spaces, parentheses, keywords; plain indices do not count)",
    "unused_state": "state_dict() holds entries the traced graph never reads "
    "(unused submodules or heads, num_batches_tracked under a functional call, ...)",
    "huggingface": "a Hugging Face transformers model traced with its HFTracer",
    "custom_tracer": "the entry names its own tracer_class",
    "autowrap": "the entry needs autowrap_functions (einops' functions on Proxies)",
    "leaf_modules": "the entry needs leaf_modules to trace",
    "concrete_args": "the entry needs concrete_args to trace",
}


@dataclass(frozen=True)
class ZooModel:
    """One catalogued model configuration.

    Attributes:
        name: ``"<library>.<Architecture>[variant]"``, unique within :data:`ZOO`.
        factory: builds the module (seeds itself, no downloads); call ``.eval()`` on the
            result. Two calls give identical ``state_dict()``s and non-persistent buffers.
        inputs: deterministic example positional inputs (seeded ``torch.Generator``), in the
            order of ``forward``'s parameters.
        concrete_args: passed to ``Tracer.trace`` / ``torch.fx.symbolic_trace``.
        leaf_modules: dotted class paths (``"package.module.ClassName"``) that must be kept as
            opaque ``call_module`` nodes for tracing to work; strings, so that importing this
            package imports no library. :meth:`leaf_module_types` resolves them.
        fast: a representative, traceable subset cheap enough for every CI run (< ~1 s each,
            tracing included, once the library is imported).
        traceable: the survey's verdict (see the package docstring).
        note: why an entry is not traceable, or what is special about it.
        requires: top-level import names the factory needs (for ``pytest.importorskip``);
            none of them is a torch build or torchvision.
        library: the library the model comes from (its import name); defaults to the
            prefix of :attr:`name` before the first dot.
        tracer_class: returns the ``torch.fx.Tracer`` subclass to trace with, for libraries
            whose own tracer must be used (``transformers.utils.fx.HFTracer``); called lazily
            so that the catalogue imports nothing. ``None``: ``torch.fx.Tracer``.
        autowrap_functions: dotted paths of functions the tracer must record as single
            ``call_function`` nodes instead of tracing into them (``Tracer(autowrap_functions=
            ...)``), e.g. ``einops.rearrange`` called on Proxies.
        features: tags from :data:`FEATURES` (partly set by hand, mostly by the survey).
        prepare: run before anything of the library is imported (by :meth:`leaf_module_types`,
            :meth:`autowrap_function_objects` and the factory): vit-pytorch's entries use it
            to import the package without its ``__init__``, which needs torchvision.
        versions: requirements on the installed distributions (``"transformers<=4.46.3"``):
            an entry whose feature needs a version range is not run elsewhere
            (:meth:`unmet`); ``bench/install_zoo.sh --current`` makes an environment with the
            newest releases, where ``HFTracer``'s entries are left out.
        varies: the axes of :data:`AXES` the model's inputs may change along, which
            :meth:`other_inputs` changes. The default suits the zoo's most common input, an
            image batch (``spatial`` changes no input of fewer than three dimensions);
            sequence models declare ``("batch", "length")``.
    """

    name: str
    factory: Callable[[], nn.Module]
    inputs: Inputs
    concrete_args: dict[str, Any] | None = None
    leaf_modules: tuple[str, ...] = ()
    fast: bool = False
    traceable: bool = True
    note: str = ""
    requires: tuple[str, ...] = ("monai",)
    library: str = ""
    tracer_class: Callable[[], type[torch.fx.Tracer]] | None = None
    autowrap_functions: tuple[str, ...] = ()
    features: frozenset[str] = field(default_factory=frozenset)
    prepare: Callable[[], None] | None = None
    versions: tuple[str, ...] = ()
    varies: tuple[str, ...] = ("batch", "spatial")

    def __post_init__(self) -> None:
        if not self.library:
            object.__setattr__(self, "library", self.name.split(".", 1)[0])
        unknown = set(self.features) - set(FEATURES)
        if unknown:
            raise ValueError(f"{self.name}: unknown features {sorted(unknown)}")
        if set(self.varies) - set(AXES):
            raise ValueError(f"{self.name}: unknown axes {sorted(set(self.varies) - set(AXES))}")

    def other_inputs(self) -> list[tuple[str, tuple[Any, ...]]]:
        """Inputs of another shape than :attr:`inputs`, each with the axes it changes: first
        every axis of :attr:`varies` that changes an input, then the batch alone (a model may
        accept only its own resolution or length). Empty when no declared axis changes one."""
        example = self.inputs()
        shapes = _shapes(example)
        changed = tuple(a for a in AXES if a in self.varies and _shapes(resized(example, (a,))) != shapes)
        tries = [changed, ("batch",)] if len(changed) > 1 and "batch" in changed else [changed]
        return [(", ".join(axes), resized(example, axes)) for axes in tries if axes]

    def unmet(self) -> str:
        """Why the installed versions cannot run this entry (``""`` when they can)."""
        from importlib.metadata import PackageNotFoundError, version

        from packaging.requirements import Requirement

        for text in self.versions:
            wanted = Requirement(text)
            try:
                installed = version(wanted.name)
            except PackageNotFoundError:
                return f"needs {text} (not installed)"
            if not wanted.specifier.contains(installed, prereleases=True):
                return f"needs {text} (installed: {installed})"
        return ""

    def leaf_module_types(self) -> tuple[type[nn.Module], ...]:
        """Import and return the classes named in :attr:`leaf_modules`."""
        if self.prepare is not None:
            self.prepare()
        return tuple(_resolve(path) for path in self.leaf_modules)

    def autowrap_function_objects(self) -> tuple[Callable[..., Any], ...]:
        """Import and return the functions named in :attr:`autowrap_functions`."""
        if self.prepare is not None:
            self.prepare()
        return tuple(_resolve(path) for path in self.autowrap_functions)

    def tracer_type(self) -> type[torch.fx.Tracer]:
        """The tracer class to use: :attr:`tracer_class`'s, or ``torch.fx.Tracer``."""
        return self.tracer_class() if self.tracer_class is not None else torch.fx.Tracer

    def build(self) -> nn.Module:
        """The model in eval mode, built while fxgen records its leaf classes' constructor calls.

        Leaf modules become constructor calls in the spec; third-party blocks such as MONAI's
        ``UpCat`` do not keep their arguments, so they are recorded as the model is built.
        """
        import fxgen

        with fxgen.record_constructors(*self.leaf_module_types()):
            return self.factory().eval()

    def tracer(self) -> torch.fx.Tracer:
        """A tracer of :meth:`tracer_type` that also honours :attr:`leaf_modules` and
        :attr:`autowrap_functions`."""
        cls = _with_leaves(self.tracer_type(), self.leaf_module_types())
        functions = self.autowrap_function_objects()
        return cls(autowrap_functions=functions) if functions else cls()

    def trace(self, model: nn.Module) -> torch.fx.GraphModule:
        """``model`` traced as this entry says (what the survey checks)."""
        tracer = self.tracer()
        graph = tracer.trace(model, concrete_args=self.concrete_args)
        return torch.fx.GraphModule(tracer.root, graph)


def _resolve(path: str) -> Any:
    module_name, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(module_name), attr)


@cache
def _with_leaves(
    base: type[torch.fx.Tracer], leaves: tuple[type[nn.Module], ...]
) -> type[torch.fx.Tracer]:
    """``base`` itself, or a subclass of it that also treats ``leaves`` as leaf modules."""
    if not leaves:
        return base

    def is_leaf_module(self: torch.fx.Tracer, m: nn.Module, module_qualified_name: str) -> bool:
        if isinstance(m, leaves):
            return True
        return bool(base.is_leaf_module(self, m, module_qualified_name))

    return type(f"Leaf{base.__name__}", (base,), {"is_leaf_module": is_leaf_module})


# ----------------------------------------------------------------------------- inputs

#: The axes an entry's inputs may vary along, and how :func:`resized` changes each one.
AXES: dict[str, str] = {
    "batch": "dim 0 of each input whose dim 0 is the first input's: one more sample (the batch's samples repeated)",
    "length": "dim 1 of each input of two or more dimensions whose dim 1 is the first such input's: half as long "
    "(the leading half kept)",
    "spatial": "dims 2 and on of each input of three or more dimensions whose dims 2 and on are the first such "
    "input's: twice the resolution (each value repeated, as a nearest-neighbour resize does)",
}


#: ``varies`` of a sequence model: another batch size and another sequence length.
SEQUENCE = ("batch", "length")
#: ``varies`` of a model whose inputs have no other axis that may vary (or none the rules of
#: :data:`AXES` find, as a channels-last image).
BATCH = ("batch",)


def _shapes(inputs: tuple[Any, ...]) -> list[Any]:
    return [tuple(t.shape) if isinstance(t, torch.Tensor) else None for t in inputs]


def resized(inputs: tuple[Any, ...], axes: tuple[str, ...]) -> tuple[Any, ...]:
    """``inputs`` changed along ``axes`` (see :data:`AXES`); values other than tensors stay.

    Every new value is one of the example's, so token ids stay in the vocabulary, masks stay
    masks and images keep their range; inputs that share a size keep sharing it."""
    tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
    out = list(inputs)

    def each(ndim: int, dims: slice, change: Callable[[torch.Tensor], torch.Tensor]) -> None:
        shaped = [t for t in tensors if t.dim() >= ndim]
        if not shaped:
            return
        sizes = shaped[0].shape[dims]
        for i, value in enumerate(out):
            if isinstance(value, torch.Tensor) and value.dim() >= ndim and value.shape[dims] == sizes:
                out[i] = change(value)

    if "batch" in axes:
        each(1, slice(0, 1), lambda t: t[torch.arange(t.shape[0] + 1) % t.shape[0]])
    if "length" in axes:
        each(2, slice(1, 2), lambda t: t[:, : max(1, t.shape[1] // 2)])
    if "spatial" in axes:

        def twice(t: torch.Tensor) -> torch.Tensor:
            for dim in range(2, t.dim()):
                t = t.repeat_interleave(2, dim)
            return t

        each(3, slice(2, None), twice)
    return tuple(out)



def randn(*shape: int, seed: int = 0) -> torch.Tensor:
    """A seeded standard-normal tensor."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def img(*shape: int, seed: int = 0) -> Inputs:
    """One float input of the given full shape (batch first)."""
    return lambda: (randn(*shape, seed=seed),)


def imgs(*shapes: tuple[int, ...]) -> Inputs:
    """Several float inputs, seeded 0, 1, 2, ..."""
    return lambda: tuple(randn(*s, seed=i) for i, s in enumerate(shapes))


def token_ids(batch: int, length: int, vocab: int, seed: int = 0) -> torch.Tensor:
    """Seeded int64 token ids in ``[0, vocab)``."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (batch, length), generator=g)


def tokens(batch: int, length: int, vocab: int) -> Inputs:
    """One int64 input of token ids."""
    return lambda: (token_ids(batch, length, vocab),)


# ----------------------------------------------------------------------------- catalogue


def _apply_features(entries: list[ZooModel], found: dict[str, frozenset[str]]) -> list[ZooModel]:
    """Merge the survey's feature tags (``_features.py``) and the structural ones."""
    out = []
    for zm in entries:
        tags = set(zm.features) | set(found.get(zm.name, ()))
        if zm.tracer_class is not None:
            tags.add("custom_tracer")
        if zm.library == "transformers":
            tags.add("huggingface")
        if zm.autowrap_functions:
            tags.add("autowrap")
        if zm.leaf_modules:
            tags.add("leaf_modules")
        if zm.concrete_args:
            tags.add("concrete_args")
        out.append(dataclasses.replace(zm, features=frozenset(tags)))
    return out


def _catalogue() -> list[ZooModel]:
    from . import (
        hf_decoders,
        hf_encoders,
        hf_models,
        kornia_models,
        lucidrains_models,
        misc_models,
        monai_models,
        pytorchcv_models,
        vit_pytorch_models,
        x_transformers_models,
    )
    from ._features import FOUND

    entries = [
        *monai_models.ENTRIES,
        *misc_models.ENTRIES,
        *pytorchcv_models.ENTRIES,
        *hf_models.ENTRIES,
        *hf_decoders.ENTRIES,
        *hf_encoders.ENTRIES,
        *vit_pytorch_models.ENTRIES,
        *x_transformers_models.ENTRIES,
        *kornia_models.ENTRIES,
        *lucidrains_models.ENTRIES,
    ]
    names = [zm.name for zm in entries]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"duplicate zoo names: {duplicates}")
    return _apply_features(entries, FOUND)


#: Every entry, in a stable order (MONAI's first, as in the original ``zoo_models.py``).
ZOO: list[ZooModel] = _catalogue()

__all__ = ["AXES", "BATCH", "FEATURES", "SEQUENCE", "ZOO", "Inputs", "ZooModel", "img", "imgs", "randn", "resized", "token_ids", "tokens"]
