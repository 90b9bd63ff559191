"""strata: predicted iteration time and per-device memory of distributed deep-learning training.

The functions take a scenario -- a dict in the schema of the ``strata`` command (docs/cli.md),
JSON text, the path of a scenario file, or the typed objects below -- and return the report the
command prints, as Python objects::

    import strata
    report = strata.evaluate({
        "model": "gpt3-175b",
        "cluster": {"preset": "dgx-a100", "devices": 1024},
        "parallel": {"tensor": 8, "pipeline": 8, "data": 16, "micro_batch": 1},
        "training": {"batch": 1536, "sequence": 2048},
    })
    report["iteration_time_s"]

Errors raise ``strata.Error`` (a ``ValueError``) carrying the command's sentence, e.g.
``tensor parallelism: the degree must divide the attention heads``.
"""

import os
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Union

from ._strata import (Error, __version__, evaluate, list_gpus, list_models, simulate, sweep,
                      which_gpus)

__all__ = [
    "Error", "__version__", "evaluate", "list_gpus", "list_models", "simulate", "sweep",
    "which_gpus",
    "Model", "Cluster", "Parallel", "Training", "Search", "Cost", "Scenario",
]


def _fields(obj) -> Dict[str, Any]:
    """The dataclass's fields that are set (None means "the default")."""
    return {k: v for k, v in asdict(obj).items() if v is not None}


@dataclass
class Model:
    """A scenario's model: a zoo name (``"llama3-8b"``), its dimensions, or a Hugging Face
    model -- its ``config.json`` (a dict, or the file's path) or the id of a config strata ships
    (docs/hf_configs.md; no network). The reader takes from the config what changes the
    arithmetic and refuses, with a sentence naming it, what strata does not model yet::

        strata.Model.from_hf_config("Qwen2.5-7B/config.json")
        strata.Model.from_hf_id("meta-llama/Llama-3.1-8B")
    """
    spec: Union[str, Dict[str, Any]]

    @classmethod
    def from_hf_config(cls, config: Union[Dict[str, Any], str, "os.PathLike[str]"],
                       name: Optional[str] = None) -> "Model":
        source = dict(config) if isinstance(config, dict) else os.fspath(config)
        spec: Dict[str, Any] = {"hf_config": source}
        if name is not None:
            spec["name"] = name
        return cls(spec)

    @classmethod
    def from_hf_id(cls, model_id: str) -> "Model":
        return cls({"hf_id": model_id})

    def to_dict(self) -> Union[str, Dict[str, Any]]:
        return self.spec


@dataclass
class Cluster:
    """A preset cluster (``dgx-a100``, ``dgx-h100``, ...) rounded up to whole nodes."""
    preset: str
    devices: int

    def to_dict(self) -> Dict[str, Any]:
        return _fields(self)


@dataclass
class Parallel:
    """One ``parallel::nd`` plan; omitted degrees are 1."""
    tensor: Optional[int] = None
    sequence_parallel: Optional[bool] = None
    context: Optional[int] = None
    expert: Optional[int] = None
    pipeline: Optional[int] = None
    virtual_stages: Optional[int] = None
    schedule: Optional[str] = None
    data: Optional[int] = None
    zero: Optional[int] = None
    recompute: Optional[str] = None
    micro_batch: Optional[int] = None

    def to_dict(self) -> Dict[str, Any]:
        return _fields(self)


@dataclass
class Training:
    """The training setup; ``batch`` is the global batch (``global_batch``: the older name)."""
    batch: Optional[int] = None
    sequence: Optional[int] = None
    precision: Optional[str] = None
    optimizer: Optional[str] = None
    framework: Optional[str] = None
    flash_attention: Optional[bool] = None
    global_batch: Optional[int] = None

    def to_dict(self) -> Dict[str, Any]:
        return _fields(self)


@dataclass
class Search:
    """The strategy space to sweep; omitted axes take the sweep's defaults."""
    tensor: Optional[List[int]] = None
    pipeline: Optional[List[int]] = None
    micro_batch: Optional[List[int]] = None
    virtual_stages: Optional[List[int]] = None
    zero: Optional[List[int]] = None
    recompute: Optional[List[str]] = None
    sequence_parallel: Optional[bool] = None
    keep: Optional[int] = None

    def to_dict(self) -> Dict[str, Any]:
        return _fields(self)


@dataclass
class Cost:
    """A training budget: the search report prices every plan for it."""
    tokens: Optional[float] = None
    price_per_gpu_hour: Optional[float] = None

    def to_dict(self) -> Dict[str, Any]:
        return _fields(self)


@dataclass
class Scenario:
    """A transformer scenario: give ``parallel`` to evaluate one plan, ``search`` to sweep.
    ``model`` is a zoo name or the dimensions (``transformer``: the older name)."""
    model: Optional[Union[str, Dict[str, Any], Model]] = None
    cluster: Optional[Cluster] = None
    training: Optional[Training] = None
    parallel: Optional[Parallel] = None
    search: Optional[Union[Search, bool]] = None
    profile: Optional[str] = None
    cost: Optional[Cost] = None
    transformer: Optional[Union[str, Dict[str, Any]]] = None

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for key in ("model", "transformer"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value.to_dict() if hasattr(value, "to_dict") else value
        for key in ("cluster", "training", "parallel", "search", "profile", "cost"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value.to_dict() if hasattr(value, "to_dict") else value
        return out
